#pragma once
// Finds GGUF models where people keep them: LM Studio, GPT4All, Ollama's blob store (named
// through its manifests), the Hugging Face cache, ~/models, and folders the user adds.
// Reads only each file's header (GgufFile maps the file; the weights are not touched).
// Files the engine cannot run are listed with the reason. Scanning runs off the GUI thread.

#include <QString>
#include <QStringList>

#include <stop_token>
#include <vector>

#include "engine/api/memory_plan.h"

namespace lr::app {

struct ModelEntry {
    QString path;    // a file, or kBundledModelPath
    QString source;  // "Bundled", "LM Studio", "Ollama", ...
    QString name;    // general.name, the Ollama name, or the file name
    QString architecture;
    QString quantization;
    quint64 fileBytes = 0;
    uint32_t nCtxTrain = 0;
    ModelMemoryShape shape;
    bool supported = false;
    QString problem;  // why not, when !supported
};

struct ModelLocation {
    QString source;       // shown in the picker
    QString path;         // a folder
    int maxDepth = 4;     // folders below it to look into
    bool ollama = false;  // an Ollama models folder (manifests/ + blobs/)
};

class ModelCatalog {
public:
    // The usual places under `home` (and $HF_HOME / $HUGGINGFACE_HUB_CACHE, $OLLAMA_MODELS),
    // then `extraFolders`. Only folders that exist are returned.
    static std::vector<ModelLocation> standardLocations(const QString & home, const QStringList & extraFolders);

    // Every model file in `locations` (each file once, even when linked from several places).
    static std::vector<ModelEntry> scan(const std::vector<ModelLocation> & locations, std::stop_token stop = {});

    // One file's entry, from its header.
    static ModelEntry inspect(const QString & path, const QString & source);
    static ModelEntry bundled();
};

}  // namespace lr::app
