#pragma once
// The document of each conversation (one at most: attaching another replaces it).

#include <optional>

#include "app/core/database.h"
#include "app/core/storage_records.h"

namespace lr::app {

class DocumentRepository {
public:
    explicit DocumentRepository(Database & db) : m_db(db) {}

    // Replaces the conversation's document with `document` (id and addedAt are set).
    std::optional<DocumentRecord> attach(DocumentRecord document);
    std::optional<DocumentRecord> forConversation(qint64 conversationId) const;
    bool setTokenCount(qint64 id, qint64 tokens);
    bool removeFor(qint64 conversationId);

private:
    Database & m_db;
};

}  // namespace lr::app
