#pragma once
// The real engine behind InferenceEngine: the engine facade (engine/runtime/engine.h) seen
// through the app's values. It loads on a CUDA device when one is usable, else the CPU,
// keeps one session (rebuilt at the next turn when the settings that shape it change),
// and converts between the app's Qt values and the engine's. Lives on the engine thread.

#include <memory>

#include "app/core/inference_engine.h"

namespace lr {
class Engine;
}

namespace lr::app {

class LlmEngine final : public InferenceEngine {
public:
    LlmEngine();
    ~LlmEngine() override;

    Result<ModelInfo> loadModel(const LoadModelRequest & request, std::stop_token stop) override;
    bool hasModel() const override;
    std::shared_ptr<const Model> loadedModel() const override;
    Result<ContextMeasure> measure(const ConversationContext & context, const EngineSettings & settings) override;
    Status prefill(const ConversationContext & context, const EngineSettings & settings, const ProgressFn & progress,
                   std::stop_token stop) override;
    Result<GenerateResult> reply(const ConversationContext & context, const QString & userText, const EngineSettings & settings,
                                 const ProgressFn & progress, const TokenSink & sink, const ThinkingSink & thinkingSink,
                                 std::stop_token stop) override;
    Result<SummaryResult> summarize(const SummarizeRequest & request, const SummaryProgressFn & progress, const TokenSink & sink,
                                    std::stop_token stop) override;
    CacheSnapshot snapshot() const override;
    Status checkHealth() override;
    RetentionSnapshot retention(const ConversationContext & context) const override;

private:
    // The session for `settings` (validated first, with the app's messages).
    Status useSession(const EngineSettings & settings);

    std::unique_ptr<Engine> m_engine;
    EngineSettings m_settings;  // of the last request: what the cache panel describes
};

}  // namespace lr::app
