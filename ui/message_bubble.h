#pragma once
// One message in the chat: who said it, a thinking model's thinking (collapsed above the
// answer), the text (the model's as Markdown), a note (speed, the summary method, why it
// stopped or failed), and its actions: copy (the answer only), and for the last ones
// regenerate or edit-and-resend.

#include <QFrame>

#include "app/core/storage_records.h"

class QLabel;
class QToolButton;

namespace lr::ui {

class IconProvider;
class ThinkingSection;

class MessageBubble : public QWidget {
    Q_OBJECT
public:
    MessageBubble(const app::MessageRecord & message, const IconProvider & icons, QWidget * parent = nullptr);

    qint64 messageId() const { return m_message.id; }
    const app::MessageRecord & message() const { return m_message; }
    void setMessage(const app::MessageRecord & message);
    // Which actions this message offers now.
    void setActions(bool canEdit, bool canRegenerate);
    void refreshStyle();

    QLabel * textLabel() const { return m_text; }
    ThinkingSection * thinking() const { return m_thinking; }

signals:
    void editRequested(qint64 id);
    void regenerateRequested(qint64 id);

private:
    void updateNote();

    app::MessageRecord m_message;
    const IconProvider & m_icons;
    QFrame * m_bubble;
    QLabel * m_who;
    ThinkingSection * m_thinking;
    QLabel * m_text;
    QLabel * m_note;
    QToolButton * m_copy;
    QToolButton * m_edit;
    QToolButton * m_regenerate;
};

}  // namespace lr::ui
