#include "thinking_section.h"

#include <QLabel>
#include <QLocale>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/theme.h"

namespace lr::ui {
namespace {

int wordCount(const QString & text) {
    int n = 0;
    bool inWord = false;
    for (const QChar c : text) {
        const bool space = c.isSpace();
        if (!space && !inWord) ++n;
        inWord = !space;
    }
    return n;
}

}  // namespace

ThinkingSection::ThinkingSection(QWidget * parent) : QWidget(parent) {
    auto * column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 4);
    column->setSpacing(2);
    m_toggle = new QToolButton(this);
    m_toggle->setAutoRaise(true);
    m_toggle->setCheckable(true);
    m_toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_toggle->setIconSize(QSize(10, 10));
    m_toggle->setFont(theme::captionFont(font()));
    m_toggle->setFocusPolicy(Qt::StrongFocus);
    m_toggle->setCursor(Qt::PointingHandCursor);
    m_toggle->setAccessibleName(tr("Thinking"));
    column->addWidget(m_toggle, 0, Qt::AlignLeft);
    m_text = new QLabel(this);
    m_text->setTextFormat(Qt::PlainText);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_text->setFont(theme::captionFont(font()));
    m_text->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
    m_text->setAccessibleName(tr("The model's thinking"));
    column->addWidget(m_text);
    connect(m_toggle, &QToolButton::toggled, this, &ThinkingSection::setExpanded);
    setExpanded(false);
    hide();
    refreshStyle();
}

void ThinkingSection::setThinking(const QString & thinking, bool stillThinking) {
    setVisible(!thinking.isEmpty());
    QString summary = tr("Thinking\u2026");
    if (!stillThinking) {
        const int words = wordCount(thinking);
        summary = words == 1 ? tr("Thought for 1 word") : tr("Thought for %1 words").arg(QLocale().toString(words));
    }
    m_toggle->setText(summary);
    m_toggle->setAccessibleDescription(summary);
    if (thinking == m_thinking) return;
    m_thinking = thinking;
    // A collapsed section sets its text when it opens.
    if (isExpanded()) m_text->setText(m_thinking);
}

bool ThinkingSection::isExpanded() const { return m_toggle->isChecked(); }

void ThinkingSection::setExpanded(bool expanded) {
    // Checking the toggle comes back here through toggled().
    if (m_toggle->isChecked() != expanded) {
        m_toggle->setChecked(expanded);
        return;
    }
    m_toggle->setArrowType(expanded ? Qt::DownArrow : Qt::RightArrow);
    m_toggle->setToolTip(expanded ? tr("Hide the model's thinking") : tr("Show the model's thinking"));
    if (expanded) m_text->setText(m_thinking);
    m_text->setVisible(expanded);
}

void ThinkingSection::refreshStyle() {
    const QPalette & p = palette();
    const QColor muted = theme::subtleText(p);
    // Flat whether open or not (a checked tool button is drawn sunken), with a visible focus.
    m_toggle->setStyleSheet(QStringLiteral("QToolButton { color: %1; background: transparent; border: 1px solid transparent; "
                                           "border-radius: 4px; padding: 1px 4px 1px 0px; }"
                                           "QToolButton:hover { color: %2; }"
                                           "QToolButton:focus { border-color: %3; }")
                                .arg(muted.name(), p.color(QPalette::Text).name(), theme::accent(p).name()));
    // NOTE: `border: none` first: with border-left alone, Qt's style sheets draw a native frame instead.
    m_text->setStyleSheet(QStringLiteral("QLabel { color: %1; border: none; border-left: 2px solid %2; padding-left: 8px; }")
                              .arg(muted.name(), theme::mix(muted, p.color(QPalette::Base), 0.4).name()));
}

}  // namespace lr::ui
