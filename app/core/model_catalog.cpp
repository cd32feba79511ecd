#include "model_catalog.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcessEnvironment>

#include <set>

#include "app/core/engine_requests.h"
#include "app/core/engine_settings.h"
#include "engine/api/model_info.h"

namespace lr::app {
namespace {

bool hasGgufMagic(const QString & path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) && f.read(4) == "GGUF";
}

ModelEntry fromSummary(const ModelFileSummary & file, ModelEntry e) {
    e.fileBytes = file.file_bytes;
    e.quantization = QString::fromStdString(file.quantization);
    e.architecture = QString::fromStdString(file.architecture);
    if (e.name.isEmpty()) e.name = QString::fromStdString(file.name);
    e.nCtxTrain = file.n_ctx_train;
    e.shape = file.shape;
    e.supported = file.supported;
    e.problem = QString::fromStdString(file.problem);
    return e;
}

// Ollama: manifests/<registry>/<namespace>/<model>/<tag> name the blob of each model.
void scanOllama(const ModelLocation & loc, std::vector<ModelEntry> & out, std::set<QString> & seen, std::stop_token stop) {
    QDirIterator it(loc.path + QStringLiteral("/manifests"), QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext() && !stop.stop_requested()) {
        const QString manifest = it.next();
        QFile f(manifest);
        if (!f.open(QIODevice::ReadOnly) || f.size() > (1 << 20)) continue;
        const QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
        for (const QJsonValue & layer : json.value(QStringLiteral("layers")).toArray()) {
            const QJsonObject l = layer.toObject();
            if (l.value(QStringLiteral("mediaType")).toString() != QLatin1String("application/vnd.ollama.image.model")) continue;
            QString digest = l.value(QStringLiteral("digest")).toString();
            digest.replace(QLatin1Char(':'), QLatin1Char('-'));
            const QString blob = loc.path + QStringLiteral("/blobs/") + digest;
            const QString canonical = QFileInfo(blob).canonicalFilePath();
            if (canonical.isEmpty() || seen.count(canonical)) continue;
            seen.insert(canonical);
            // .../manifests/registry.ollama.ai/library/llama3.2/3b -> llama3.2:3b
            const QStringList parts = QDir(loc.path + QStringLiteral("/manifests")).relativeFilePath(manifest).split(QLatin1Char('/'));
            const QString name = parts.size() >= 2 ? parts[parts.size() - 2] + QLatin1Char(':') + parts.back() : parts.back();
            ModelEntry e = ModelCatalog::inspect(blob, loc.source);
            e.name = name;
            out.push_back(e);
        }
    }
}

}  // namespace

std::vector<ModelLocation> ModelCatalog::standardLocations(const QString & home, const QStringList & extraFolders) {
    const QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    std::vector<ModelLocation> all = {
        {QStringLiteral("LM Studio"), home + QStringLiteral("/.lmstudio/models"), 4},
        {QStringLiteral("LM Studio"), home + QStringLiteral("/.cache/lm-studio/models"), 4},
        {QStringLiteral("GPT4All"), home + QStringLiteral("/.local/share/nomic.ai/GPT4All"), 2},
        {QStringLiteral("Ollama"), env.value(QStringLiteral("OLLAMA_MODELS"), home + QStringLiteral("/.ollama/models")), 0, true},
        {QStringLiteral("Ollama"), QStringLiteral("/usr/share/ollama/.ollama/models"), 0, true},
        {QStringLiteral("Hugging Face cache"),
         env.value(QStringLiteral("HUGGINGFACE_HUB_CACHE"),
                   env.value(QStringLiteral("HF_HOME"), home + QStringLiteral("/.cache/huggingface")) + QStringLiteral("/hub")),
         4},
        {QStringLiteral("~/models"), home + QStringLiteral("/models"), 4},
    };
    for (const QString & folder : extraFolders) all.push_back({QStringLiteral("Added folder"), folder, 6});
    std::vector<ModelLocation> existing;
    std::set<QString> seen;
    for (const ModelLocation & loc : all) {
        const QString canonical = QFileInfo(loc.path).canonicalFilePath();
        if (canonical.isEmpty() || !QFileInfo(canonical).isDir() || seen.count(canonical)) continue;
        seen.insert(canonical);
        existing.push_back(loc);
    }
    return existing;
}

ModelEntry ModelCatalog::inspect(const QString & path, const QString & source) {
    ModelEntry e;
    e.path = path;
    e.source = source;
    e.fileBytes = quint64(QFileInfo(path).size());
    const Result<ModelFileSummary> file = inspect_model_file(path.toStdString());
    if (!file.ok()) {
        e.name = QFileInfo(path).fileName();
        QString message = QString::fromStdString(file.status().message());
        const QString prefix = path + QStringLiteral(": ");
        if (message.startsWith(prefix)) message = message.mid(prefix.size());
        e.problem = QStringLiteral("not a readable GGUF file: ") + message;
        return e;
    }
    e = fromSummary(*file, e);
    if (e.name.isEmpty()) e.name = QFileInfo(path).completeBaseName();
    return e;
}

ModelEntry ModelCatalog::bundled() {
    ModelEntry e;
    e.path = QString::fromLatin1(kBundledModelPath);
    e.source = QStringLiteral("Bundled");
    const Result<ModelFileSummary> file = inspect_bundled_model();
    if (!file.ok()) {
        e.problem = QString::fromStdString(file.status().message());
        return e;
    }
    e = fromSummary(*file, e);
    e.name = QStringLiteral("stories260K (bundled demo)");
    return e;
}

std::vector<ModelEntry> ModelCatalog::scan(const std::vector<ModelLocation> & locations, std::stop_token stop) {
    std::vector<ModelEntry> out;
    std::set<QString> seen;
    for (const ModelLocation & loc : locations) {
        if (stop.stop_requested()) break;
        if (loc.ollama) {
            scanOllama(loc, out, seen, stop);
            continue;
        }
        const int baseDepth = QDir::cleanPath(loc.path).count(QLatin1Char('/'));
        QDirIterator it(loc.path, QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot,
                        QDirIterator::Subdirectories | QDirIterator::FollowSymlinks);
        while (it.hasNext() && !stop.stop_requested()) {
            const QString path = it.next();
            const QFileInfo info = it.fileInfo();
            if (info.isDir() || QDir::cleanPath(path).count(QLatin1Char('/')) - baseDepth > loc.maxDepth) continue;
            if (!path.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) continue;
            const QString canonical = info.canonicalFilePath();
            if (canonical.isEmpty() || seen.count(canonical)) continue;
            seen.insert(canonical);
            // A partial download or a file that is not GGUF at all is still listed, with why.
            ModelEntry e = hasGgufMagic(path) ? inspect(path, loc.source) : ModelEntry{};
            if (e.path.isEmpty()) {
                e.path = path;
                e.source = loc.source;
                e.name = info.fileName();
                e.fileBytes = quint64(info.size());
                e.problem = QStringLiteral("not a GGUF file (no GGUF signature; an unfinished download?)");
            }
            // Hugging Face: models--org--name/snapshots/<rev>/file.gguf
            if (loc.source == QLatin1String("Hugging Face cache")) {
                const QString repo = QDir(loc.path).relativeFilePath(path).section(QLatin1Char('/'), 0, 0);
                if (repo.startsWith(QLatin1String("models--"))) {
                    e.source = QStringLiteral("Hugging Face: ") + repo.mid(8).replace(QStringLiteral("--"), QStringLiteral("/"));
                }
            }
            out.push_back(e);
        }
    }
    return out;
}

}  // namespace lr::app
