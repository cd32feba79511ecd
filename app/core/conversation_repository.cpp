#include "conversation_repository.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "app/core/sql_text.h"

namespace lr::app {
namespace {

ConversationRecord fromRow(const QSqlQuery & q) {
    return {.id = q.value(0).toLongLong(),
            .title = q.value(1).toString(),
            .createdAt = q.value(2).toLongLong(),
            .updatedAt = q.value(3).toLongLong()};
}

}  // namespace

std::optional<ConversationRecord> ConversationRepository::create(const QString & title) {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("INSERT INTO conversations (title, created_at, updated_at) VALUES (?, ?, ?)"));
    q.addBindValue(sqlText(title));
    q.addBindValue(now);
    q.addBindValue(now);
    if (!q.exec()) {
        m_db.noteFailure(q.lastError().text());
        return std::nullopt;
    }
    return ConversationRecord{.id = q.lastInsertId().toLongLong(), .title = title, .createdAt = now, .updatedAt = now};
}

bool ConversationRepository::rename(qint64 id, const QString & title) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("UPDATE conversations SET title = ? WHERE id = ?"));
    q.addBindValue(sqlText(title));
    q.addBindValue(id);
    if (q.exec() && q.numRowsAffected() == 1) return true;
    m_db.noteFailure(q.lastError().isValid() ? q.lastError().text() : QStringLiteral("no conversation %1").arg(id));
    return false;
}

bool ConversationRepository::remove(qint64 id) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

bool ConversationRepository::touch(qint64 id) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
    q.addBindValue(QDateTime::currentMSecsSinceEpoch());
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

std::optional<ConversationRecord> ConversationRepository::get(qint64 id) const {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("SELECT id, title, created_at, updated_at FROM conversations WHERE id = ?"));
    q.addBindValue(id);
    if (q.exec() && q.next()) return fromRow(q);
    return std::nullopt;
}

std::vector<ConversationRecord> ConversationRepository::list() const {
    std::vector<ConversationRecord> out;
    QSqlQuery q(m_db.connection());
    if (!q.exec(QStringLiteral("SELECT id, title, created_at, updated_at FROM conversations ORDER BY updated_at DESC, id DESC"))) {
        m_db.noteFailure(q.lastError().text());
        return out;
    }
    while (q.next()) out.push_back(fromRow(q));
    return out;
}

std::vector<ConversationRecord> ConversationRepository::search(const QString & text) const {
    if (text.trimmed().isEmpty()) return list();
    std::vector<ConversationRecord> out;
    QSqlQuery q(m_db.connection());
    // LIKE with an escape character, so that % and _ in the search are literal.
    QString pattern = text.trimmed();
    pattern.replace(QLatin1Char('\\'), QLatin1String("\\\\"))
        .replace(QLatin1Char('%'), QLatin1String("\\%"))
        .replace(QLatin1Char('_'), QLatin1String("\\_"));
    pattern = QLatin1Char('%') + pattern + QLatin1Char('%');
    q.prepare(QStringLiteral(
        "SELECT c.id, c.title, c.created_at, c.updated_at FROM conversations c "
        "WHERE c.title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.text LIKE ? ESCAPE '\\') "
        "ORDER BY c.updated_at DESC, c.id DESC"));
    q.addBindValue(pattern);
    q.addBindValue(pattern);
    if (!q.exec()) {
        m_db.noteFailure(q.lastError().text());
        return out;
    }
    while (q.next()) out.push_back(fromRow(q));
    return out;
}

}  // namespace lr::app
