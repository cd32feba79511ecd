#pragma once
// A scripted InferenceEngine for the thread round trips: it "prefills" in chunks and
// "generates" scripted tokens with small sleeps, checking the stop token between them as
// the real engine does, and fails on request. The script is set on the GUI thread before
// a job is submitted (the queued job's posting orders the writes before the reads).

#include <QString>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <memory>
#include <new>
#include <stdexcept>

#include "app/core/engine_host.h"
#include "app/core/inference_engine.h"

namespace lr::test {

struct FakeScript {
    int prefillChunks = 3;  // progress reports per prefill
    int chunkDelayMs = 2;
    QStringList tokens = {QStringLiteral("Hello"), QStringLiteral(", "), QStringLiteral("world"), QStringLiteral(".")};
    QStringList thinking;  // a reply's thinking, one token a piece, generated before the tokens
    int tokenDelayMs = 2;
    QString failReplyWith;  // non-empty: reply fails with this message (after the prefill)
    QString throwInReply;   // "bad_alloc", "runtime_error" or "int": reply throws that (after the prefill)
    QString failLoadWith;   // non-empty: loadModel fails for paths containing failLoadFor
    QString failLoadFor;    // empty: every path
    uint32_t contextLimit = 512;
    uint32_t trainedContext = 4096;
    uint32_t reserve = 64;
    uint32_t charsPerToken = 4;  // measure: tokens = characters / charsPerToken
    std::atomic<int> replies{0};
    std::atomic<int> prefills{0};
    std::atomic<int> summaries{0};
    std::atomic<int> chunksRun{0};  // prefill chunks evaluated, all calls together
    std::atomic<int> tokensRun{0};  // tokens generated, all calls together
    QString lastUserText;           // written on the engine thread, read after the job ends
    app::ConversationContext lastContext;
    uint64_t lastSeed = 0;  // the sampler seed of the last reply
};

class FakeEngine final : public app::InferenceEngine {
public:
    explicit FakeEngine(std::shared_ptr<FakeScript> script) : m_script(std::move(script)) {}

    Result<app::ModelInfo> loadModel(const app::LoadModelRequest & request, std::stop_token) override {
        if (!m_script->failLoadWith.isEmpty() && request.path.contains(m_script->failLoadFor)) {
            return error(StatusCode::not_found, m_script->failLoadWith.toStdString());
        }
        m_loaded = true;
        app::ModelInfo info;
        info.path = request.path;
        info.name = QStringLiteral("fake model");
        info.architecture = QStringLiteral("llama");
        info.quantization = QStringLiteral("F32");
        info.nCtxTrain = m_script->trainedContext;
        info.backend = QStringLiteral("CPU, 1 thread");
        info.shape = {.n_layer = 2, .n_head_kv = 2, .head_dim = 8, .n_ctx_train = m_script->trainedContext, .weight_bytes = 1 << 20};
        return info;
    }
    bool hasModel() const override { return m_loaded; }

    Result<app::ContextMeasure> measure(const app::ConversationContext & context, const app::EngineSettings &) override {
        // As LlmEngine: nothing to measure with before a model is loaded.
        if (!m_loaded) return error(StatusCode::not_found, "no model is loaded: open a model first");
        app::ContextMeasure m;
        m.documentTokens = uint32_t(context.documentText.size()) / m_script->charsPerToken;
        m.promptTokens = m.documentTokens + 8;
        for (const app::ChatTurn & t : context.turns) m.promptTokens += uint32_t(t.text.size()) / m_script->charsPerToken + 4;
        m.contextLimit = m_script->contextLimit;
        m.reserveTokens = m_script->reserve;
        m.fits = m.promptTokens + m.reserveTokens <= m.contextLimit;
        return m;
    }

    Status prefill(const app::ConversationContext & context, const app::EngineSettings &, const ProgressFn & progress,
                   std::stop_token stop) override {
        ++m_script->prefills;
        m_script->lastContext = context;
        return runPrefill(progress, stop);
    }

    Result<GenerateResult> reply(const app::ConversationContext & context, const QString & userText, const app::EngineSettings & settings,
                                 const ProgressFn & progress, const TokenSink & sink, const app::ThinkingSink & thinkingSink,
                                 std::stop_token stop) override {
        ++m_script->replies;
        m_script->lastUserText = userText;
        m_script->lastSeed = settings.sampler.seed;
        m_script->lastContext = context;
        if (Status s = runPrefill(progress, stop); s.code() == StatusCode::cancelled)
            return GenerateResult{.reason = StopReason::cancelled};
        if (!m_script->failReplyWith.isEmpty()) return error(StatusCode::internal, m_script->failReplyWith.toStdString());
        if (m_script->throwInReply == QLatin1String("bad_alloc")) throw std::bad_alloc();
        if (m_script->throwInReply == QLatin1String("runtime_error")) throw std::runtime_error("a tensor went missing");
        if (m_script->throwInReply == QLatin1String("int")) throw 42;
        return runTokens(m_script->thinking, sink, thinkingSink, stop);
    }

