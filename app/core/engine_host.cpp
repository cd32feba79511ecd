#include "engine_host.h"

namespace lr::app {

EngineHost::EngineHost(EngineFactory factory, QObject * parent) : QObject(parent) {
    qRegisterMetaType<EngineRequest>();
    qRegisterMetaType<JobEvent>();
    qRegisterMetaType<ModelInfo>();
    qRegisterMetaType<ContextMeasure>();
    qRegisterMetaType<JobProgress>();
    qRegisterMetaType<JobResult>();
    qRegisterMetaType<JobError>();
    qRegisterMetaType<CacheSnapshot>();
    qRegisterMetaType<RetentionSnapshot>();

    m_thread.setObjectName(QStringLiteral("engine"));
    m_worker = new EngineWorker(std::move(factory));
    m_worker->moveToThread(&m_thread);

    constexpr auto queued = Qt::QueuedConnection;
    connect(this, &EngineHost::requestSubmitted, m_worker, &EngineWorker::run, queued);
    connect(m_worker, &EngineWorker::jobEvent, this, &EngineHost::dispatch, queued);
    connect(m_worker, &EngineWorker::cacheSnapshot, this, &EngineHost::cacheSnapshot, queued);
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, &EngineWorker::start, queued);
}

EngineHost::~EngineHost() {
    requestStop();
    m_thread.quit();
    m_thread.wait();
    // The thread has ended: the worker (and the engine it owns) can go from here.
    delete m_worker;
}

EngineJob * EngineHost::submit(JobKind kind, EngineRequest::Variant request) {
    std::stop_source stop;
    const quint64 id = m_nextId++;
    auto * job = new EngineJob(kind, stop, this);
    const bool wasBusy = isBusy();
    m_jobs.emplace(id, InFlight{job, stop});
    emit requestSubmitted({.id = id, .stop = stop.get_token(), .request = std::move(request)}, QPrivateSignal());
    if (!wasBusy) emit busyChanged(true);
    return job;
}

EngineJob * EngineHost::loadModel(const LoadModelRequest & request) { return submit(JobKind::loadModel, request); }
EngineJob * EngineHost::prefill(const PrefillRequest & request) { return submit(JobKind::prefill, request); }
EngineJob * EngineHost::chat(const ChatRequest & request) { return submit(JobKind::chat, request); }
EngineJob * EngineHost::summarize(const SummarizeRequest & request) { return submit(JobKind::summarize, request); }

void EngineHost::requestStop() {
    for (auto & [id, job] : m_jobs) job.stop.request_stop();
}

void EngineHost::dispatch(const JobEvent & event) {
    auto it = m_jobs.find(event.jobId);
    if (it == m_jobs.end()) return;
    // The job's receivers may delete it or submit more: the host's bookkeeping comes first.
    const QPointer<EngineJob> job = it->second.job;
    if (event.isLast()) {
        m_jobs.erase(it);
        if (m_jobs.empty()) emit busyChanged(false);
    }
    if (job) job->deliver(event);
}

}  // namespace lr::app
