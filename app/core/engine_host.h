#pragma once
// The engine thread, seen from the GUI thread. EngineHost owns a QThread and the
// EngineWorker living in it; requests go over one queued signal as values, results come
// back as queued signals. The GUI never waits for the engine.
//
// Stop does not travel through the event queue (the engine thread is busy in a long call
// and would see it only afterwards): each job gets a std::stop_source, and requestStop()
// triggers them; the engine checks the token once per prefill chunk or generated token.

#include <QObject>
#include <QThread>

#include <map>
#include <stop_token>

#include "app/core/engine_worker.h"

namespace lr::app {

class EngineHost : public QObject {
    Q_OBJECT
public:
    using EngineFactory = EngineWorker::EngineFactory;
    // `factory` runs on the engine thread and makes the engine (LlmEngine, or a fake).
    explicit EngineHost(EngineFactory factory, QObject * parent = nullptr);
    // Stops what runs, then joins the thread.
    ~EngineHost() override;

    // Each returns the job's id; jobs run one at a time, in order.
    quint64 loadModel(const LoadModelRequest & request);
    quint64 prefill(const PrefillRequest & request);
    quint64 chat(const ChatRequest & request);
    quint64 summarize(const SummarizeRequest & request);

    // Stops the running job and every queued one, each within one chunk or token.
    void requestStop();
    // Stops one job (running or queued).
    void requestStop(quint64 id);
    bool isBusy() const { return !m_jobs.empty(); }
    int jobsInFlight() const { return int(m_jobs.size()); }

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
    void busyChanged(bool busy);

    // To the worker (queued); not for other receivers.
    void jobSubmitted(const lr::app::EngineJob & job, QPrivateSignal);

private:
    quint64 submit(EngineJob job);
    void onDone(quint64 id);

    QThread m_thread;
    EngineWorker * m_worker = nullptr;  // lives in m_thread; deleted after it stops
    std::map<quint64, std::stop_source> m_jobs;
    quint64 m_nextId = 1;
};

}  // namespace lr::app
