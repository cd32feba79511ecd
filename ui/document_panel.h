#pragma once
// The conversation's document, above the chat: its name, size and tokens against the
// context; while it is read into the KV cache a progress bar with the time left and Stop;
// and when it does not fit, says so with the options (summarize it, raise the context,
// cache settings) instead of cutting it silently.

#include <QFrame>

#include "app/core/document_state.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QToolButton;

namespace lr::ui {

class IconProvider;

class DocumentPanel : public QFrame {
    Q_OBJECT
public:
    DocumentPanel(const IconProvider & icons, QWidget * parent = nullptr);

    void setState(const app::DocumentState & state);
    // The model's trained context (how far "Raise the context" may go).
    void setTrainedContext(uint32_t tokens);
    void refreshStyle();

    const app::DocumentState & state() const { return m_state; }
    QProgressBar * progressBar() const { return m_progress; }
    QLabel * statusLabel() const { return m_status; }
    QLabel * messageLabel() const { return m_message; }
    QPushButton * raiseContextButton() const { return m_raise; }

signals:
    void summarizeRequested();
    void stopReadingRequested();
    void readAgainRequested();
    void removeRequested();
    void raiseContextRequested(uint32_t tokens);
    void cacheSettingsRequested();

private:
    uint32_t contextThatFits() const;  // 0 when raising the context cannot make it fit
    bool isProblem() const;            // too long or failed: the caution tone

    const IconProvider & m_icons;
    app::DocumentState m_state;
    uint32_t m_trainedContext = 0;
    bool m_problemTone = false;  // the tone the style sheet has
    QLabel * m_icon;
    QLabel * m_title;
    QLabel * m_status;
    QProgressBar * m_progress;
    QToolButton * m_stop;
    QToolButton * m_remove;
    QPushButton * m_summarize;
    QFrame * m_banner;
    QLabel * m_message;
    QPushButton * m_bannerSummarize;
    QPushButton * m_raise;
    QPushButton * m_settings;
    QPushButton * m_again;
};

QString durationText(double ms);

}  // namespace lr::ui
