#include "composer.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextBlock>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/icon_provider.h"
#include "ui/theme.h"

namespace lr::ui {

Composer::Composer(const IconProvider & icons, QWidget * parent) : QWidget(parent), m_icons(icons) {
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad * 2, theme::kGap, theme::kPad * 2, theme::kGap);
    layout->setSpacing(4);
    m_editBanner = new QLabel(tr("Editing your last message: Enter sends it again in its place, Esc cancels."), this);
    m_editBanner->setFont(theme::captionFont(font()));
    m_editBanner->hide();
    layout->addWidget(m_editBanner);

    auto * row = new QHBoxLayout;
    row->setSpacing(theme::kGap);
    m_attach = new QToolButton(this);
    m_attach->setAccessibleName(tr("Attach a document"));
    m_attach->setToolTip(tr("Open a .txt, .md, .pdf or .html document into this conversation (Ctrl+O)"));
    m_attach->setIconSize(QSize(20, 20));
    m_attach->setAutoRaise(true);
    m_summarize = new QToolButton(this);
    m_summarize->setAccessibleName(tr("Summarize the document"));
    m_summarize->setToolTip(tr("Summarize the conversation's document: in one pass if it fits, else chunk by chunk (Ctrl+Shift+S)"));
    m_summarize->setIconSize(QSize(20, 20));
    m_summarize->setAutoRaise(true);
    m_summarize->setEnabled(false);
    m_editor = new QPlainTextEdit(this);
    m_editor->setPlaceholderText(tr("Ask about the document, or anything else\u2026"));
    m_editor->setAccessibleName(tr("Message"));
    m_editor->setTabChangesFocus(true);
    m_editor->installEventFilter(this);
    m_send = new QPushButton(this);
    m_send->setAccessibleName(tr("Send"));
    m_send->setDefault(false);
    m_send->setAutoDefault(false);
    m_send->setMinimumWidth(96);
    row->addWidget(m_attach, 0, Qt::AlignBottom);
    row->addWidget(m_summarize, 0, Qt::AlignBottom);
    row->addWidget(m_editor, 1);
    row->addWidget(m_send, 0, Qt::AlignBottom);
    layout->addLayout(row);
    m_hint = new QLabel(tr("Enter to send \u00b7 Shift+Enter for a new line \u00b7 Esc to stop"), this);
    m_hint->setFont(theme::captionFont(font()));
    m_hint->setAlignment(Qt::AlignRight);
    layout->addWidget(m_hint);

    connect(m_send, &QPushButton::clicked, this, [this] {
        if (m_replying) {
            emit stopRequested();
        } else {
            submit();
        }
    });
    connect(m_attach, &QToolButton::clicked, this, &Composer::attachRequested);
    connect(m_summarize, &QToolButton::clicked, this, &Composer::summarizeRequested);
    connect(m_editor, &QPlainTextEdit::textChanged, this, &Composer::fitHeight);
    setReplying(false);
    fitHeight();
    refreshIcons();
}

void Composer::refreshIcons() {
    m_attach->setIcon(m_icons.icon(QStringLiteral("attach")));
    m_summarize->setIcon(m_icons.icon(QStringLiteral("summarize")));
    m_send->setIcon(m_icons.icon(m_replying ? QStringLiteral("stop") : QStringLiteral("send")));
    QPalette p = m_hint->palette();
    p.setColor(QPalette::WindowText, theme::subtleText(palette()));
    m_hint->setPalette(p);
    m_editBanner->setPalette(p);
}

void Composer::setReplying(bool replying) {
    m_replying = replying;
    m_send->setText(replying ? tr("Stop") : tr("Send"));
    m_send->setAccessibleName(replying ? tr("Stop the reply") : tr("Send"));
    m_send->setToolTip(replying ? tr("Stop the reply now; what was written is kept (Esc)") : tr("Send the message (Enter)"));
    m_send->setIcon(m_icons.icon(replying ? QStringLiteral("stop") : QStringLiteral("send")));
}

void Composer::setCanSummarize(bool can) { m_summarize->setEnabled(can); }

void Composer::beginEdit(const QString & text) {
    m_editing = true;
    m_editBanner->show();
    m_editor->setPlainText(text);
    focusInput();
}

void Composer::cancelEdit() {
    m_editing = false;
    m_editBanner->hide();
    m_editor->clear();
}

void Composer::focusInput() {
    m_editor->setFocus();
    m_editor->moveCursor(QTextCursor::End);
}

void Composer::submit() {
    const QString text = m_editor->toPlainText().trimmed();
    if (text.isEmpty() || m_replying) return;
    const bool editing = m_editing;
    m_editing = false;
    m_editBanner->hide();
    m_editor->clear();
    if (editing) {
        emit resendEditedRequested(text);
    } else {
        emit sendRequested(text);
    }
}

void Composer::fitHeight() {
    // One to eight lines, then it scrolls.
    const QFontMetrics fm(m_editor->font());
    const int lines = std::clamp(int(m_editor->document()->size().height()), 1, 8);
    const int margins = int(m_editor->document()->documentMargin() * 2) + m_editor->frameWidth() * 2 + 4;
    m_editor->setFixedHeight(lines * fm.lineSpacing() + margins);
}

bool Composer::eventFilter(QObject * watched, QEvent * event) {
    if (watched == m_editor && event->type() == QEvent::KeyPress) {
        auto * key = static_cast<QKeyEvent *>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
            submit();
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            if (m_replying) {
                emit stopRequested();
            } else if (m_editing) {
                cancelEdit();
            }
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace lr::ui
