#pragma once
// The conversations shown on the left, newest first. Fed by SessionController; each
// change is the smallest signal that describes it (insert, remove, move, dataChanged),
// so views keep their selection and scroll position.

#include <QAbstractListModel>

#include <vector>

#include "app/core/storage_records.h"

namespace lr::app {

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { IdRole = Qt::UserRole + 1, TitleRole, UpdatedAtRole, CreatedAtRole };

    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex & parent = {}) const override;
    QVariant data(const QModelIndex & index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setConversations(std::vector<ConversationRecord> conversations);  // modelReset
    void prepend(const ConversationRecord & conversation);                 // rowsInserted at 0
    void update(const ConversationRecord & conversation);                  // dataChanged (no-op if absent)
    void remove(qint64 id);                                                // rowsRemoved
    void moveToTop(qint64 id, qint64 updatedAt);                           // rowsMoved (when not first) + dataChanged

    int rowOf(qint64 id) const;  // -1 when absent
    qint64 idAt(int row) const;  // 0 when out of range
    const ConversationRecord * find(qint64 id) const;

private:
    std::vector<ConversationRecord> m_rows;
};

}  // namespace lr::app
