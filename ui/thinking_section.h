#pragma once
// A reply's thinking, above its answer: a flat toggle with an arrow ("Thinking…" while the
// model thinks and has not answered yet, "Thought for N words" after) that opens the
// thinking text, muted. Collapsed by default; hidden for a reply without thinking.

#include <QWidget>

class QLabel;
class QToolButton;

namespace lr::ui {

class ThinkingSection : public QWidget {
    Q_OBJECT
public:
    explicit ThinkingSection(QWidget * parent = nullptr);

    // `thinking` empty hides the section; `stillThinking`: the reply streams with no answer yet.
    void setThinking(const QString & thinking, bool stillThinking);
    bool isExpanded() const;
    void setExpanded(bool expanded);
    void refreshStyle();

    QToolButton * toggle() const { return m_toggle; }
    QLabel * textLabel() const { return m_text; }

private:
    QToolButton * m_toggle;
    QLabel * m_text;
    QString m_thinking;
};

}  // namespace lr::ui
