#include "conversation_list_model.h"

#include <QDateTime>

namespace lr::app {

int ConversationListModel::rowCount(const QModelIndex & parent) const { return parent.isValid() ? 0 : int(m_rows.size()); }

QVariant ConversationListModel::data(const QModelIndex & index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ConversationRecord & c = m_rows[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
        case TitleRole: return c.title;
        case Qt::ToolTipRole:
            return QStringLiteral("%1\nLast used %2")
                .arg(c.title, QDateTime::fromMSecsSinceEpoch(c.updatedAt).toString(QStringLiteral("yyyy-MM-dd hh:mm")));
        case Qt::AccessibleTextRole: return QStringLiteral("Conversation: %1").arg(c.title);
        case IdRole: return c.id;
        case UpdatedAtRole: return c.updatedAt;
        case CreatedAtRole: return c.createdAt;
        default: return {};
    }
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(IdRole, "conversationId");
    names.insert(TitleRole, "title");
    names.insert(UpdatedAtRole, "updatedAt");
    names.insert(CreatedAtRole, "createdAt");
    return names;
}

void ConversationListModel::setConversations(std::vector<ConversationRecord> conversations) {
    beginResetModel();
    m_rows = std::move(conversations);
    endResetModel();
}

void ConversationListModel::prepend(const ConversationRecord & conversation) {
    beginInsertRows({}, 0, 0);
    m_rows.insert(m_rows.begin(), conversation);
    endInsertRows();
}

void ConversationListModel::update(const ConversationRecord & conversation) {
    const int row = rowOf(conversation.id);
    if (row < 0) return;
    m_rows[size_t(row)] = conversation;
    emit dataChanged(index(row), index(row));
}

void ConversationListModel::remove(qint64 id) {
    const int row = rowOf(id);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    m_rows.erase(m_rows.begin() + row);
    endRemoveRows();
}

void ConversationListModel::moveToTop(qint64 id, qint64 updatedAt) {
    const int row = rowOf(id);
    if (row < 0) return;
    if (row > 0) {
        beginMoveRows({}, row, row, {}, 0);
        ConversationRecord c = m_rows[size_t(row)];
        m_rows.erase(m_rows.begin() + row);
        m_rows.insert(m_rows.begin(), c);
        endMoveRows();
    }
    m_rows.front().updatedAt = updatedAt;
    emit dataChanged(index(0), index(0), {UpdatedAtRole, Qt::ToolTipRole});
}

int ConversationListModel::rowOf(qint64 id) const {
    for (size_t i = 0; i < m_rows.size(); ++i) {
        if (m_rows[i].id == id) return int(i);
    }
    return -1;
}

qint64 ConversationListModel::idAt(int row) const { return row >= 0 && row < int(m_rows.size()) ? m_rows[size_t(row)].id : 0; }

const ConversationRecord * ConversationListModel::find(qint64 id) const {
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_rows[size_t(row)];
}

}  // namespace lr::app
