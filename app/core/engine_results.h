#pragma once
// What the engine thread sends back: plain values, in queued signals.

#include <QMetaType>
#include <QString>

#include <memory>
#include <optional>

#include "app/core/retention_snapshot.h"
#include "engine/api/generation.h"
#include "engine/api/memory_plan.h"
#include "engine/api/summary.h"

namespace lr {
class Model;
}

namespace lr::app {

struct ModelInfo {
    QString path;                  // as requested (kBundledModelPath for the bundled model)
    QString name;                  // general.name, or the file name
    QString architecture;          // "llama", "qwen2"
    QString quantization;          // "Q4_K_M", "F16", ...
    QString chatTemplate;          // the template family, and whether it is the model's own
    bool thinkingSwitch = false;   // its template turns thinking on and off (EngineSettings::thinking)
    bool reasoningEffort = false;  // its template takes a reasoning effort
    QString backend;               // "CPU, 2 threads" or "CUDA cuda:0 (NVIDIA ..., compute 8.9)"
    QString backendNote;           // why a CUDA device was not used, or empty
    quint64 fileBytes = 0;
    uint32_t nCtxTrain = 0;
    uint32_t nLayer = 0;
    uint32_t nVocab = 0;
    ModelMemoryShape shape;
    double loadMs = 0;
};

// How much of the context a conversation takes.
struct ContextMeasure {
    uint32_t documentTokens = 0;  // the document alone
    uint32_t promptTokens = 0;    // the whole rendered context (template, document, turns)
    uint32_t contextLimit = 0;    // the session's context
    uint32_t reserveTokens = 0;   // kept free for questions and answers
    bool fits = true;             // promptTokens + reserveTokens <= contextLimit
};

struct PrefillStatus {
    uint32_t done = 0;  // tokens of this call evaluated or restored
    uint32_t total = 0;
    uint32_t restored = 0;  // of done, restored from the prefix cache
    double elapsedMs = 0;
    double etaMs = -1;  // -1: not known yet
    double tokensPerSecond = 0;
};

struct SummaryStatus {
    SummaryProgress progress;
    double elapsedMs = 0;
    double etaMs = -1;
};

// Where a job is: the prompt it reads, and for a summary its passes.
struct JobProgress {
    PrefillStatus prefill;                 // loads: none; prefill and chat: the prompt
    std::optional<SummaryStatus> summary;  // summaries: the passes (and each pass's prompt)
};

enum class JobKind { loadModel, prefill, chat, summarize };

struct JobResult {
    JobKind kind = JobKind::chat;
    StopReason reason = StopReason::end_of_generation;  // prefill and load: end_of_generation or cancelled
    QString text;                                       // the reply (its answer) or the summary
    QString thinking;                                   // chat: the reply's thinking, apart from its answer
    uint32_t generatedTokens = 0;
    uint32_t promptTokens = 0;  // evaluated for this job (not restored)
    uint32_t restoredTokens = 0;
    double prefillMs = 0;
    double decodeMs = 0;
    QString method;                              // summaries: SummaryResult::describe()
    ContextMeasure measure;                      // prefill: the conversation's size
    ModelInfo model;                             // loadModel
    std::shared_ptr<const Model> weights;        // loadModel: the loaded weights, for the app's server
    std::optional<RetentionSnapshot> retention;  // prefill, and chat with a document: what the cache keeps of it
};

enum class JobErrorKind {
    noModel,          // no model is loaded
    contextFull,      // the conversation or document does not fit: the message lists the options
    invalidSettings,  // the settings were refused (message names the setting)
    model,            // the model file could not be loaded
    engine,           // any other engine error
};

struct JobError {
    JobKind kind = JobKind::chat;
    JobErrorKind errorKind = JobErrorKind::engine;
    QString message;
    ContextMeasure measure;                      // contextFull: the sizes
    std::optional<RetentionSnapshot> retention;  // a document that does not fit: nothing of it kept
};

// "end", "max_tokens", "context_full", "stopped", "sink": written to the database, never rename.
QString stopReasonKey(StopReason reason);
StopReason stopReasonFromKey(const QString & key);

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::ModelInfo)
Q_DECLARE_METATYPE(lr::app::ContextMeasure)
Q_DECLARE_METATYPE(lr::app::PrefillStatus)
Q_DECLARE_METATYPE(lr::app::SummaryStatus)
Q_DECLARE_METATYPE(lr::app::JobProgress)
Q_DECLARE_METATYPE(lr::app::JobResult)
Q_DECLARE_METATYPE(lr::app::JobError)
