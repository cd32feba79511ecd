#pragma once
// Conversations in the database: create, rename, delete (with their messages, document
// and settings), list newest first, search titles and message text.

#include <optional>
#include <vector>

#include "app/core/database.h"
#include "app/core/storage_records.h"

namespace lr::app {

class ConversationRepository {
public:
    explicit ConversationRepository(Database & db) : m_db(db) {}

    // The new row, or nullopt (db.lastFailure() says why).
    std::optional<ConversationRecord> create(const QString & title);
    bool rename(qint64 id, const QString & title);
    bool remove(qint64 id);
    // Marks the conversation as just used (it moves to the top of the list).
    bool touch(qint64 id);
    std::optional<ConversationRecord> get(qint64 id) const;
    // Newest first.
    std::vector<ConversationRecord> list() const;
    // Those whose title or any message contains `text` (case-insensitive), newest first.
    std::vector<ConversationRecord> search(const QString & text) const;

private:
    Database & m_db;
};

}  // namespace lr::app
