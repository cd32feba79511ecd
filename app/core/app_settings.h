#pragma once
// The user's settings (QSettings): the last model, the slider defaults, the KV cache
// directory, CPU threads, extra model folders, serving, the window's layout. Owned by main.cpp and
// passed to whoever needs it; tests give it a file of their own.

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QStringList>

#include <memory>

#include "app/core/engine_settings.h"

namespace lr::app {

// "Serve on this computer": the app's OpenAI-compatible server on 127.0.0.1.
struct ServeSettings {
    bool enabled = false;
    int port = 8080;
    QString apiKey;  // empty: one is made when serving starts

    bool operator==(const ServeSettings &) const = default;
};

class AppSettings {
public:
    // `store` is the backing QSettings; AppSettings::userStore() in the app.
    explicit AppSettings(std::unique_ptr<QSettings> store);
    static std::unique_ptr<QSettings> userStore();

    QString lastModel() const;  // kBundledModelPath when never set
    void setLastModel(const QString & path);

    // The defaults a new conversation starts with.
    EngineSettings engineDefaults() const;
    void setEngineDefaults(const EngineSettings & settings);

    QString cacheDirectory() const;  // empty: the default ($XDG_CACHE_HOME/longread/kv)
    void setCacheDirectory(const QString & dir);

    int threads() const;  // 0: the physical cores
    void setThreads(int threads);

    QStringList modelFolders() const;  // added by the user in the model picker
    void setModelFolders(const QStringList & folders);

    // Where the conversation database lives (default: the platform's app data folder).
    QString databasePath() const;
    void setDatabasePath(const QString & path);

    QByteArray windowGeometry() const;
    QByteArray windowState() const;
    void setWindowLayout(const QByteArray & geometry, const QByteArray & state);

    ServeSettings serve() const;
    void setServe(const ServeSettings & serve);

    qint64 lastConversation() const;
    void setLastConversation(qint64 id);

    void sync() { m_store->sync(); }

private:
    std::unique_ptr<QSettings> m_store;
};

}  // namespace lr::app
