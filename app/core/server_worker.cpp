#include "server_worker.h"

#include "app/server/local_server.h"

namespace lr::app {

ServerWorker::ServerWorker() = default;
ServerWorker::~ServerWorker() = default;

void ServerWorker::start(const ServeRequest & request, quint64 generation) {
    m_server.reset();
    if (!m_poll) {
        m_poll = new QTimer(this);
        m_poll->setInterval(kSnapshotIntervalMs);
        connect(m_poll, &QTimer::timeout, this, &ServerWorker::poll);
    }
    const SessionOptions session = sessionOptions(request.defaults);
    Result<std::unique_ptr<server::LocalServer>> made =
        server::LocalServer::start(request.weights, {.session = session,
                                                     .parallel = kParallel,
                                                     .host = "127.0.0.1",
                                                     .port = request.port,
                                                     .model_id = server::served_model_id(request.modelPath.toStdString()),
                                                     .api_key = request.apiKey.toStdString(),
                                                     .sampler = request.defaults.sampler,
                                                     .kv_flags = server::kv_flags_for(session.kv)});
    if (!made.ok()) {
        m_poll->stop();
        emit failed(generation, QString::fromStdString(made.status().message()));
        return;
    }
    m_server = std::move(*made);
    m_poll->start();
    emit started(generation, QString::fromStdString(m_server->base_url()));
    poll();
}

void ServerWorker::stop(quint64 generation) {
    if (m_poll) m_poll->stop();
    m_server.reset();
    emit stopped(generation);
}

void ServerWorker::poll() {
    if (!m_server) return;
    server::LocalServerFigures f = m_server->figures();
    emit snapshot({.running = f.queue.running,
                   .queued = f.queue.queued,
                   .completionsServed = f.completions_served,
                   .kv = std::move(f.kv),
                   .sequences = std::move(f.sequences)});
}

}  // namespace lr::app
