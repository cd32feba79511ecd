#pragma once
// The engine thread, seen from the GUI thread. EngineHost owns a QThread and the
// EngineWorker living in it. Each request goes to the worker as a value over one queued
// signal and comes back as an EngineJob: what the engine thread says about it returns as
// JobEvent values over one queued signal, which the host hands to that job. The GUI never
// waits for the engine.
//
// Stop does not travel through the event queue (the engine thread is busy in a long call
// and would see it only afterwards): each job has a std::stop_source whose token the engine
// checks once per prefill chunk or generated token.

#include <QObject>
#include <QPointer>
#include <QThread>

#include <map>
#include <stop_token>

#include "app/core/engine_job.h"
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

    // Each submits a request and returns its job, a child of the host that the caller
    // deletes (deleteLater() once it finished or failed, or abandon() it). Requests run
    // one at a time, in order.
    EngineJob * loadModel(const LoadModelRequest & request);
    EngineJob * prefill(const PrefillRequest & request);
    EngineJob * chat(const ChatRequest & request);
    EngineJob * summarize(const SummarizeRequest & request);

    // Stops the running job and every queued one, each within one chunk or token.
    void requestStop();
    bool isBusy() const { return !m_jobs.empty(); }
    int jobsInFlight() const { return int(m_jobs.size()); }

signals:
    void cacheSnapshot(const lr::app::CacheSnapshot & snapshot);
    void busyChanged(bool busy);

    // To the worker (queued); not for other receivers.
    void requestSubmitted(const lr::app::EngineRequest & request, QPrivateSignal);

private:
    struct InFlight {
        QPointer<EngineJob> job;  // null once its caller deleted it
        std::stop_source stop;
    };

    EngineJob * submit(JobKind kind, EngineRequest::Variant request);
    void dispatch(const JobEvent & event);

    QThread m_thread;
    EngineWorker * m_worker = nullptr;  // lives in m_thread; deleted after it stops
    std::map<quint64, InFlight> m_jobs;
    quint64 m_nextId = 1;
};

}  // namespace lr::app
