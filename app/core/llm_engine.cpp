#include "llm_engine.h"

#include <QFileInfo>

#include <algorithm>

#include <chrono>

#include "app/core/model_file_info.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/layer_weight_bytes.h"
#include "engine/runtime/chat_session.h"
#include "resources/bundled_model.h"

namespace lr::app {
namespace {

std::string utf8(const QString & s) { return s.toStdString(); }

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

LlmEngine::~LlmEngine() {
    // The session and model refer to the backend: release them first.
    m_session.reset();
    m_model.reset();
}

Result<ModelInfo> LlmEngine::loadModel(const LoadModelRequest & request, std::stop_token stop) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    m_session.reset();
    m_model.reset();
    m_backend.reset();
    if (stop.stop_requested()) return error(StatusCode::cancelled, "stopped");
    const bool bundled = request.path == QLatin1String(kBundledModelPath);
    // A CUDA device when one is usable (as much of the model in VRAM as leaves room for the
    // KV cache), else the CPU. A file that does not open is reported by Model::load below.
    Result<gguf::GgufFile> file = bundled ? gguf::GgufFile::parse(bundled_model_bytes(), kBundledModelName)
                                          : gguf::GgufFile::open(utf8(request.path));
    const LayerWeightBytes weightBytes = file.ok() ? layer_weight_bytes(*file) : LayerWeightBytes{};
    BackendSelection selection = create_backend({.choice = BackendChoice::automatic,
                                                 .n_threads = request.threads,
                                                 .weights = file.ok() ? &weightBytes : nullptr});
    m_backend = std::move(selection.backend);
    Result<std::shared_ptr<const Model>> model = bundled ? Model::load_from_memory(bundled_model_bytes(), kBundledModelName, *m_backend)
                                                         : Model::load(utf8(request.path), *m_backend);
    if (!model.ok()) return model.status();
    m_model = *model;

