#include "chat_view.h"

#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "app/core/message_list_model.h"
#include "ui/icon_provider.h"
#include "ui/message_bubble.h"
#include "ui/theme.h"

namespace lr::ui {

ChatView::ChatView(app::MessageListModel * model, const IconProvider & icons, QWidget * parent)
    : QWidget(parent), m_model(model), m_icons(icons) {
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_stack = new QStackedWidget(this);
    layout->addWidget(m_stack);

    // The empty state: what a new user does first.
    m_empty = new QWidget(m_stack);
    m_empty->setAccessibleName(tr("Getting started"));
    auto * emptyOuter = new QVBoxLayout(m_empty);
    emptyOuter->addStretch(2);
    auto * card = new QWidget(m_empty);
    card->setMaximumWidth(560);
    auto * cardLayout = new QVBoxLayout(card);
    cardLayout->setSpacing(theme::kPad);
    auto * logo = new QLabel(card);
    logo->setPixmap(m_icons.icon(QStringLiteral("longread"), QColor()).pixmap(QSize(64, 64)));
    logo->setAlignment(Qt::AlignHCenter);
    cardLayout->addWidget(logo);
    auto * headline = new QLabel(tr("Chat with a long document, on your own machine"), card);
    QFont big = theme::titleFont(font());
    big.setPointSizeF(big.pointSizeF() * 1.2);
    headline->setFont(big);
    headline->setAlignment(Qt::AlignHCenter);
    headline->setWordWrap(true);
    cardLayout->addWidget(headline);
    m_emptyModel = new QLabel(card);
    m_emptyModel->setAlignment(Qt::AlignHCenter);
    m_emptyModel->setWordWrap(true);
    cardLayout->addWidget(m_emptyModel);
    auto * steps = new QLabel(tr("<ol style='margin-left:0'>"
                                 "<li>Drop a <b>.txt, .md, .pdf or .html</b> file anywhere in this window, or open one.</li>"
                                 "<li>Ask a question about it below, or press <b>Summarize</b>: long documents are "
                                 "summarized in chunks, so nothing is cut off.</li>"
                                 "<li>Watch the <b>cache panel</b> on the right: where the KV cache lives, how it is "
                                 "used, and what the settings change.</li></ol>"),
                              card);
    steps->setWordWrap(true);
    steps->setTextFormat(Qt::RichText);
    cardLayout->addWidget(steps);
    auto * buttons = new QHBoxLayout;
    buttons->addStretch(1);
    auto * openDoc = new QPushButton(m_icons.icon(QStringLiteral("document")), tr("Open a document\u2026"), card);
    openDoc->setAccessibleName(tr("Open a document"));
    openDoc->setToolTip(tr("Open a .txt, .md, .pdf or .html file (Ctrl+O)"));
    auto * chooseModel = new QPushButton(m_icons.icon(QStringLiteral("model")), tr("Choose a model\u2026"), card);
    chooseModel->setAccessibleName(tr("Choose a model"));
    chooseModel->setToolTip(tr("Use a GGUF model from LM Studio, GPT4All, Ollama, Hugging Face or a file (Ctrl+Shift+O)"));
    buttons->addWidget(openDoc);
    buttons->addWidget(chooseModel);
    buttons->addStretch(1);
    m_emptyButtons = {openDoc, chooseModel};
    cardLayout->addLayout(buttons);
    auto * cardRow = new QHBoxLayout;
    cardRow->addStretch(1);
    cardRow->addWidget(card, 4);
    cardRow->addStretch(1);
    emptyOuter->addLayout(cardRow);
    emptyOuter->addStretch(3);
    connect(openDoc, &QPushButton::clicked, this, &ChatView::openDocumentRequested);
    connect(chooseModel, &QPushButton::clicked, this, &ChatView::chooseModelRequested);
    m_stack->addWidget(m_empty);

    m_scroll = new QScrollArea(m_stack);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_scroll->setAccessibleName(tr("Conversation"));
    m_content = new QWidget(m_scroll);
    m_column = new QVBoxLayout(m_content);
    m_column->setContentsMargins(theme::kPad * 2, theme::kPad, theme::kPad * 2, theme::kPad);
    m_column->setSpacing(theme::kPad);
    m_column->addStretch(1);
    m_scroll->setWidget(m_content);
    m_stack->addWidget(m_scroll);

    QScrollBar * bar = m_scroll->verticalScrollBar();
    connect(bar, &QScrollBar::valueChanged, this, [this, bar](int value) { m_stickToBottom = value >= bar->maximum() - 24; });
    connect(bar, &QScrollBar::rangeChanged, this, [this, bar](int, int max) {
        if (m_stickToBottom) bar->setValue(max);
    });

    m_updateTimer.setSingleShot(true);
    m_updateTimer.setInterval(33);
    connect(&m_updateTimer, &QTimer::timeout, this, &ChatView::flushUpdates);
    connect(m_model, &QAbstractItemModel::modelReset, this, &ChatView::rebuild);
    connect(m_model, &QAbstractItemModel::rowsInserted, this,
            [this](const QModelIndex &, int first, int last) { insertRows(first, last); });
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, [this](const QModelIndex &, int first, int last) { removeRows(first, last); });
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex & a, const QModelIndex & b, const QList<int> & roles) {
                for (int r = a.row(); r <= b.row(); ++r) m_dirtyRows.insert(r);
                // The end of a message is shown at once; streaming text is coalesced.
                if (roles.contains(app::MessageListModel::StateRole)) {
                    flushUpdates();
                } else if (!m_updateTimer.isActive()) {
                    m_updateTimer.start();
                }
            });
    rebuild();
}

