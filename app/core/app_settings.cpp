#include "app_settings.h"

#include <QDir>
#include <QJsonDocument>
#include <QStandardPaths>

#include "app/core/engine_requests.h"

namespace lr::app {

AppSettings::AppSettings(std::unique_ptr<QSettings> store) : m_store(std::move(store)) {}

std::unique_ptr<QSettings> AppSettings::userStore() {
    return std::make_unique<QSettings>(QSettings::NativeFormat, QSettings::UserScope, QStringLiteral("Longread"),
                                       QStringLiteral("Longread"));
}

QString AppSettings::lastModel() const { return m_store->value("model/last", QString::fromLatin1(kBundledModelPath)).toString(); }
void AppSettings::setLastModel(const QString & path) { m_store->setValue("model/last", path); }

EngineSettings AppSettings::engineDefaults() const {
    EngineSettings defaults;
    const QJsonDocument doc = QJsonDocument::fromJson(m_store->value("engine/defaults").toByteArray());
    EngineSettings s = doc.isObject() ? engineSettingsFromJson(doc.object(), defaults) : defaults;
    s.kv.dir = cacheDirectory().toStdString();
    return s;
}

void AppSettings::setEngineDefaults(const EngineSettings & settings) {
    m_store->setValue("engine/defaults", QJsonDocument(toJson(settings)).toJson(QJsonDocument::Compact));
}

QString AppSettings::cacheDirectory() const { return m_store->value("cache/directory").toString(); }
void AppSettings::setCacheDirectory(const QString & dir) { m_store->setValue("cache/directory", dir); }

int AppSettings::threads() const { return std::max(0, m_store->value("engine/threads", 0).toInt()); }
void AppSettings::setThreads(int threads) { m_store->setValue("engine/threads", std::max(0, threads)); }

QStringList AppSettings::modelFolders() const { return m_store->value("model/folders").toStringList(); }
void AppSettings::setModelFolders(const QStringList & folders) { m_store->setValue("model/folders", folders); }

QString AppSettings::databasePath() const {
    const QString stored = m_store->value("storage/database").toString();
    if (!stored.isEmpty()) return stored;
    QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (dir.isEmpty()) dir = QDir::homePath() + QStringLiteral("/.local/share/Longread");
    return dir + QStringLiteral("/conversations.sqlite");
}
void AppSettings::setDatabasePath(const QString & path) { m_store->setValue("storage/database", path); }

QByteArray AppSettings::windowGeometry() const { return m_store->value("window/geometry").toByteArray(); }
QByteArray AppSettings::windowState() const { return m_store->value("window/state").toByteArray(); }
void AppSettings::setWindowLayout(const QByteArray & geometry, const QByteArray & state) {
    m_store->setValue("window/geometry", geometry);
    m_store->setValue("window/state", state);
}

ServeSettings AppSettings::serve() const {
    return {.enabled = m_store->value("serve/enabled", false).toBool(),
            .port = m_store->value("serve/port", 8080).toInt(),
            .apiKey = m_store->value("serve/apiKey").toString()};
}
void AppSettings::setServe(const ServeSettings & serve) {
    m_store->setValue("serve/enabled", serve.enabled);
    m_store->setValue("serve/port", serve.port);
    m_store->setValue("serve/apiKey", serve.apiKey);
}

qint64 AppSettings::lastConversation() const { return m_store->value("conversation/last", 0).toLongLong(); }
void AppSettings::setLastConversation(qint64 id) { m_store->setValue("conversation/last", id); }

}  // namespace lr::app
