#pragma once
// Where the user writes: Enter sends, Shift+Enter starts a new line, Esc stops a reply (or
// cancels an edit). The send button becomes Stop while a reply is written. Attach opens a
// document; Summarize asks for a summary of the conversation's document.

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QToolButton;
class QPushButton;

namespace lr::ui {

class IconProvider;

class Composer : public QWidget {
    Q_OBJECT
public:
    Composer(const IconProvider & icons, QWidget * parent = nullptr);

    void setReplying(bool replying);
    void setCanSummarize(bool can);
    // Puts `text` in the editor to be changed and sent again in place of the last message.
    void beginEdit(const QString & text);
    bool isEditing() const { return m_editing; }
    void focusInput();
    void refreshIcons();

    QPlainTextEdit * editor() const { return m_editor; }
    QPushButton * sendButton() const { return m_send; }
    QToolButton * summarizeButton() const { return m_summarize; }

signals:
    void sendRequested(const QString & text);
    void resendEditedRequested(const QString & text);
    void stopRequested();
    void attachRequested();
    void summarizeRequested();

protected:
    bool eventFilter(QObject * watched, QEvent * event) override;

private:
    void submit();
    void cancelEdit();
    void fitHeight();

    const IconProvider & m_icons;
    QLabel * m_editBanner;
    QPlainTextEdit * m_editor;
    QToolButton * m_attach;
    QToolButton * m_summarize;
    QPushButton * m_send;
    QLabel * m_hint;
    bool m_replying = false;
    bool m_editing = false;
};

}  // namespace lr::ui
