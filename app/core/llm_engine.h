#pragma once
// The real engine behind InferenceEngine: a backend (CUDA when a device is usable, else the
// CPU), the loaded Model, one Session (re-created when the settings that shape it change:
// applied at the next turn), and the summarizer. Lives on the engine thread.

#include <memory>

#include "app/core/inference_engine.h"
#include "engine/backend/backend.h"
#include "engine/chat/chat_template.h"

namespace lr::app {

class LlmEngine final : public InferenceEngine {
public:
    LlmEngine() = default;
    ~LlmEngine() override;

    Result<ModelInfo> loadModel(const LoadModelRequest & request, std::stop_token stop) override;
    bool hasModel() const override { return m_model != nullptr; }
    Result<ContextMeasure> measure(const ConversationContext & context, const EngineSettings & settings) override;
    Status prefill(const ConversationContext & context, const EngineSettings & settings, const ProgressFn & progress,
                   std::stop_token stop) override;
    Result<GenerateResult> reply(const ConversationContext & context, const QString & userText, const EngineSettings & settings,
                                 const ProgressFn & progress, const TokenSink & sink, std::stop_token stop) override;
    Result<SummaryResult> summarize(const SummarizeRequest & request, const SummaryProgressFn & progress,
                                    const TokenSink & sink, std::stop_token stop) override;
    CacheSnapshot snapshot() const override;
    RetentionSnapshot retention(const ConversationContext & context) const override;

private:
    Status ensureSession(const EngineSettings & settings);
    std::vector<chat::ChatMessage> messagesFor(const ConversationContext & context) const;
    // Tokens kept free after the context for the next question and its answer.
    static uint32_t reserveFor(uint32_t contextLimit);

    std::unique_ptr<Backend> m_backend;
    std::shared_ptr<const Model> m_model;
    std::unique_ptr<Session> m_session;
    EngineSettings m_sessionSettings;
};

}  // namespace lr::app
