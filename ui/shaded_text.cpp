#include "shaded_text.h"

#include <algorithm>

namespace lr::ui {

ShadedText::ShadedText(QWidget * parent) : QPlainTextEdit(parent) {
    setReadOnly(true);
    setLineWrapMode(QPlainTextEdit::WidgetWidth);
}

void ShadedText::setShading(std::vector<Span> spans) {
    m_spans = std::move(spans);
    shadeVisible();
}

void ShadedText::resizeEvent(QResizeEvent * event) {
    QPlainTextEdit::resizeEvent(event);
    shadeVisible();
}

void ShadedText::showEvent(QShowEvent * event) {
    QPlainTextEdit::showEvent(event);
    shadeVisible();
}

void ShadedText::scrollContentsBy(int dx, int dy) {
    QPlainTextEdit::scrollContentsBy(dx, dy);
    shadeVisible();
}

void ShadedText::shadeVisible() {
    QTextDocument * doc = document();
    const QRect area = viewport()->rect();
    const int from = cursorForPosition(area.topLeft()).position();
    const int to = cursorForPosition(area.bottomRight()).position();
    const int last = doc->characterCount() - 1;  // the final paragraph separator cannot be selected
    QList<QTextEdit::ExtraSelection> selections;
    auto span = std::lower_bound(m_spans.begin(), m_spans.end(), from, [](const Span & s, int at) { return s.end <= at; });
    for (; span != m_spans.end() && span->begin <= to && span->begin < last; ++span) {
        QTextEdit::ExtraSelection sel{QTextCursor(doc), span->format};
        sel.cursor.setPosition(span->begin);
        sel.cursor.setPosition(std::min(span->end, last), QTextCursor::KeepAnchor);
        selections << sel;
    }
    setExtraSelections(selections);
}

}  // namespace lr::ui
