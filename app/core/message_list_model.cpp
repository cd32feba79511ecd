#include "message_list_model.h"

namespace lr::app {

int MessageListModel::rowCount(const QModelIndex & parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

QVariant MessageListModel::data(const QModelIndex & index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const MessageRecord & m = m_rows[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
        case TextRole: return m.text;
        case Qt::AccessibleTextRole:
            return (m.role == QLatin1String("user") ? QStringLiteral("You: ") : QStringLiteral("Longread: ")) + m.text;
        case IdRole: return m.id;
        case RoleRole: return m.role;
        case StateRole: return int(m.state);
        case StopReasonRole: return m.stopReason;
        case NoteRole: return m.note;
        case CreatedAtRole: return m.createdAt;
        case ThinkingRole: return m.thinking;
        default: return {};
    }
}

QHash<int, QByteArray> MessageListModel::roleNames() const {
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(IdRole, "messageId");
    names.insert(RoleRole, "role");
    names.insert(TextRole, "text");
    names.insert(StateRole, "state");
    names.insert(StopReasonRole, "stopReason");
    names.insert(NoteRole, "note");
    names.insert(CreatedAtRole, "createdAt");
    names.insert(ThinkingRole, "thinking");
    return names;
}

void MessageListModel::setMessages(qint64 conversationId, std::vector<MessageRecord> messages) {
    beginResetModel();
    m_conversationId = conversationId;
    m_rows = std::move(messages);
    endResetModel();
}

void MessageListModel::append(const MessageRecord & message) {
    const int row = int(m_rows.size());
    beginInsertRows({}, row, row);
    m_rows.push_back(message);
    endInsertRows();
}

void MessageListModel::appendText(qint64 id, const QString & piece) { appendTo(id, &MessageRecord::text, TextRole, piece); }

void MessageListModel::setText(qint64 id, const QString & text) { setField(id, &MessageRecord::text, TextRole, text); }

void MessageListModel::appendThinking(qint64 id, const QString & piece) { appendTo(id, &MessageRecord::thinking, ThinkingRole, piece); }

void MessageListModel::setThinking(qint64 id, const QString & thinking) { setField(id, &MessageRecord::thinking, ThinkingRole, thinking); }

void MessageListModel::setProgressNote(qint64 id, const QString & note) { setField(id, &MessageRecord::note, NoteRole, note); }

void MessageListModel::appendTo(qint64 id, QString MessageRecord::*field, int role, const QString & piece) {
    const int row = rowOf(id);
    if (row < 0 || piece.isEmpty()) return;
    m_rows[size_t(row)].*field += piece;
    emit dataChanged(index(row), index(row), {role});
}

void MessageListModel::setField(qint64 id, QString MessageRecord::*field, int role, const QString & value) {
    const int row = rowOf(id);
    if (row < 0 || m_rows[size_t(row)].*field == value) return;
    m_rows[size_t(row)].*field = value;
    emit dataChanged(index(row), index(row), {role});
}

void MessageListModel::finish(qint64 id, const ReplyEnding & ending) {
    const int row = rowOf(id);
    if (row < 0) return;
    MessageRecord & m = m_rows[size_t(row)];
    m.text = ending.text;
    m.thinking = ending.thinking;
    m.state = ending.state;
    m.stopReason = ending.stopReason;
    m.note = ending.note;
    emit dataChanged(index(row), index(row), {TextRole, ThinkingRole, StateRole, StopReasonRole, NoteRole});
}

void MessageListModel::remove(qint64 id) {
    const int row = rowOf(id);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    m_rows.erase(m_rows.begin() + row);
    endRemoveRows();
}

int MessageListModel::rowOf(qint64 id) const {
    // Streaming updates go to the last rows: search from the end.
    for (size_t i = m_rows.size(); i-- > 0;) {
        if (m_rows[i].id == id) return int(i);
    }
    return -1;
}

const MessageRecord * MessageListModel::find(qint64 id) const {
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_rows[size_t(row)];
}

}  // namespace lr::app
