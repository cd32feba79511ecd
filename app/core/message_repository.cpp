#include "message_repository.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "app/core/sql_text.h"

namespace lr::app {
namespace {

constexpr const char * kColumns = "id, conversation_id, role, text, thinking, state, stop_reason, note, created_at";

MessageRecord fromRow(const QSqlQuery & q) {
    return {.id = q.value(0).toLongLong(),
            .conversationId = q.value(1).toLongLong(),
            .role = q.value(2).toString(),
            .text = q.value(3).toString(),
            .thinking = q.value(4).toString(),
            .state = messageStateFromKey(q.value(5).toString()),
            .stopReason = q.value(6).toString(),
            .note = q.value(7).toString(),
            .createdAt = q.value(8).toLongLong()};
}

}  // namespace

QString messageStateKey(MessageState state) {
    switch (state) {
        case MessageState::streaming: return QStringLiteral("streaming");
        case MessageState::finished: return QStringLiteral("finished");
        case MessageState::stopped: return QStringLiteral("stopped");
        case MessageState::failed: return QStringLiteral("failed");
        case MessageState::interrupted: return QStringLiteral("interrupted");
    }
    return QStringLiteral("finished");
}

MessageState messageStateFromKey(const QString & key) {
    for (MessageState s :
         {MessageState::streaming, MessageState::finished, MessageState::stopped, MessageState::failed, MessageState::interrupted}) {
        if (messageStateKey(s) == key) return s;
    }
    return MessageState::finished;
}

std::optional<MessageRecord> MessageRepository::insert(MessageRecord m) {
    m.createdAt = QDateTime::currentMSecsSinceEpoch();
    QSqlQuery q(m_db.connection());
    q.prepare(
        QStringLiteral("INSERT INTO messages (conversation_id, role, text, thinking, state, stop_reason, note, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    q.addBindValue(m.conversationId);
    q.addBindValue(sqlText(m.role));
    q.addBindValue(sqlText(m.text));
    q.addBindValue(sqlText(m.thinking));
    q.addBindValue(messageStateKey(m.state));
    q.addBindValue(sqlText(m.stopReason));
    q.addBindValue(sqlText(m.note));
    q.addBindValue(m.createdAt);
    if (!q.exec()) {
        m_db.noteFailure(q.lastError().text());
        return std::nullopt;
    }
    m.id = q.lastInsertId().toLongLong();
    QSqlQuery t(m_db.connection());
    t.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
    t.addBindValue(m.createdAt);
    t.addBindValue(m.conversationId);
    t.exec();
    return m;
}

bool MessageRepository::updateText(qint64 id, const QString & text, const QString & thinking) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("UPDATE messages SET text = ?, thinking = ? WHERE id = ?"));
    q.addBindValue(sqlText(text));
    q.addBindValue(sqlText(thinking));
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

bool MessageRepository::finish(qint64 id, const ReplyEnding & ending) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("UPDATE messages SET text = ?, thinking = ?, state = ?, stop_reason = ?, note = ? WHERE id = ?"));
    q.addBindValue(sqlText(ending.text));
    q.addBindValue(sqlText(ending.thinking));
    q.addBindValue(messageStateKey(ending.state));
    q.addBindValue(sqlText(ending.stopReason));
    q.addBindValue(sqlText(ending.note));
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

bool MessageRepository::remove(qint64 id) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("DELETE FROM messages WHERE id = ?"));
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

std::vector<MessageRecord> MessageRepository::forConversation(qint64 conversationId) const {
    std::vector<MessageRecord> out;
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("SELECT %1 FROM messages WHERE conversation_id = ? ORDER BY id").arg(QLatin1String(kColumns)));
    q.addBindValue(conversationId);
    if (!q.exec()) {
        m_db.noteFailure(q.lastError().text());
        return out;
    }
    while (q.next()) out.push_back(fromRow(q));
    return out;
}

std::optional<MessageRecord> MessageRepository::get(qint64 id) const {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("SELECT %1 FROM messages WHERE id = ?").arg(QLatin1String(kColumns)));
    q.addBindValue(id);
    if (q.exec() && q.next()) return fromRow(q);
    return std::nullopt;
}

int MessageRepository::markInterrupted() {
    QSqlQuery q(m_db.connection());
    if (!q.exec(QStringLiteral("UPDATE messages SET state = 'interrupted', stop_reason = 'interrupted' WHERE state = 'streaming'"))) {
        m_db.noteFailure(q.lastError().text());
        return 0;
    }
    return q.numRowsAffected();
}

}  // namespace lr::app
