#pragma once
// The left column: the conversations (newest first), a search box, and New. Rename with F2
// or the context menu, delete with Delete (asks first). Emits what the user asked for; the
// controller does it.

#include <QTimer>
#include <QWidget>

class QLineEdit;
class QListView;
class QToolButton;
class QAbstractItemModel;

namespace lr::ui {

class IconProvider;

class ConversationListView : public QWidget {
    Q_OBJECT
public:
    ConversationListView(QAbstractItemModel * model, const IconProvider & icons, QWidget * parent = nullptr);

    // Selects the row of `id` without emitting conversationSelected.
    void setCurrentConversation(qint64 id);
    void focusSearch();
    void refreshIcons();
    // Asks for a new title for the current conversation (F2).
    void renameCurrent();
    // Asks, then deletes the current conversation (Delete).
    void deleteCurrent();

    QListView * listView() const { return m_list; }
    QLineEdit * searchField() const { return m_search; }

signals:
    void conversationSelected(qint64 id);
    void newConversationRequested();
    void renameRequested(qint64 id, const QString & title);
    void deleteRequested(qint64 id);
    void searchChanged(const QString & text);

private:
    qint64 currentId() const;
    void showContextMenu(const QPoint & at);

    QAbstractItemModel * m_model;
    const IconProvider & m_icons;
    QLineEdit * m_search;
    QListView * m_list;
    QToolButton * m_new;
    QTimer m_searchDelay;
    bool m_settingCurrent = false;
};

}  // namespace lr::ui
