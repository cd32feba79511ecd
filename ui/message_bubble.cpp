#include "message_bubble.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/icon_provider.h"
#include "ui/theme.h"
#include "ui/thinking_section.h"

namespace lr::ui {
namespace {

QToolButton * actionButton(const QString & name, const QString & tip, QWidget * parent) {
    auto * b = new QToolButton(parent);
    b->setAutoRaise(true);
    b->setIconSize(QSize(16, 16));
    b->setToolTip(tip);
    b->setAccessibleName(name);
    b->setCursor(Qt::PointingHandCursor);
    return b;
}

}  // namespace

MessageBubble::MessageBubble(const app::MessageRecord & message, const IconProvider & icons, QWidget * parent)
    : QWidget(parent), m_message(message), m_icons(icons) {
    const bool user = message.role == QLatin1String("user");
    auto * row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_bubble = new QFrame(this);
    m_bubble->setObjectName(QStringLiteral("bubble"));
    m_bubble->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    if (user) row->addStretch(1);
    row->addWidget(m_bubble, 6);
    if (!user) row->addStretch(1);

    auto * column = new QVBoxLayout(m_bubble);
    column->setContentsMargins(theme::kPad, theme::kGap, theme::kPad, theme::kGap);
    column->setSpacing(4);
    auto * header = new QHBoxLayout;
    header->setSpacing(2);
    m_who = new QLabel(user ? tr("You") : tr("Longread"), m_bubble);
    QFont whoFont = theme::captionFont(font());
    whoFont.setWeight(QFont::DemiBold);
    m_who->setFont(whoFont);
    header->addWidget(m_who);
    header->addStretch(1);
    m_copy = actionButton(tr("Copy message"), tr("Copy this message"), m_bubble);
    m_edit = actionButton(tr("Edit and resend"), tr("Edit this message and send it again (Ctrl+E)"), m_bubble);
    m_regenerate = actionButton(tr("Regenerate reply"), tr("Write this reply again (Ctrl+R)"), m_bubble);
    header->addWidget(m_edit);
    header->addWidget(m_regenerate);
    header->addWidget(m_copy);
    column->addLayout(header);

    m_thinking = new ThinkingSection(m_bubble);
    column->addWidget(m_thinking);
    m_text = new QLabel(m_bubble);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse | Qt::TextSelectableByKeyboard);
    m_text->setOpenExternalLinks(true);
    m_text->setTextFormat(user ? Qt::PlainText : Qt::MarkdownText);
    m_text->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    column->addWidget(m_text);
    m_note = new QLabel(m_bubble);
    m_note->setFont(theme::captionFont(font()));
    m_note->setWordWrap(true);
    column->addWidget(m_note);

    connect(m_copy, &QToolButton::clicked, this, [this] { QGuiApplication::clipboard()->setText(m_message.text); });
    connect(m_edit, &QToolButton::clicked, this, [this] { emit editRequested(m_message.id); });
    connect(m_regenerate, &QToolButton::clicked, this, [this] { emit regenerateRequested(m_message.id); });
    setActions(false, false);
    setMessage(message);
    refreshStyle();
}

void MessageBubble::setMessage(const app::MessageRecord & message) {
    m_message = message;
    const bool streaming = message.state == app::MessageState::streaming;
    m_thinking->setThinking(message.thinking, streaming && message.text.isEmpty());
    if (message.text.isEmpty() && streaming) {
        m_text->setText(QStringLiteral("\u2026"));
    } else {
        m_text->setText(message.text);
    }
    // With no answer (yet), the thinking section says all there is.
    m_text->setVisible(!message.text.isEmpty() || message.thinking.isEmpty());
    m_text->setAccessibleName((message.role == QLatin1String("user") ? tr("Your message") : tr("Reply")));
    m_text->setAccessibleDescription(message.text);
    m_copy->setEnabled(!message.text.isEmpty());
    updateNote();
}

void MessageBubble::updateNote() {
    QString note;
    switch (m_message.state) {
        case app::MessageState::streaming: note = m_message.note.isEmpty() ? tr("Writing\u2026") : m_message.note; break;
        case app::MessageState::finished: note = m_message.note; break;
        case app::MessageState::stopped:
            note = m_message.note.isEmpty() ? tr("Stopped") : tr("Stopped \u2014 %1").arg(m_message.note);
            break;
        case app::MessageState::failed: note = tr("Failed: %1").arg(m_message.note); break;
        case app::MessageState::interrupted: note = tr("Interrupted: Longread closed during this reply; this is what was saved."); break;
    }
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
    QPalette p = m_note->palette();
    p.setColor(QPalette::WindowText, m_message.state == app::MessageState::failed ? theme::bad(palette()) : theme::subtleText(palette()));
    m_note->setPalette(p);
}

void MessageBubble::setActions(bool canEdit, bool canRegenerate) {
    m_edit->setVisible(canEdit);
    m_regenerate->setVisible(canRegenerate);
}

void MessageBubble::refreshStyle() {
    const QPalette & p = palette();
    const bool user = m_message.role == QLatin1String("user");
    const QColor background = user ? theme::userBubble(p) : theme::assistantBubble(p);
    m_bubble->setStyleSheet(QStringLiteral("QFrame#bubble { background: %1; border: 1px solid %2; border-radius: %3px; }")
                                .arg(background.name(), theme::border(p).name())
                                .arg(theme::kRadius));
    QPalette whoPalette = m_who->palette();
    whoPalette.setColor(QPalette::WindowText, user ? theme::accent(p) : theme::subtleText(p));
    m_who->setPalette(whoPalette);
    m_copy->setIcon(m_icons.icon(QStringLiteral("copy")));
    m_edit->setIcon(m_icons.icon(QStringLiteral("edit")));
    m_regenerate->setIcon(m_icons.icon(QStringLiteral("regenerate")));
    m_thinking->refreshStyle();
    updateNote();
}

}  // namespace lr::ui
