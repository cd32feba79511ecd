#include "document_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/icon_provider.h"
#include "ui/theme.h"

namespace lr::ui {

QString durationText(double ms) {
    if (ms < 0) return QObject::tr("estimating\u2026");
    const int s = qRound(ms / 1000.0);
    if (s < 1) return QObject::tr("less than a second");
    if (s < 60) return QObject::tr("%1 s").arg(s);
    return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
}

DocumentPanel::DocumentPanel(const IconProvider & icons, QWidget * parent) : QFrame(parent), m_icons(icons) {
    setObjectName(QStringLiteral("documentPanel"));
    setAccessibleName(tr("Document"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad * 2, theme::kGap, theme::kPad * 2, theme::kGap);
    layout->setSpacing(theme::kGap);

    auto * row = new QHBoxLayout;
    row->setSpacing(theme::kGap);
    m_icon = new QLabel(this);
    row->addWidget(m_icon);
    auto * text = new QVBoxLayout;
    text->setSpacing(0);
    m_title = new QLabel(this);
    QFont bold = font();
    bold.setWeight(QFont::DemiBold);
    m_title->setFont(bold);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status = new QLabel(this);
    m_status->setFont(theme::captionFont(font()));
    // Wraps rather than widening the window as the progress text grows (a whole repaint).
    m_status->setWordWrap(true);
    text->addWidget(m_title);
    text->addWidget(m_status);
    row->addLayout(text, 1);
    m_progress = new QProgressBar(this);
    m_progress->setAccessibleName(tr("Reading progress"));
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(true);
    row->addWidget(m_progress);
    m_stop = new QToolButton(this);
    m_stop->setAccessibleName(tr("Stop reading the document"));
    m_stop->setToolTip(tr("Stop reading the document into the context"));
    m_stop->setAutoRaise(true);
    row->addWidget(m_stop);
    m_summarize = new QPushButton(tr("Summarize"), this);
    m_summarize->setAccessibleName(tr("Summarize the document"));
    m_summarize->setToolTip(tr("Summarize the whole document: one pass when it fits, else map-reduce over chunks (Ctrl+Shift+S)"));
    row->addWidget(m_summarize);
    m_remove = new QToolButton(this);
    m_remove->setAccessibleName(tr("Remove the document"));
    m_remove->setToolTip(tr("Take the document out of this conversation"));
    m_remove->setAutoRaise(true);
    row->addWidget(m_remove);
    layout->addLayout(row);

    m_banner = new QFrame(this);
    m_banner->setObjectName(QStringLiteral("banner"));
    auto * bannerLayout = new QVBoxLayout(m_banner);
    bannerLayout->setContentsMargins(theme::kPad, theme::kGap, theme::kPad, theme::kGap);
    m_message = new QLabel(m_banner);
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bannerLayout->addWidget(m_message);
    auto * actions = new QHBoxLayout;
    m_bannerSummarize = new QPushButton(tr("Summarize it (map-reduce)"), m_banner);
    m_bannerSummarize->setAccessibleName(tr("Summarize the whole document in chunks"));
    m_raise = new QPushButton(m_banner);
    m_raise->setAccessibleName(tr("Raise the context"));
    m_settings = new QPushButton(tr("Cache settings\u2026"), m_banner);
    m_settings->setAccessibleName(tr("Open the cache settings"));
    m_again = new QPushButton(tr("Read it again"), m_banner);
    m_again->setAccessibleName(tr("Read the document again"));
    for (QPushButton * b : {m_bannerSummarize, m_raise, m_settings, m_again}) actions->addWidget(b);
    actions->addStretch(1);
    bannerLayout->addLayout(actions);
    layout->addWidget(m_banner);

    connect(m_stop, &QToolButton::clicked, this, &DocumentPanel::stopReadingRequested);
    connect(m_remove, &QToolButton::clicked, this, &DocumentPanel::removeRequested);
    connect(m_summarize, &QPushButton::clicked, this, &DocumentPanel::summarizeRequested);
    connect(m_bannerSummarize, &QPushButton::clicked, this, &DocumentPanel::summarizeRequested);
    connect(m_raise, &QPushButton::clicked, this, [this] { emit raiseContextRequested(contextThatFits()); });
    connect(m_settings, &QPushButton::clicked, this, &DocumentPanel::cacheSettingsRequested);
    connect(m_again, &QPushButton::clicked, this, &DocumentPanel::readAgainRequested);
    setState({});
    refreshStyle();
}

void DocumentPanel::setTrainedContext(uint32_t tokens) {
    m_trainedContext = tokens;
    setState(m_state);
}

uint32_t DocumentPanel::contextThatFits() const {
    const app::ContextMeasure & m = m_state.measure;
    const uint64_t needed = uint64_t(m.promptTokens) + m.reserveTokens;
    if (needed == 0 || needed > m_trainedContext) return 0;
    const uint32_t rounded = uint32_t((needed + 255) / 256 * 256);
    return std::min(rounded, m_trainedContext);
}

void DocumentPanel::setState(const app::DocumentState & s) {
    m_state = s;
    using app::DocumentPhase;
    if (s.phase == DocumentPhase::none) {
        hide();
        return;
    }
    const QLocale locale;
    m_title->setText(s.title);
    m_title->setToolTip(s.path);

    QStringList facts;
    if (!s.format.isEmpty()) facts << s.format.toUpper();
    if (s.fileBytes > 0) facts << locale.formattedDataSize(s.fileBytes, 1, QLocale::DataSizeTraditionalFormat);
    if (s.tokens >= 0 && s.measure.contextLimit > 0) {
        facts << tr("%1 tokens of a %2-token context").arg(locale.toString(s.tokens), locale.toString(s.measure.contextLimit));
    } else if (s.tokens >= 0) {
        facts << tr("%1 tokens").arg(locale.toString(s.tokens));
    }
    QString status;
    switch (s.phase) {
        case DocumentPhase::loading: status = tr("Reading the file\u2026"); break;
        case DocumentPhase::reading:
            if (s.progress.total > 0) {
                status = tr("Reading into the context: %1 of %2 tokens, %3 left")
                             .arg(locale.toString(s.progress.done), locale.toString(s.progress.total), durationText(s.progress.etaMs));
                if (s.progress.restored > 0) status += tr(" (%1 restored from the prefix cache)").arg(locale.toString(s.progress.restored));
            } else {
                status = tr("Measuring\u2026");
            }
            break;
        case DocumentPhase::inContext:
            status = s.restoredTokens > 0 ? tr("In the context (restored from the prefix cache)") : tr("In the context");
            break;
        case DocumentPhase::tooLong: status = tr("Not in the context: too long"); break;
        case DocumentPhase::stopped: status = tr("Not in the context: reading stopped"); break;
        case DocumentPhase::failed: status = tr("Could not be used"); break;
        case DocumentPhase::none: break;
    }
    if (s.summarizing) status += tr(" \u00b7 being summarized\u2026");
    facts << status;
    m_status->setText(facts.join(QStringLiteral("  \u00b7  ")));

    const bool reading = s.phase == DocumentPhase::reading || s.phase == DocumentPhase::loading;
    m_progress->setVisible(reading);
    m_stop->setVisible(s.phase == DocumentPhase::reading);
    if (s.phase == DocumentPhase::reading && s.progress.total > 0) {
        m_progress->setRange(0, int(s.progress.total));
        m_progress->setValue(int(s.progress.done));
        m_progress->setFormat(QStringLiteral("%p%"));
    } else {
        m_progress->setRange(0, 0);  // busy
    }
    m_summarize->setVisible(s.phase == DocumentPhase::inContext || s.phase == DocumentPhase::stopped);

    const bool showBanner = s.phase == DocumentPhase::tooLong || s.phase == DocumentPhase::failed || s.phase == DocumentPhase::stopped ||
                            (!s.message.isEmpty() && s.phase == DocumentPhase::inContext);
    m_banner->setVisible(showBanner);
    m_message->setText(s.message);
    m_bannerSummarize->setVisible(s.phase == DocumentPhase::tooLong);
    const uint32_t fits = contextThatFits();
    m_raise->setVisible(s.phase == DocumentPhase::tooLong && fits > s.measure.contextLimit);
    m_raise->setText(tr("Raise the context to %1 tokens").arg(locale.toString(fits)));
    m_raise->setToolTip(tr("Use a %1-token context from the next turn (the model was trained for %2); needs more memory")
                            .arg(locale.toString(fits), locale.toString(m_trainedContext)));
    m_settings->setVisible(s.phase == DocumentPhase::tooLong);
    m_again->setVisible(s.phase == DocumentPhase::stopped || (s.phase == DocumentPhase::failed && s.tokens >= 0));
    // Setting the style sheet polishes every child again: only when the tone changes.
    if (isProblem() != m_problemTone) refreshStyle();
    // Shown last: showing a widget lays its window out at once, with the children as they
    // are then (all of them, the first time: the window would widen for good).
    show();
}

bool DocumentPanel::isProblem() const {
    return m_state.phase == app::DocumentPhase::tooLong || m_state.phase == app::DocumentPhase::failed;
}

void DocumentPanel::refreshStyle() {
    const QPalette & p = palette();
    m_icon->setPixmap(m_icons.icon(QStringLiteral("document")).pixmap(QSize(24, 24)));
    m_stop->setIcon(m_icons.icon(QStringLiteral("stop")));
    m_remove->setIcon(m_icons.icon(QStringLiteral("close")));
    m_summarize->setIcon(m_icons.icon(QStringLiteral("summarize")));
    QPalette caption = m_status->palette();
    caption.setColor(QPalette::WindowText, theme::subtleText(p));
    m_status->setPalette(caption);
    m_problemTone = isProblem();
    const QColor tone = m_problemTone ? theme::caution(p) : theme::accent(p);
    setStyleSheet(QStringLiteral("QFrame#documentPanel { border-bottom: 1px solid %1; }"
                                 "QFrame#banner { background: %2; border: 1px solid %3; border-radius: %4px; }")
                      .arg(theme::border(p).name(), theme::mix(p.color(QPalette::Base), tone, 0.12).name(),
                           theme::mix(p.color(QPalette::Base), tone, 0.5).name())
                      .arg(theme::kRadius - 4));
}

}  // namespace lr::ui
