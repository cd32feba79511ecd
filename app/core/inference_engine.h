#pragma once
// The engine as the engine thread drives it: load a model, read a conversation into the
// KV cache, reply, summarize. EngineWorker calls it on the engine thread only; LlmEngine
// runs the real engine, tests substitute a fake to drive the thread round trips.
//
// Every long call takes a stop token, checked once per prefill chunk or generated token;
// a stopped call returns normally with StopReason::cancelled (or Status cancelled for
// prefill), never an error.

#include <functional>
#include <memory>
#include <stop_token>
#include <string_view>

#include "app/core/cache_snapshot.h"
#include "app/core/engine_requests.h"
#include "app/core/engine_results.h"
#include "app/core/retention_snapshot.h"
#include "engine/api/generation.h"
#include "engine/api/summary.h"
#include "engine/common/status.h"

namespace lr {
class Model;
}

namespace lr::app {

// Receives pieces of a reply's thinking as they stream (as the engine's ReplyParams::thinking_sink).
using ThinkingSink = std::function<void(std::string_view thinking)>;

class InferenceEngine {
public:
    virtual ~InferenceEngine() = default;

    // Replaces the loaded model (and drops the session). The message names the file and
    // what is wrong.
    virtual Result<ModelInfo> loadModel(const LoadModelRequest & request, std::stop_token stop) = 0;
    virtual bool hasModel() const = 0;
    // The loaded weights, shared read-only with the app's server (which runs them on its own
    // thread, taking turns on the backend); null without a model, and in fakes.
    virtual std::shared_ptr<const Model> loadedModel() const { return nullptr; }

    // The size of `context` against the settings' context. Creates the session if needed.
    virtual Result<ContextMeasure> measure(const ConversationContext & context, const EngineSettings & settings) = 0;

    // Makes the session hold `context` (reusing the KV of the common prefix).
    virtual Status prefill(const ConversationContext & context, const EngineSettings & settings, const ProgressFn & progress,
                           std::stop_token stop) = 0;

    // Adds the user's message to `context`, evaluates it and generates the reply: `sink` gets
    // every token with the answer's text it adds ("" while the model thinks), `thinkingSink`
    // the thinking's text; the result carries both apart.
    virtual Result<GenerateResult> reply(const ConversationContext & context, const QString & userText, const EngineSettings & settings,
                                         const ProgressFn & progress, const TokenSink & sink, const ThinkingSink & thinkingSink,
                                         std::stop_token stop) = 0;

    virtual Result<SummaryResult> summarize(const SummarizeRequest & request, const SummaryProgressFn & progress, const TokenSink & sink,
                                            std::stop_token stop) = 0;

    // The cache's state now (hasSession false before a session exists).
    virtual CacheSnapshot snapshot() const = 0;

    // What the cache holds of the context's document.
    virtual RetentionSnapshot retention(const ConversationContext & context) const = 0;

    // Runs the KV cache's health checks and repairs when they are due (every few seconds;
    // Engine::check_health), between ubatches; the findings appear in snapshot(). An engine
    // without a cache (a fake) has nothing to check.
    virtual Status checkHealth() { return {}; }
};

}  // namespace lr::app