MessageBubble * ChatView::makeBubble(int row) {
    auto * b = new MessageBubble(m_model->messages()[size_t(row)], m_icons, m_content);
    connect(b, &MessageBubble::editRequested, this, &ChatView::editLastRequested);
    connect(b, &MessageBubble::regenerateRequested, this, &ChatView::regenerateRequested);
    return b;
}

void ChatView::rebuild() {
    for (MessageBubble * b : m_bubbles) delete b;
    m_bubbles.clear();
    m_dirtyRows.clear();
    for (int r = 0; r < m_model->rowCount(); ++r) {
        m_bubbles.push_back(makeBubble(r));
        m_column->insertWidget(m_column->count(), m_bubbles.back());
    }
    m_stickToBottom = true;
    updateActions();
    updateEmptyState();
    scrollToBottom();
}

void ChatView::insertRows(int first, int last) {
    for (int r = first; r <= last; ++r) {
        MessageBubble * b = makeBubble(r);
        m_bubbles.insert(m_bubbles.begin() + r, b);
        // The layout holds a stretch first, then the bubbles in order.
        m_column->insertWidget(r + 1, b);
    }
    m_stickToBottom = true;
    updateActions();
    updateEmptyState();
}

void ChatView::removeRows(int first, int last) {
    for (int r = last; r >= first; --r) {
        delete m_bubbles[size_t(r)];
        m_bubbles.erase(m_bubbles.begin() + r);
    }
    m_dirtyRows.clear();
    updateActions();
    updateEmptyState();
}

void ChatView::flushUpdates() {
    m_updateTimer.stop();
    for (int r : std::as_const(m_dirtyRows)) {
        if (r >= 0 && r < int(m_bubbles.size()) && r < m_model->rowCount())
            m_bubbles[size_t(r)]->setMessage(m_model->messages()[size_t(r)]);
    }
    m_dirtyRows.clear();
}

void ChatView::setReplying(bool replying) {
    m_replying = replying;
    updateActions();
}

void ChatView::updateActions() {
    int lastUser = -1;
    for (int r = int(m_bubbles.size()) - 1; r >= 0; --r) {
        if (m_bubbles[size_t(r)]->message().role == QLatin1String("user")) {
            lastUser = r;
            break;
        }
    }
    const int last = int(m_bubbles.size()) - 1;
    for (int r = 0; r <= last; ++r) {
        const bool assistant = m_bubbles[size_t(r)]->message().role == QLatin1String("assistant");
        m_bubbles[size_t(r)]->setActions(!m_replying && r == lastUser, !m_replying && assistant && r == last && lastUser == r - 1);
    }
}

void ChatView::updateEmptyState() { m_stack->setCurrentWidget(m_bubbles.empty() ? m_empty : static_cast<QWidget *>(m_scroll)); }

bool ChatView::showsEmptyState() const { return m_stack->currentWidget() == m_empty; }

void ChatView::setModelDescription(const QString & text) { m_emptyModel->setText(text); }

void ChatView::scrollToBottom() {
    QScrollBar * bar = m_scroll->verticalScrollBar();
    bar->setValue(bar->maximum());
}

void ChatView::refreshStyle() {
    for (MessageBubble * b : m_bubbles) b->refreshStyle();
    m_emptyButtons[0]->setIcon(m_icons.icon(QStringLiteral("document")));
    m_emptyButtons[1]->setIcon(m_icons.icon(QStringLiteral("model")));
    QPalette p = m_emptyModel->palette();
    p.setColor(QPalette::WindowText, theme::subtleText(palette()));
    m_emptyModel->setPalette(p);
}

}  // namespace lr::ui
