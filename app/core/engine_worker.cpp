#include "engine_worker.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace lr::app {
namespace {

QString text(const Status & s) { return QString::fromStdString(s.message()); }
QString text(std::string_view piece) { return QString::fromUtf8(piece.data(), qsizetype(piece.size())); }

JobKind kindOf(const EngineRequest & request) {
    switch (request.request.index()) {
        case 0: return JobKind::loadModel;
        case 1: return JobKind::prefill;
        case 2: return JobKind::chat;
        default: return JobKind::summarize;
    }
}

}  // namespace

EngineWorker::EngineWorker(EngineFactory factory) : m_factory(std::move(factory)) {}

EngineWorker::~EngineWorker() = default;

// The engine's thread, and the CPU workers it starts (threads inherit the policy), run as
// SCHED_BATCH: a waking GUI thread or display server gets a core at once instead of
// waiting for a slice of a busy one, and when nothing else wants the cores they are the
// engine's as before.
void EngineWorker::yieldCoresToInteractiveThreads() {
#if defined(__linux__)
    const sched_param param{};
    sched_setscheduler(0, SCHED_BATCH, &param);  // best effort: on failure the default policy stays
#endif
}

void EngineWorker::start() {
    yieldCoresToInteractiveThreads();
    try {
        if (!m_engine) m_engine = m_factory();
    } catch (...) {
        // The next request makes it again, inside run()'s barrier, and says what failed.
    }
    // Between jobs the cache is still checked (a disk may fill while the app idles).
    m_healthTimer = new QTimer(this);
    m_healthTimer->setInterval(kHealthPollMs);
    connect(m_healthTimer, &QTimer::timeout, this, [this] {
        try {
            if (m_engine && m_engine->hasModel()) maybeSnapshot(true);
        } catch (...) {
            // The next job's barrier reports what keeps failing.
        }
    });
    m_healthTimer->start();
}

void EngineWorker::run(const EngineRequest & request) {
    const JobKind kind = kindOf(request);
    // The barrier: nothing the engine throws crosses the thread.
    const auto failWith = [&](const QString & message) {
        send(request.id, JobError{.kind = kind, .errorKind = JobErrorKind::engine, .message = message});
    };
    try {
        dispatch(request, kind);
    } catch (const std::bad_alloc & e) {
        failWith(QStringLiteral("The engine ran out of memory: %1. Lower the context or the prefill chunk, or close other programs.")
                     .arg(QString::fromLocal8Bit(e.what())));
    } catch (const std::exception & e) {
        failWith(QStringLiteral("The engine failed: %1.").arg(QString::fromLocal8Bit(e.what())));
    } catch (...) {
        failWith(QStringLiteral("The engine failed with an unknown error."));
    }
}

void EngineWorker::dispatch(const EngineRequest & request, JobKind kind) {
    if (!m_engine) m_engine = m_factory();
    send(request.id, JobStarted{});
    if (kind != JobKind::loadModel && !m_engine->hasModel()) {
        send(request.id, JobError{.kind = kind,
                                  .errorKind = JobErrorKind::noModel,
                                  .message = QStringLiteral("No model is loaded: open a model, or use the bundled one.")});
        return;
    }
    std::visit(
        [&](const auto & r) {
            using T = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<T, LoadModelRequest>) runLoad(request.id, r, request.stop);
            if constexpr (std::is_same_v<T, PrefillRequest>) runPrefill(request.id, r, request.stop);
            if constexpr (std::is_same_v<T, ChatRequest>) runChat(request.id, r, request.stop);
            if constexpr (std::is_same_v<T, SummarizeRequest>) runSummarize(request.id, r, request.stop);
        },
        request.request);
    maybeSnapshot(true);
}

void EngineWorker::fail(quint64 id, JobKind kind, const Status & status, const ContextMeasure & measure) {
    JobError e{.kind = kind, .message = text(status), .measure = measure};
    switch (status.code()) {
        case StatusCode::context_full: e.errorKind = JobErrorKind::contextFull; break;
        case StatusCode::invalid_argument: e.errorKind = JobErrorKind::invalidSettings; break;
        default: e.errorKind = kind == JobKind::loadModel ? JobErrorKind::model : JobErrorKind::engine; break;
    }
    send(id, std::move(e));
}

ProgressFn EngineWorker::prefillReporter(quint64 id, JobResult & result, Clock::time_point started) {
    return [this, id, &result, started](const PrefillProgress & p) {
        const double elapsedMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        const uint32_t computed = p.n_done - p.n_restored;
        PrefillStatus s{.done = p.n_done, .total = p.n_total, .restored = p.n_restored, .elapsedMs = elapsedMs};
        if (computed > 0 && elapsedMs > 0) {
            s.tokensPerSecond = computed * 1000.0 / elapsedMs;
            s.etaMs = (p.n_total - p.n_done) / s.tokensPerSecond * 1000.0;
            m_prefillRate = s.tokensPerSecond;
        }
        result.promptTokens = computed;
        result.restoredTokens = p.n_restored;
        result.prefillMs = elapsedMs;
        send(id, JobProgress{.prefill = s});
        maybeSnapshot();
    };
}

void EngineWorker::maybeSnapshot(bool force) {
    m_sessionIntact = m_engine->checkHealth().ok();
    const Clock::time_point now = Clock::now();
    if (!force && now - m_lastSnapshot < std::chrono::milliseconds(kSnapshotIntervalMs)) return;
    m_lastSnapshot = now;
    CacheSnapshot s = m_engine->snapshot();
    s.prefillTokensPerSecond = m_prefillRate;
    s.decodeTokensPerSecond = m_decodeRate;
    s.timestampMs = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    emit cacheSnapshot(s);
}

