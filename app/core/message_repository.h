#pragma once
// Messages in the database. A reply is inserted when it starts (state streaming), its text
// is updated while it streams (SessionController flushes about once a second) and it is
// finished with its final text (answer and thinking) and state: each write is one autocommitted statement, so a
// killed program leaves every finished message and at most the last second of a reply.

#include <optional>
#include <vector>

#include "app/core/database.h"
#include "app/core/storage_records.h"

namespace lr::app {

class MessageRepository {
public:
    explicit MessageRepository(Database & db) : m_db(db) {}

    // Inserts `message` (its id and createdAt are set); touches its conversation.
    std::optional<MessageRecord> insert(MessageRecord message);
    // The reply so far: its answer and its thinking.
    bool updateText(qint64 id, const QString & text, const QString & thinking);
    bool finish(qint64 id, const ReplyEnding & ending);
    bool remove(qint64 id);
    // The conversation's messages, oldest first.
    std::vector<MessageRecord> forConversation(qint64 conversationId) const;
    std::optional<MessageRecord> get(qint64 id) const;
    // Replies left streaming by a program that ended mid-reply become interrupted. Returns how many.
    int markInterrupted();

private:
    Database & m_db;
};

}  // namespace lr::app
