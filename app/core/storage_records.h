#pragma once
// Rows of the conversation database as plain values.

#include <QMetaType>
#include <QString>

namespace lr::app {

struct ConversationRecord {
    qint64 id = 0;
    QString title;
    qint64 createdAt = 0;  // ms since the epoch
    qint64 updatedAt = 0;
};

// Where a message is. Written to the database by name (messageStateKey): never rename.
enum class MessageState {
    streaming,  // being generated (a row left in this state was interrupted by the program ending)
    finished,
    stopped,      // the user stopped it
    failed,       // the engine failed; note says why
    interrupted,  // the program ended during the reply; the text is what was saved
};
QString messageStateKey(MessageState state);
MessageState messageStateFromKey(const QString & key);

struct MessageRecord {
    qint64 id = 0;
    qint64 conversationId = 0;
    QString role;      // "user" | "assistant"
    QString text;      // a reply's answer
    QString thinking;  // a thinking model's thinking before the answer; empty for most replies
    MessageState state = MessageState::finished;
    QString stopReason;  // stopReasonKey(), or "interrupted"; empty for user messages
    QString note;        // the summary method, the error, the speed
    qint64 createdAt = 0;
};

// How a reply ended: what MessageRepository::finish writes and MessageListModel::finish shows.
struct ReplyEnding {
    QString text;
    QString thinking;
    MessageState state = MessageState::finished;
    QString stopReason;
    QString note;
};

struct DocumentRecord {
    qint64 id = 0;
    qint64 conversationId = 0;
    QString path;
    QString title;
    QString format;  // "txt", "md", "pdf", "html"
    QString sha256;
    qint64 fileBytes = 0;
    qint64 tokenCount = -1;  // -1: not measured
    QString text;
    qint64 addedAt = 0;
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::ConversationRecord)
Q_DECLARE_METATYPE(lr::app::MessageRecord)