RetentionSnapshot EngineWorker::retentionOf(qint64 conversationId, const ConversationContext & context) const {
    RetentionSnapshot r = m_engine->retention(context);
    r.conversationId = conversationId;
    return r;
}

void EngineWorker::runLoad(quint64 id, const LoadModelRequest & request, std::stop_token stop) {
    Result<ModelInfo> info = m_engine->loadModel(request, stop);
    if (!info.ok()) {
        if (info.status().code() == StatusCode::cancelled) {
            send(id, JobResult{.kind = JobKind::loadModel, .reason = StopReason::cancelled});
        } else {
            fail(id, JobKind::loadModel, info.status());
        }
        return;
    }
    send(id, JobResult{.kind = JobKind::loadModel, .model = *info, .weights = m_engine->loadedModel()});
}

void EngineWorker::runPrefill(quint64 id, const PrefillRequest & request, std::stop_token stop) {
    Result<ContextMeasure> measure = m_engine->measure(request.context, request.settings);
    if (!measure.ok()) {
        fail(id, JobKind::prefill, measure.status());
        return;
    }
    send(id, *measure);
    if (!measure->fits) {
        const ContextMeasure & m = *measure;
        const QString message = QStringLiteral(
                                    "The document takes %1 tokens and the context holds %2 (%3 kept free for questions and answers), "
                                    "so it is not in the chat's context. Summarize it (map-reduce reads all of it), raise the context "
                                    "in the cache settings, or enable a cache policy.")
                                    .arg(m.promptTokens)
                                    .arg(m.contextLimit)
                                    .arg(m.reserveTokens);
        send(id, JobError{.kind = JobKind::prefill,
                          .errorKind = JobErrorKind::contextFull,
                          .message = message,
                          .measure = m,
                          .retention = retentionOf(request.conversationId, request.context)});
        return;
    }
    JobResult result{.kind = JobKind::prefill, .measure = *measure};
    Status s = m_engine->prefill(request.context, request.settings, prefillReporter(id, result, Clock::now()), stop);
    if (s.code() == StatusCode::cancelled) {
        result.reason = StopReason::cancelled;
    } else if (!s.ok()) {
        fail(id, JobKind::prefill, s, *measure);
        return;
    }
    result.retention = retentionOf(request.conversationId, request.context);
    send(id, std::move(result));
}

void EngineWorker::runChat(quint64 id, const ChatRequest & request, std::stop_token stop) {
    JobResult result{.kind = JobKind::chat};
    const Clock::time_point started = Clock::now();
    // The sink sees every token (with no answer text while the model thinks): it snapshots.
    auto sink = [&](int32_t, std::string_view piece) {
        if (!piece.empty()) send(id, GeneratedText{.text = text(piece)});
        maybeSnapshot();
        return m_sessionIntact;
    };
    auto thinking = [&](std::string_view piece) {
        if (!piece.empty()) send(id, GeneratedText{.text = text(piece), .part = TextPart::thinking});
    };
    Result<GenerateResult> r = m_engine->reply(request.context, request.userText, request.settings, prefillReporter(id, result, started),
                                               sink, thinking, stop);
    if (!r.ok()) {
        fail(id, JobKind::chat, r.status());
        return;
    }
    result.reason = r->reason;
    result.text = QString::fromStdString(r->text);
    result.thinking = QString::fromStdString(r->thinking);
    result.generatedTokens = uint32_t(r->tokens.size());
    result.decodeMs = r->decode_ms;
    if (result.generatedTokens > 0 && r->decode_ms > 0) m_decodeRate = result.generatedTokens * 1000.0 / r->decode_ms;
    if (request.context.hasDocument()) result.retention = retentionOf(request.conversationId, request.context);
    send(id, std::move(result));
}

void EngineWorker::runSummarize(quint64 id, const SummarizeRequest & request, std::stop_token stop) {
    JobResult result{.kind = JobKind::summarize};
    const Clock::time_point started = Clock::now();
    Clock::time_point lastReport{};
    uint32_t lastPasses = UINT32_MAX;
    auto progress = [&](const SummaryProgress & p) {
        const Clock::time_point now = Clock::now();
        // Every pass boundary, and a few times a second within a pass.
        if (p.passes_done == lastPasses && now - lastReport < std::chrono::milliseconds(100)) return;
        lastPasses = p.passes_done;
        lastReport = now;
        SummaryStatus s{.progress = p, .elapsedMs = std::chrono::duration<double, std::milli>(now - started).count()};
        if (p.passes_done > 0 && p.passes_total > p.passes_done) {
            s.etaMs = s.elapsedMs / p.passes_done * (p.passes_total - p.passes_done);
        }
        send(id, JobProgress{.summary = s});
        maybeSnapshot();
    };
    auto sink = [&](int32_t, std::string_view piece) {
        ++result.generatedTokens;
        if (!piece.empty()) send(id, GeneratedText{.text = text(piece)});
        return true;
    };
    Result<SummaryResult> r = m_engine->summarize(request, progress, sink, stop);
    if (!r.ok()) {
        fail(id, JobKind::summarize, r.status());
        return;
    }
    result.reason = r->reason;
    result.text = QString::fromStdString(r->text);
    result.method = QString::fromStdString(r->describe());
    result.decodeMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    send(id, std::move(result));
}

}  // namespace lr::app
