#pragma once
// The conversation in the centre: one bubble per message of the MessageListModel, streaming
// text as it arrives (updates coalesced to ~30 per second), kept scrolled to the bottom
// while the user is there. With no messages it shows what to do first.

#include <QSet>
#include <QTimer>
#include <QWidget>

#include <vector>

class QScrollArea;
class QStackedWidget;
class QVBoxLayout;
class QLabel;
class QPushButton;

namespace lr::app {
class MessageListModel;
}

namespace lr::ui {

class IconProvider;
class MessageBubble;

class ChatView : public QWidget {
    Q_OBJECT
public:
    ChatView(app::MessageListModel * model, const IconProvider & icons, QWidget * parent = nullptr);

    // Whether a reply is being written (no edit/regenerate meanwhile).
    void setReplying(bool replying);
    // What the empty state says about the model.
    void setModelDescription(const QString & text);
    void refreshStyle();

    int bubbleCount() const { return int(m_bubbles.size()); }
    MessageBubble * bubble(int row) const { return m_bubbles[size_t(row)]; }
    bool showsEmptyState() const;
    void scrollToBottom();

signals:
    void editLastRequested();
    void regenerateRequested();
    void openDocumentRequested();
    void chooseModelRequested();

private:
    void rebuild();
    void insertRows(int first, int last);
    void removeRows(int first, int last);
    void flushUpdates();
    void updateActions();
    void updateEmptyState();
    MessageBubble * makeBubble(int row);

    app::MessageListModel * m_model;
    const IconProvider & m_icons;
    QStackedWidget * m_stack;
    QWidget * m_empty;
    QLabel * m_emptyModel;
    QList<QPushButton *> m_emptyButtons;
    QScrollArea * m_scroll;
    QWidget * m_content;
    QVBoxLayout * m_column;
    std::vector<MessageBubble *> m_bubbles;
    QSet<int> m_dirtyRows;
    QTimer m_updateTimer;
    bool m_replying = false;
    bool m_stickToBottom = true;
};

}  // namespace lr::ui
