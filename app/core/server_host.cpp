#include "server_host.h"

#include <QRandomGenerator>

namespace lr::app {
namespace {

// 128 random bits from the system's source, as hex.
QString newApiKey() {
    QString key = QStringLiteral("lr-");
    for (int i = 0; i < 4; ++i) key += QStringLiteral("%1").arg(QRandomGenerator::system()->generate(), 8, 16, QLatin1Char('0'));
    return key;
}

}  // namespace

ServerHost::ServerHost(AppSettings & settings, QObject * parent) : QObject(parent), m_settings(settings), m_serve(settings.serve()) {
    qRegisterMetaType<ServeRequest>();
    qRegisterMetaType<ServerState>();
    qRegisterMetaType<ServerSnapshot>();

    m_thread.setObjectName(QStringLiteral("server"));
    m_worker = new ServerWorker;
    m_worker->moveToThread(&m_thread);
    constexpr auto queued = Qt::QueuedConnection;
    connect(this, &ServerHost::startRequested, m_worker, &ServerWorker::start, queued);
    connect(this, &ServerHost::stopRequested, m_worker, &ServerWorker::stop, queued);
    connect(m_worker, &ServerWorker::started, this, &ServerHost::onStarted, queued);
    connect(m_worker, &ServerWorker::failed, this, &ServerHost::onFailed, queued);
    connect(m_worker, &ServerWorker::snapshot, this, &ServerHost::onSnapshot, queued);
    m_thread.start();
    apply();
}

ServerHost::~ServerHost() {
    m_thread.quit();
    m_thread.wait();
    // The thread has ended: the worker (and the server it runs) can go from here.
    delete m_worker;
}

void ServerHost::setServeSettings(const ServeSettings & serve) {
    if (serve == m_serve) return;
    m_serve = serve;
    m_settings.setServe(m_serve);
    apply();
}

void ServerHost::setWeights(const std::shared_ptr<const Model> & weights, const QString & modelPath) {
    m_weights = weights;
    m_modelPath = modelPath;
    apply();
}

void ServerHost::apply() {
    const quint64 generation = ++m_generation;
    m_snapshot.reset();
    if (!m_serve.enabled || !m_weights) {
        emit stopRequested(generation, QPrivateSignal());
        setState({.kind = m_serve.enabled ? ServerState::Kind::waitingForModel : ServerState::Kind::off});
        return;
    }
    if (m_serve.apiKey.isEmpty()) {
        m_serve.apiKey = newApiKey();
        m_settings.setServe(m_serve);
    }
    emit startRequested({.weights = m_weights,
                         .modelPath = m_modelPath,
                         .defaults = m_settings.engineDefaults(),
                         .port = m_serve.port,
                         .apiKey = m_serve.apiKey},
                        generation, QPrivateSignal());
    setState({.kind = ServerState::Kind::starting});
}

void ServerHost::setState(ServerState state) {
    m_state = std::move(state);
    emit stateChanged(m_state);
}

void ServerHost::onStarted(quint64 generation, const QString & address) {
    if (generation != m_generation) return;
    setState({.kind = ServerState::Kind::serving, .address = address, .apiKey = m_serve.apiKey});
}

void ServerHost::onFailed(quint64 generation, const QString & message) {
    if (generation != m_generation) return;
    setState({.kind = ServerState::Kind::failed, .message = message});
}

void ServerHost::onSnapshot(const ServerSnapshot & snapshot) {
    if (m_state.kind != ServerState::Kind::serving) return;
    m_snapshot = snapshot;
    emit snapshotChanged(snapshot);
}

}  // namespace lr::app
