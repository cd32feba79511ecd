#include "engine_host.h"

namespace lr::app {

EngineHost::EngineHost(EngineFactory factory, QObject * parent) : QObject(parent) {
    qRegisterMetaType<EngineJob>();
    qRegisterMetaType<ModelInfo>();
    qRegisterMetaType<ContextMeasure>();
    qRegisterMetaType<PrefillStatus>();
    qRegisterMetaType<SummaryStatus>();
    qRegisterMetaType<JobResult>();
    qRegisterMetaType<JobError>();
    qRegisterMetaType<CacheSnapshot>();
    qRegisterMetaType<RetentionSnapshot>();

    m_thread.setObjectName(QStringLiteral("engine"));
    m_worker = new EngineWorker(std::move(factory));
    m_worker->moveToThread(&m_thread);

    constexpr auto queued = Qt::QueuedConnection;
    connect(this, &EngineHost::jobSubmitted, m_worker, &EngineWorker::run, queued);
    connect(m_worker, &EngineWorker::jobStarted, this, &EngineHost::jobStarted, queued);
    connect(m_worker, &EngineWorker::modelLoaded, this, &EngineHost::modelLoaded, queued);
    connect(m_worker, &EngineWorker::contextMeasured, this, &EngineHost::contextMeasured, queued);
    connect(m_worker, &EngineWorker::prefillProgress, this, &EngineHost::prefillProgress, queued);
    connect(m_worker, &EngineWorker::tokenGenerated, this, &EngineHost::tokenGenerated, queued);
    connect(m_worker, &EngineWorker::summaryProgress, this, &EngineHost::summaryProgress, queued);
    connect(m_worker, &EngineWorker::cacheSnapshot, this, &EngineHost::cacheSnapshot, queued);
    connect(m_worker, &EngineWorker::retentionChanged, this, &EngineHost::retentionChanged, queued);
    connect(m_worker, &EngineWorker::finished, this, [this](quint64 id, const JobResult & result) {
        onDone(id);
        emit finished(id, result);
    }, queued);
    connect(m_worker, &EngineWorker::failed, this, [this](quint64 id, const JobError & error) {
        onDone(id);
        emit failed(id, error);
    }, queued);
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

quint64 EngineHost::submit(EngineJob job) {
    job.id = m_nextId++;
    std::stop_source source;
    job.stop = source.get_token();
    const bool wasBusy = isBusy();
    m_jobs.emplace(job.id, std::move(source));
    emit jobSubmitted(job, QPrivateSignal());
    if (!wasBusy) emit busyChanged(true);
    return job.id;
}

quint64 EngineHost::loadModel(const LoadModelRequest & request) { return submit({.request = request}); }
quint64 EngineHost::prefill(const PrefillRequest & request) { return submit({.request = request}); }
quint64 EngineHost::chat(const ChatRequest & request) { return submit({.request = request}); }
quint64 EngineHost::summarize(const SummarizeRequest & request) { return submit({.request = request}); }

void EngineHost::requestStop() {
    for (auto & [id, source] : m_jobs) source.request_stop();
}

void EngineHost::requestStop(quint64 id) {
    if (auto it = m_jobs.find(id); it != m_jobs.end()) it->second.request_stop();
}

void EngineHost::onDone(quint64 id) {
    m_jobs.erase(id);
    if (m_jobs.empty()) emit busyChanged(false);
}

}  // namespace lr::app