    const ModelHParams & hp = m_model->hparams();
    ModelInfo info;
    info.path = request.path;
    info.name = QString::fromStdString(hp.name);
    if (info.name.isEmpty()) info.name = QFileInfo(request.path).completeBaseName();
    info.architecture = QString::fromStdString(hp.arch_name);
    info.quantization = quantizationName(m_model->file());
    const std::string_view family = chat::chat_family_name(m_model->chat_template().family());
    info.chatTemplate = QString::fromLatin1(family.data(), qsizetype(family.size())) +
                        (m_model->chat_template().is_builtin() ? QStringLiteral(" (built in)") : QStringLiteral(" (the model's own)"));
    if (m_backend->kind() == BackendKind::cuda) {
        info.backend = QStringLiteral("CUDA ") + QString::fromStdString(m_backend->name());
    } else {
        const int threads = static_cast<const CpuBackend &>(*m_backend).n_threads();
        info.backend = threads == 1 ? QStringLiteral("CPU, 1 thread") : QStringLiteral("CPU, %1 threads").arg(threads);
    }
    info.backendNote = QString::fromStdString(selection.note);
    info.fileBytes = m_model->file().file_size();
    info.nCtxTrain = hp.n_ctx_train;
    info.nLayer = hp.n_layer;
    info.nVocab = hp.n_vocab;
    info.shape = memory_shape(*m_model);  // what Session::create plans with
    info.loadMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return info;
}

Status LlmEngine::ensureSession(const EngineSettings & settings) {
    if (!m_model) return error(StatusCode::not_found, "no model is loaded: open a model first");
    if (m_session && settings.sameSession(m_sessionSettings)) {
        m_sessionSettings = settings;
        return {};
    }
    if (const QString message = validationError(settings); !message.isEmpty()) {
        return error(StatusCode::invalid_argument, utf8(message));
    }
    m_session.reset();
    LR_ASSIGN_OR_RETURN(m_session, Session::create(m_model, makeSessionConfig(settings)));
    m_sessionSettings = settings;
    return {};
}

std::vector<chat::ChatMessage> LlmEngine::messagesFor(const ConversationContext & context) const {
    std::vector<chat::ChatMessage> messages;
    if (context.hasDocument()) messages.push_back({"system", document_context(utf8(context.documentTitle), utf8(context.documentText))});
    for (const ChatTurn & t : context.turns) messages.push_back({utf8(t.role), utf8(t.text)});
    return messages;
}

uint32_t LlmEngine::reserveFor(uint32_t contextLimit) { return std::min<uint32_t>(512, contextLimit / 4); }

Result<ContextMeasure> LlmEngine::measure(const ConversationContext & context, const EngineSettings & settings) {
    LR_RETURN_IF_ERROR(ensureSession(settings));
    ContextMeasure m;
    m.documentTokens = uint32_t(m_model->tokenizer().encode(utf8(context.documentText), false, false).size());
    m.promptTokens = uint32_t(render_chat_tokens(*m_model, messagesFor(context), false).size());
    m.contextLimit = m_session->n_ctx();
    m.reserveTokens = reserveFor(m.contextLimit);
    m.fits = uint64_t(m.promptTokens) + m.reserveTokens <= m.contextLimit;
    return m;
}

Status LlmEngine::prefill(const ConversationContext & context, const EngineSettings & settings, const ProgressFn & progress,
                          std::stop_token stop) {
    LR_RETURN_IF_ERROR(ensureSession(settings));
    const std::vector<int32_t> tokens = render_chat_tokens(*m_model, messagesFor(context), false);
    if (tokens.size() >= m_session->n_ctx()) {
        return error(StatusCode::context_full, "the conversation takes " + std::to_string(tokens.size()) +
                     " tokens and the context holds " + std::to_string(m_session->n_ctx()));
    }
    return m_session->sync(tokens, progress, stop);
}

Result<GenerateResult> LlmEngine::reply(const ConversationContext & context, const QString & userText,
                                        const EngineSettings & settings, const ProgressFn & progress, const TokenSink & sink,
                                        std::stop_token stop) {
    LR_RETURN_IF_ERROR(ensureSession(settings));
    std::vector<chat::ChatMessage> messages = messagesFor(context);
    messages.push_back({"user", utf8(userText)});
    const std::vector<int32_t> prompt = render_chat_tokens(*m_model, messages, true);
    if (prompt.size() >= m_session->n_ctx()) {
        return error(StatusCode::context_full, "the conversation needs " + std::to_string(prompt.size()) +
                     " tokens but the context holds " + std::to_string(m_session->n_ctx()) +
                     ": start a new conversation, raise the context in the cache settings, or summarize the document");
    }
    Status s = m_session->sync(prompt, progress, stop);
    if (s.code() == StatusCode::cancelled) return GenerateResult{.reason = StopReason::cancelled};
    LR_RETURN_IF_ERROR(s);
    const GenerateParams params{.max_tokens = settings.maxReplyTokens, .sampler = settings.sampler};
    return generate(*m_session, params, sink, stop);
}

Result<SummaryResult> LlmEngine::summarize(const SummarizeRequest & request, const SummaryProgressFn & progress,
                                           const TokenSink & sink, std::stop_token stop) {
    LR_RETURN_IF_ERROR(ensureSession(request.settings));
    SummarizeParams params;
    params.title = utf8(request.title);
    if (!request.instruction.isEmpty()) params.instruction = utf8(request.instruction);
    params.answer_tokens = request.settings.summaryTokens;
    params.sampler.seed = request.settings.sampler.seed;
    return lr::summarize(*m_session, utf8(request.text), params, progress, sink, stop);
}

CacheSnapshot LlmEngine::snapshot() const {
    CacheSnapshot s;
    if (!m_session) return s;
    s.hasSession = true;
    s.kv = m_session->kv_cache().stats();
    s.contextUsed = uint32_t(m_session->tokens().size());
    s.contextLimit = m_session->n_ctx();
    s.policy = policyDescription(m_sessionSettings.kv);
    s.codecs = codecsDescription(m_sessionSettings.kv);
    return s;
}

RetentionSnapshot LlmEngine::retention(const ConversationContext & context) const {
    RetentionSnapshot r;
    r.documentText = context.documentText;
    if (!m_model || !context.hasDocument()) return r;
    r.policy = policyDescription(m_sessionSettings.kv);

    // The document is in the context when the session holds its rendered system message.
    const std::vector<int32_t> docPrompt =
        render_chat_tokens(*m_model, std::vector<chat::ChatMessage>{{"system", document_context(utf8(context.documentTitle),
                                                                                                utf8(context.documentText))}},
                           false);
    if (m_session) {
        const std::vector<int32_t> & held = m_session->tokens();
        size_t common = 0;
        while (common < held.size() && common < docPrompt.size() && held[common] == docPrompt[common]) ++common;
        // The last few tokens of the system message may tokenize differently once a turn follows.
        r.inContext = common + 8 >= docPrompt.size() && common > 0;
    }

    // Each document token's span in the text, from the pieces' bytes.
    const std::string text = utf8(context.documentText);
    const std::vector<int> u16 = utf16Offsets(text);
    const Tokenizer & tok = m_model->tokenizer();
    const std::vector<int32_t> ids = tok.encode(text, false, false);
    r.tokenSpans.reserve(ids.size());
    size_t at = 0;
    for (int32_t id : ids) {
        std::string piece = tok.token_to_piece(id, false);
        // SentencePiece's space prefix is not in the text.
        if (!piece.empty() && piece[0] == ' ' && (at >= text.size() || text[at] != ' ')) piece.erase(0, 1);
        const size_t end = std::min(text.size(), at + piece.size());
        r.tokenSpans.emplace_back(u16[at], u16[end]);
        at = end;
    }
    // The cache's per-position retention, at the positions where the session holds the
    // document's tokens (found by matching a run of them; streaming's renumbering, which
    // detaches positions from tokens, falls back to whole-document).
    r.kept.assign(ids.size(), r.inContext ? 1.0f : 0.0f);
    if (!r.inContext || !m_session || ids.size() < 2) return r;
    const std::vector<float> kept = m_session->retention();
    const std::vector<int32_t> & held = m_session->tokens();
    if (kept.size() != held.size()) return r;
    const size_t run = std::min<size_t>(16, ids.size() - 1);
    const auto found = std::search(held.begin(), held.end(), ids.begin() + 1, ids.begin() + 1 + std::ptrdiff_t(run));
    if (found == held.end()) return r;
    const size_t first = size_t(found - held.begin()) - 1;  // the first token may merge with what precedes it
    for (size_t i = 0; i < ids.size(); ++i) r.kept[i] = first + i < kept.size() ? kept[first + i] : 0.0f;
    r.perPosition = true;
    return r;
}

}  // namespace lr::app
