#pragma once
// The engine thread's side: runs one request at a time on an InferenceEngine and turns its
// callbacks into JobEvent values, sent in one queued signal. Created by EngineHost and moved
// to its thread; nothing on the GUI thread calls it directly.
//
// An exception barrier: whatever the engine throws (std::bad_alloc included) ends the job
// as failed with a plain message; it never crosses the thread or ends the program.

#include <QObject>
#include <QTimer>

#include <chrono>
#include <functional>
#include <memory>

#include "app/core/engine_requests.h"
#include "app/core/inference_engine.h"
#include "app/core/job_event.h"

namespace lr::app {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    using EngineFactory = std::function<std::unique_ptr<InferenceEngine>()>;
    explicit EngineWorker(EngineFactory factory);
    ~EngineWorker() override;

    // How often cacheSnapshot is sent while a job runs.
    static constexpr int kSnapshotIntervalMs = 250;
    // How often the idle engine asks for its cache's health checks: twice per interval of the
    // engine's own (KvHealthMonitor::kIntervalMs, which decides when they are due), so that an
    // idle engine checks every 5 to 7.5 s; jobs ask with every snapshot.
    static constexpr int kHealthPollMs = 2500;

public slots:
    // Creates the engine (on the engine thread).
    void start();
    void run(const lr::app::EngineRequest & request);

signals:
    void jobEvent(const lr::app::JobEvent & event);
    void cacheSnapshot(const lr::app::CacheSnapshot & snapshot);

private:
    using Clock = std::chrono::steady_clock;

    static void yieldCoresToInteractiveThreads();

    void dispatch(const EngineRequest & request, JobKind kind);
    void runLoad(quint64 id, const LoadModelRequest & request, std::stop_token stop);
    void runPrefill(quint64 id, const PrefillRequest & request, std::stop_token stop);
    void runChat(quint64 id, const ChatRequest & request, std::stop_token stop);
    void runSummarize(quint64 id, const SummarizeRequest & request, std::stop_token stop);
    template <typename T>
    void send(quint64 id, T what) {
        emit jobEvent({.jobId = id, .what = std::move(what)});
    }
    void fail(quint64 id, JobKind kind, const Status & status, const ContextMeasure & measure = {});
    // A ProgressFn that reports the prompt's progress (with rate and ETA) and snapshots.
    ProgressFn prefillReporter(quint64 id, JobResult & result, Clock::time_point started);
    // Runs the cache's health checks when due, then sends a snapshot when one is due.
    void maybeSnapshot(bool force = false);
    RetentionSnapshot retentionOf(qint64 conversationId, const ConversationContext & context) const;

    EngineFactory m_factory;
    std::unique_ptr<InferenceEngine> m_engine;
    Clock::time_point m_lastSnapshot{};
    double m_prefillRate = 0;     // tokens/s of the last prefill that computed tokens
    double m_decodeRate = 0;      // tokens/s of the last reply
    bool m_sessionIntact = true;  // false: a health repair's recomputation failed (the reply stops)
    QTimer * m_healthTimer = nullptr;
};

}  // namespace lr::app
