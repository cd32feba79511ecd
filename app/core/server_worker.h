#pragma once
// The thread that starts and stops the app's server (lr::server::LocalServer), so that the
// GUI never waits for it: starting plans and allocates the server's KV cache and takes a
// turn on the backend; stopping waits for the server's engine thread to end its step.
// While it serves, it sends a ServerSnapshot a few times a second. Created by ServerHost
// and moved to its thread; nothing on the GUI thread calls it directly.

#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>

#include "app/core/engine_settings.h"
#include "app/core/server_snapshot.h"

namespace lr {
class Model;
}

namespace lr::server {
class LocalServer;
}

namespace lr::app {

struct ServeRequest {
    std::shared_ptr<const Model> weights;  // the model the app loaded (shared, read-only)
    QString modelPath;                     // names it in /v1/models
    EngineSettings defaults;               // the app's cache and sampling settings: the server's defaults
    int port = 8080;                       // on 127.0.0.1 only
    QString apiKey;
};

class ServerWorker : public QObject {
    Q_OBJECT
public:
    ServerWorker();
    ~ServerWorker() override;

    static constexpr int kSnapshotIntervalMs = 250;
    static constexpr int kParallel = 4;  // requests generating at once, as longread-cli serve's default

public slots:
    // Stops the server that runs, if any, then starts one on `request`. `generation` comes
    // back with the answer, so that the host can tell a stale one.
    void start(const lr::app::ServeRequest & request, quint64 generation);
    void stop(quint64 generation);

signals:
    void started(quint64 generation, const QString & address);
    void failed(quint64 generation, const QString & message);
    void stopped(quint64 generation);
    void snapshot(const lr::app::ServerSnapshot & snapshot);

private:
    void poll();

    std::unique_ptr<server::LocalServer> m_server;
    QTimer * m_poll = nullptr;  // made on the worker's thread
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::ServeRequest)
