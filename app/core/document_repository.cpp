#include "document_repository.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "app/core/sql_text.h"

namespace lr::app {

std::optional<DocumentRecord> DocumentRepository::attach(DocumentRecord d) {
    QSqlDatabase db = m_db.connection();
    d.addedAt = QDateTime::currentMSecsSinceEpoch();
    if (!db.transaction()) {
        m_db.noteFailure(db.lastError().text());
        return std::nullopt;
    }
    QSqlQuery del(db);
    del.prepare(QStringLiteral("DELETE FROM documents WHERE conversation_id = ?"));
    del.addBindValue(d.conversationId);
    QSqlQuery q(db);
    q.prepare(
        QStringLiteral("INSERT INTO documents (conversation_id, path, title, format, sha256, file_bytes, token_count, text, added_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.addBindValue(d.conversationId);
    q.addBindValue(sqlText(d.path));
    q.addBindValue(sqlText(d.title));
    q.addBindValue(sqlText(d.format));
    q.addBindValue(sqlText(d.sha256));
    q.addBindValue(d.fileBytes);
    q.addBindValue(d.tokenCount);
    q.addBindValue(sqlText(d.text));
    q.addBindValue(d.addedAt);
    if (!del.exec() || !q.exec()) {
        m_db.noteFailure(del.lastError().isValid() ? del.lastError().text() : q.lastError().text());
        db.rollback();
        return std::nullopt;
    }
    d.id = q.lastInsertId().toLongLong();
    if (!db.commit()) {
        m_db.noteFailure(db.lastError().text());
        return std::nullopt;
    }
    return d;
}

std::optional<DocumentRecord> DocumentRepository::forConversation(qint64 conversationId) const {
    QSqlQuery q(m_db.connection());
    q.prepare(
        QStringLiteral("SELECT id, conversation_id, path, title, format, sha256, file_bytes, token_count, text, added_at "
                       "FROM documents WHERE conversation_id = ? ORDER BY id DESC LIMIT 1"));
    q.addBindValue(conversationId);
    if (!q.exec() || !q.next()) return std::nullopt;
    return DocumentRecord{.id = q.value(0).toLongLong(),
                          .conversationId = q.value(1).toLongLong(),
                          .path = q.value(2).toString(),
                          .title = q.value(3).toString(),
                          .format = q.value(4).toString(),
                          .sha256 = q.value(5).toString(),
                          .fileBytes = q.value(6).toLongLong(),
                          .tokenCount = q.value(7).toLongLong(),
                          .text = q.value(8).toString(),
                          .addedAt = q.value(9).toLongLong()};
}

bool DocumentRepository::setTokenCount(qint64 id, qint64 tokens) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("UPDATE documents SET token_count = ? WHERE id = ?"));
    q.addBindValue(tokens);
    q.addBindValue(id);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

bool DocumentRepository::removeFor(qint64 conversationId) {
    QSqlQuery q(m_db.connection());
    q.prepare(QStringLiteral("DELETE FROM documents WHERE conversation_id = ?"));
    q.addBindValue(conversationId);
    if (q.exec()) return true;
    m_db.noteFailure(q.lastError().text());
    return false;
}

}  // namespace lr::app