    Result<SummaryResult> summarize(const app::SummarizeRequest &, const SummaryProgressFn & progress, const TokenSink & sink,
                                    std::stop_token stop) override {
        ++m_script->summaries;
        SummaryProgress p{.method = SummaryMethod::map_reduce, .stage = SummaryStage::map, .count = 2, .passes_total = 3};
        for (uint32_t i = 0; i < 2; ++i) {
            p.index = i;
            p.passes_done = i;
            if (progress) progress(p);
            QThread::msleep(uint64_t(m_script->chunkDelayMs));
            if (stop.stop_requested()) return SummaryResult{.method = SummaryMethod::map_reduce, .reason = StopReason::cancelled};
        }
        p.stage = SummaryStage::final;
        p.passes_done = 2;
        if (progress) progress(p);
        Result<GenerateResult> g = runTokens({}, sink, {}, stop);
        SummaryResult r{.text = g->text,
                        .method = SummaryMethod::map_reduce,
                        .reason = g->reason,
                        .document_tokens = 1000,
                        .n_chunks = 2,
                        .n_levels = 1,
                        .n_passes = 3};
        return r;
    }

    app::CacheSnapshot snapshot() const override {
        app::CacheSnapshot s;
        s.hasSession = m_loaded;
        s.kv.tiers[0] = {.name = "device", .present = true, .used_bytes = 4096, .capacity_bytes = 1 << 20, .blocks = 2};
        s.kv.mirror_bytes = 3 << 10;
        s.kv.layer_kinds = {{.kind = KvLayerKind::full, .n_layers = 2, .bytes = 4096, .tokens_kept = 32}};
        s.kv.n_sequences = 1;
        s.kv.tiers[1] = {.name = "host"};
        s.kv.tiers[2] = {.name = "disk"};
        s.contextLimit = m_script->contextLimit;
        return s;
    }

    app::RetentionSnapshot retention(const app::ConversationContext & context) const override {
        app::RetentionSnapshot r;
        r.documentText = context.documentText;
        r.inContext = context.hasDocument();
        r.kept.assign(size_t(context.documentText.size() / 4), 1.0f);
        for (int i = 0; i + 4 <= int(context.documentText.size()); i += 4) r.tokenSpans.emplace_back(i, i + 4);
        return r;
    }

private:
    Status runPrefill(const ProgressFn & progress, std::stop_token stop) {
        const uint32_t total = uint32_t(m_script->prefillChunks) * 32;
        for (int i = 0; i < m_script->prefillChunks; ++i) {
            if (stop.stop_requested()) return error(StatusCode::cancelled, "stopped");
            QThread::msleep(uint64_t(m_script->chunkDelayMs));
            ++m_script->chunksRun;
            if (progress) progress({.n_done = uint32_t(i + 1) * 32, .n_total = total});
        }
        return {};
    }

    // As the real engine: a token of thinking goes to the thinking sink, and to the sink
    // with no answer text.
    Result<GenerateResult> runTokens(const QStringList & thinking, const TokenSink & sink, const app::ThinkingSink & thinkingSink,
                                     std::stop_token stop) {
        GenerateResult r{.reason = StopReason::end_of_generation};
        const QStringList pieces = thinking + m_script->tokens;
        for (qsizetype i = 0; i < pieces.size(); ++i) {
            if (stop.stop_requested()) {
                r.reason = StopReason::cancelled;
                break;
            }
            QThread::msleep(uint64_t(m_script->tokenDelayMs));
            ++m_script->tokensRun;
            const std::string piece = pieces[i].toStdString();
            const bool thought = i < thinking.size();
            r.tokens.push_back(int32_t(i));
            if (thought) {
                r.thinking += piece;
                if (thinkingSink) thinkingSink(piece);
            } else {
                r.text += piece;
            }
            if (sink) sink(r.tokens.back(), thought ? std::string_view() : std::string_view(piece));
        }
        r.decode_ms = double(r.tokens.size() * size_t(m_script->tokenDelayMs));
        return r;
    }

    std::shared_ptr<FakeScript> m_script;
    bool m_loaded = false;
};

inline app::EngineHost::EngineFactory fakeFactory(std::shared_ptr<FakeScript> script) {
    return [script] { return std::make_unique<FakeEngine>(script); };
}

}  // namespace lr::test
