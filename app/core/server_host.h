#pragma once
// "Serve on this computer", seen from the GUI thread: the app's OpenAI-compatible server
// on the model the app has loaded, on 127.0.0.1 only. It serves while the user has it on
// and a model is loaded; a new model restarts it on that model, a load beginning or
// switching it off stops it. The settings (switch, port, key) persist in AppSettings; a key
// is made when serving starts without one.
//
// The server runs the same weights as the chat but has its own engine thread and its own
// KV cache (with the app's default cache settings): what it holds is not the chat's. The
// ServerWorker's thread starts and stops it; states and snapshots come back as values.

#include <QObject>
#include <QThread>

#include <memory>
#include <optional>

#include "app/core/app_settings.h"
#include "app/core/server_snapshot.h"
#include "app/core/server_worker.h"

namespace lr::app {

class ServerHost : public QObject {
    Q_OBJECT
public:
    // `settings` must outlive the host.
    explicit ServerHost(AppSettings & settings, QObject * parent = nullptr);
    // Stops the server, then joins the thread.
    ~ServerHost() override;

    ServeSettings serveSettings() const { return m_serve; }
    const ServerState & state() const { return m_state; }
    // The last figures while serving; none otherwise.
    const std::optional<ServerSnapshot> & snapshot() const { return m_snapshot; }

public slots:
    // Persists `serve` and applies it: starts, restarts on another port or key, or stops.
    void setServeSettings(const lr::app::ServeSettings & serve);
    // The model to serve; null when none is loaded or a load begins (stops the server).
    void setWeights(const std::shared_ptr<const lr::Model> & weights, const QString & modelPath);

signals:
    void stateChanged(const lr::app::ServerState & state);
    void snapshotChanged(const lr::app::ServerSnapshot & snapshot);

    // To the worker (queued); not for other receivers.
    void startRequested(const lr::app::ServeRequest & request, quint64 generation, QPrivateSignal);
    void stopRequested(quint64 generation, QPrivateSignal);

private:
    void apply();
    void setState(ServerState state);
    void onStarted(quint64 generation, const QString & address);
    void onFailed(quint64 generation, const QString & message);
    void onSnapshot(const ServerSnapshot & snapshot);

    AppSettings & m_settings;
    ServeSettings m_serve;
    std::shared_ptr<const Model> m_weights;
    QString m_modelPath;
    ServerState m_state;
    std::optional<ServerSnapshot> m_snapshot;
    quint64 m_generation = 0;  // of the last start or stop asked; older answers are stale
    QThread m_thread;
    ServerWorker * m_worker = nullptr;  // lives in m_thread; deleted after it stops
};

}  // namespace lr::app
