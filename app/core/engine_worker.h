#pragma once
// The engine thread's side: runs one job at a time on an InferenceEngine and turns its
// callbacks into queued signals carrying values. Created by EngineHost and moved to its
// thread; nothing on the GUI thread calls it directly.

#include <QObject>

#include <chrono>
#include <functional>
#include <memory>

#include "app/core/inference_engine.h"

namespace lr::app {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    using EngineFactory = std::function<std::unique_ptr<InferenceEngine>()>;
    explicit EngineWorker(EngineFactory factory);
    ~EngineWorker() override;

    // How often cacheSnapshot is sent while a job runs.
    static constexpr int kSnapshotIntervalMs = 250;

public slots:
    // Creates the engine (on the engine thread).
    void start();
    void run(const lr::app::EngineJob & job);

signals:
    void jobStarted(quint64 id);
    void modelLoaded(quint64 id, const lr::app::ModelInfo & info);
    void contextMeasured(quint64 id, const lr::app::ContextMeasure & measure);
    void prefillProgress(quint64 id, const lr::app::PrefillStatus & status);
    void tokenGenerated(quint64 id, const QString & text);
    void summaryProgress(quint64 id, const lr::app::SummaryStatus & status);
    void finished(quint64 id, const lr::app::JobResult & result);
    void failed(quint64 id, const lr::app::JobError & error);
    void cacheSnapshot(const lr::app::CacheSnapshot & snapshot);
    void retentionChanged(const lr::app::RetentionSnapshot & retention);

private:
    using Clock = std::chrono::steady_clock;

    void runLoad(quint64 id, const LoadModelRequest & request, std::stop_token stop);
    void runPrefill(quint64 id, const PrefillRequest & request, std::stop_token stop);
    void runChat(quint64 id, const ChatRequest & request, std::stop_token stop);
    void runSummarize(quint64 id, const SummarizeRequest & request, std::stop_token stop);
    void fail(quint64 id, JobKind kind, const Status & status, const ContextMeasure & measure = {});
    // A ProgressFn that reports prefillProgress (with rate and ETA) and snapshots.
    ProgressFn prefillReporter(quint64 id, JobResult & result, Clock::time_point started);
    void maybeSnapshot(bool force = false);
    void sendRetention(qint64 conversationId, const ConversationContext & context);

    EngineFactory m_factory;
    std::unique_ptr<InferenceEngine> m_engine;
    Clock::time_point m_lastSnapshot{};
    double m_prefillRate = 0;  // tokens/s of the last prefill that computed tokens
    double m_decodeRate = 0;   // tokens/s of the last reply
};

}  // namespace lr::app
