#include "settings_repository.h"

#include <QJsonDocument>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace lr::app {

std::optional<QJsonObject> SettingsRepository::load(qint64 conversationId) const {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("SELECT json FROM conversation_settings WHERE conversation_id = ?"));
    q.addBindValue(conversationId);
    if (!q.exec() || !q.next()) return std::nullopt;
    const QJsonDocument doc = QJsonDocument::fromJson(q.value(0).toString().toUtf8());
    if (!doc.isObject()) return std::nullopt;
    return doc.object();
}

bool SettingsRepository::save(qint64 conversationId, const QJsonObject & settings) {
    QSqlQuery q(m_db.connection());
    q.prepare(
        QStringLiteral("INSERT INTO conversation_settings (conversation_id, json) VALUES (?, ?) "
                       "ON CONFLICT(conversation_id) DO UPDATE SET json = excluded.json"));
    q.addBindValue(conversationId);
    q.addBindValue(QString::fromUtf8(QJsonDocument(settings).toJson(QJsonDocument::Compact)));
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

}  // namespace lr::app
