#pragma once
// The messages of the conversation on screen. Streaming text arrives piece by piece as
// dataChanged on TextRole (the answer) or ThinkingRole (a thinking model's thinking) only;
// the other roles change when a message ends.

#include <QAbstractListModel>

#include <vector>

#include "app/core/storage_records.h"

namespace lr::app {

class MessageListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { IdRole = Qt::UserRole + 1, RoleRole, TextRole, StateRole, StopReasonRole, NoteRole, CreatedAtRole, ThinkingRole };

    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex & parent = {}) const override;
    QVariant data(const QModelIndex & index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    qint64 conversationId() const { return m_conversationId; }
    void setMessages(qint64 conversationId, std::vector<MessageRecord> messages);  // modelReset
    void append(const MessageRecord & message);                                    // rowsInserted
    void appendText(qint64 id, const QString & piece);                             // dataChanged {TextRole}
    void setText(qint64 id, const QString & text);                                 // dataChanged {TextRole}
    void appendThinking(qint64 id, const QString & piece);                         // dataChanged {ThinkingRole}
    void setThinking(qint64 id, const QString & thinking);                         // dataChanged {ThinkingRole}
    void setProgressNote(qint64 id, const QString & note);                         // dataChanged {NoteRole}
    // The final text, thinking, state, stop reason and note: dataChanged with those roles.
    void finish(qint64 id, const ReplyEnding & ending);
    void remove(qint64 id);  // rowsRemoved

    int rowOf(qint64 id) const;
    const MessageRecord * find(qint64 id) const;
    const std::vector<MessageRecord> & messages() const { return m_rows; }

private:
    // Appends to or sets one text field of message `id`: dataChanged {role} if it changes.
    void appendTo(qint64 id, QString MessageRecord::*field, int role, const QString & piece);
    void setField(qint64 id, QString MessageRecord::*field, int role, const QString & value);

    qint64 m_conversationId = 0;
    std::vector<MessageRecord> m_rows;
};

}  // namespace lr::app
