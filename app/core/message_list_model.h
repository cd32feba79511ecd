#pragma once
// The messages of the conversation on screen. Streaming text arrives piece by piece as
// dataChanged on TextRole only; the other roles change when a message ends.

#include <QAbstractListModel>

#include <vector>

#include "app/core/storage_records.h"

namespace lr::app {

class MessageListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { IdRole = Qt::UserRole + 1, RoleRole, TextRole, StateRole, StopReasonRole, NoteRole, CreatedAtRole };

    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex & parent = {}) const override;
    QVariant data(const QModelIndex & index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    qint64 conversationId() const { return m_conversationId; }
    void setMessages(qint64 conversationId, std::vector<MessageRecord> messages);  // modelReset
    void append(const MessageRecord & message);                                    // rowsInserted
    void appendText(qint64 id, const QString & piece);                             // dataChanged {TextRole}
    void setText(qint64 id, const QString & text);                                 // dataChanged {TextRole}
    void setProgressNote(qint64 id, const QString & note);                         // dataChanged {NoteRole}
    // The final text, state, stop reason and note: dataChanged with those roles.
    void finish(qint64 id, const QString & text, MessageState state, const QString & stopReason, const QString & note);
    void remove(qint64 id);  // rowsRemoved

    int rowOf(qint64 id) const;
    const MessageRecord * find(qint64 id) const;
    const std::vector<MessageRecord> & messages() const { return m_rows; }

private:
    qint64 m_conversationId = 0;
    std::vector<MessageRecord> m_rows;
};

}  // namespace lr::app
