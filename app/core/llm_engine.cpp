#include "llm_engine.h"

#include <QFileInfo>

#include "engine/runtime/engine.h"

namespace lr::app {
namespace {

static_assert(std::string_view(kBundledModelPath) == kBundledModelName, "the app names the bundled model as the engine does");

std::string utf8(const QString & s) { return s.toStdString(); }

Conversation conversationOf(const ConversationContext & context, const EngineSettings & settings) {
    Conversation c{.document_title = utf8(context.documentTitle),
                   .document_text = utf8(context.documentText),
                   .thinking = settings.thinking};
    c.turns.reserve(context.turns.size());
    for (const ChatTurn & t : context.turns) c.turns.push_back({utf8(t.role), utf8(t.text), utf8(t.thinking)});
    return c;
}

// Byte offset -> UTF-16 index for every byte boundary of `text`.
std::vector<int> utf16Offsets(const std::string & text) {
    std::vector<int> out(text.size() + 1);
    int u16 = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        out[i] = u16;
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if ((c & 0xC0) != 0x80) u16 += c >= 0xF0 ? 2 : 1;  // a lead byte starts a character
    }
    out[text.size()] = u16;
    return out;
}

}  // namespace

LlmEngine::LlmEngine() : m_engine(std::make_unique<Engine>()) {
    // The attention view shows where the model looks: the cache records it (one copy per
    // ubatch; docs/BENCHMARKS.md measures what it costs).
    m_engine->observe_attention(true);
}
LlmEngine::~LlmEngine() = default;

Result<ModelInfo> LlmEngine::loadModel(const LoadModelRequest & request, std::stop_token stop) {
    LR_ASSIGN_OR_RETURN(const lr::ModelInfo loaded, m_engine->load({.path = utf8(request.path), .n_threads = request.threads}, stop));
    ModelInfo info;
    info.path = request.path;
    info.name = QString::fromStdString(loaded.name);
    if (info.name.isEmpty()) info.name = QFileInfo(request.path).completeBaseName();
    info.architecture = QString::fromStdString(loaded.architecture);
    info.quantization = QString::fromStdString(loaded.quantization);
    info.chatTemplate = QString::fromStdString(loaded.chat_template) +
                        (loaded.chat_template_builtin ? QStringLiteral(" (built in)") : QStringLiteral(" (the model's own)"));
    info.thinkingSwitch = loaded.thinking_switch;
    info.reasoningEffort = loaded.reasoning_effort;
    info.backend = QString::fromStdString(loaded.backend);
    info.backendNote = QString::fromStdString(loaded.backend_note);
    info.fileBytes = loaded.file_bytes;
    info.nCtxTrain = loaded.n_ctx_train;
    info.nLayer = loaded.n_layer;
    info.nVocab = loaded.n_vocab;
    info.shape = loaded.shape;
    info.loadMs = loaded.load_ms;
    return info;
}

bool LlmEngine::hasModel() const { return m_engine->has_model(); }
std::shared_ptr<const Model> LlmEngine::loadedModel() const { return m_engine->model(); }

Status LlmEngine::useSession(const EngineSettings & settings) {
    if (!m_engine->has_model()) return error(StatusCode::not_found, "no model is loaded: open a model first");
    if (const QString message = validationError(settings); !message.isEmpty()) return error(StatusCode::invalid_argument, utf8(message));
    LR_RETURN_IF_ERROR(m_engine->use_session(sessionOptions(settings)));
    m_settings = settings;
    return {};
}

Result<ContextMeasure> LlmEngine::measure(const ConversationContext & context, const EngineSettings & settings) {
    LR_RETURN_IF_ERROR(useSession(settings));
    LR_ASSIGN_OR_RETURN(const lr::ContextMeasure m, m_engine->measure(conversationOf(context, settings)));
    return ContextMeasure{.documentTokens = m.document_tokens,
                          .promptTokens = m.prompt_tokens,
                          .contextLimit = m.context_limit,
                          .reserveTokens = m.reserve_tokens,
                          .fits = m.fits};
}

Status LlmEngine::prefill(const ConversationContext & context, const EngineSettings & settings, const ProgressFn & progress,
                          std::stop_token stop) {
    LR_RETURN_IF_ERROR(useSession(settings));
    return m_engine->prefill(conversationOf(context, settings), progress, stop);
}

Result<GenerateResult> LlmEngine::reply(const ConversationContext & context, const QString & userText, const EngineSettings & settings,
                                        const ProgressFn & progress, const TokenSink & sink, const ThinkingSink & thinkingSink,
                                        std::stop_token stop) {
    LR_RETURN_IF_ERROR(useSession(settings));
    const ReplyParams params{.generate = {.max_tokens = settings.maxReplyTokens, .sampler = settings.sampler},
                             .when_full = "start a new conversation, raise the context in the cache settings, or summarize the document",
                             .thinking_sink = thinkingSink};
    return m_engine->reply(conversationOf(context, settings), utf8(userText), params, progress, sink, stop);
}

Result<SummaryResult> LlmEngine::summarize(const SummarizeRequest & request, const SummaryProgressFn & progress, const TokenSink & sink,
                                           std::stop_token stop) {
    LR_RETURN_IF_ERROR(useSession(request.settings));
    SummarizeParams params;
    params.title = utf8(request.title);
    if (!request.instruction.isEmpty()) params.instruction = utf8(request.instruction);
    params.answer_tokens = request.settings.summaryTokens;
    params.sampler.seed = request.settings.sampler.seed;
    return m_engine->summarize(utf8(request.text), params, progress, sink, stop);
}

CacheSnapshot LlmEngine::snapshot() const {
    const SessionSnapshot s = m_engine->snapshot();
    CacheSnapshot c;
    if (!s.has_session) return c;
    c.hasSession = true;
    c.kv = s.kv;
    c.contextUsed = s.context_used;
    c.contextLimit = s.context_limit;
    c.policy = policyDescription(m_settings.kv);
    c.codecs = codecsDescription(m_settings.kv);
    return c;
}

Status LlmEngine::checkHealth() { return m_engine->check_health(); }

RetentionSnapshot LlmEngine::retention(const ConversationContext & context) const {
    RetentionSnapshot r;
    r.documentText = context.documentText;
    if (!m_engine->has_model() || !context.hasDocument()) return r;
    r.policy = policyDescription(m_settings.kv);
    const Conversation conversation = conversationOf(context, m_settings);
    const DocumentRetention kept = m_engine->retention(conversation);
    r.inContext = kept.in_context;
    r.perPosition = kept.per_position;
    r.layerKind = kept.layer_kind;
    r.kept = kept.kept;
    const std::vector<int> u16 = utf16Offsets(conversation.document_text);
    r.tokenSpans.reserve(kept.spans.size());
    for (const TextSpan & s : kept.spans) r.tokenSpans.emplace_back(u16[s.begin], u16[s.end]);
    if (AttentionMass looked = m_engine->attention(conversation); looked.n_positions == r.tokenSpans.size() && !looked.empty()) {
        r.attention = std::make_shared<const AttentionMass>(std::move(looked));
    }
    return r;
}

}  // namespace lr::app
