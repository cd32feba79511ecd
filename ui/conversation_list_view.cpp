#include "conversation_list_view.h"

#include <QAction>
#include <QApplication>
#include <QDateTime>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/core/conversation_list_model.h"
#include "ui/icon_provider.h"
#include "ui/theme.h"

namespace lr::ui {
namespace {

QString relativeTime(qint64 ms) {
    const QDateTime when = QDateTime::fromMSecsSinceEpoch(ms);
    const qint64 secs = when.secsTo(QDateTime::currentDateTime());
    if (secs < 60) return QStringLiteral("just now");
    if (secs < 3600) return QStringLiteral("%1 min ago").arg(secs / 60);
    if (when.date() == QDate::currentDate()) return when.toString(QStringLiteral("HH:mm"));
    if (when.date().daysTo(QDate::currentDate()) == 1) return QStringLiteral("yesterday");
    return when.toString(QStringLiteral("d MMM yyyy"));
}

// Two lines per conversation: the title, and when it was last used.
class ConversationDelegate final : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    QSize sizeHint(const QStyleOptionViewItem & option, const QModelIndex &) const override {
        const QFontMetrics title(option.font);
        const QFontMetrics caption(theme::captionFont(option.font));
        return {200, title.height() + caption.height() + 2 * theme::kGap + 2};
    }

    void paint(QPainter * painter, const QStyleOptionViewItem & option, const QModelIndex & index) const override {
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        opt.text.clear();
        const QWidget * widget = option.widget;
        QStyle * style = widget ? widget->style() : QApplication::style();
        style->drawPrimitive(QStyle::PE_PanelItemViewItem, &opt, painter, widget);

        const bool selected = option.state & QStyle::State_Selected;
        const QPalette & pal = option.palette;
        const QRect r = option.rect.adjusted(theme::kPad, theme::kGap / 2, -theme::kPad, -theme::kGap / 2);
        painter->save();
        painter->setFont(option.font);
        painter->setPen(pal.color(selected ? QPalette::HighlightedText : QPalette::Text));
        const QFontMetrics fm(option.font);
        const QString title = fm.elidedText(index.data(app::ConversationListModel::TitleRole).toString(), Qt::ElideRight, r.width());
        painter->drawText(QRect(r.left(), r.top() + 2, r.width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter, title);
        const QFont captionFont = theme::captionFont(option.font);
        painter->setFont(captionFont);
        painter->setPen(selected ? pal.color(QPalette::HighlightedText) : theme::subtleText(pal));
        painter->drawText(QRect(r.left(), r.top() + 2 + fm.height(), r.width(), QFontMetrics(captionFont).height()),
                          Qt::AlignLeft | Qt::AlignVCenter,
                          relativeTime(index.data(app::ConversationListModel::UpdatedAtRole).toLongLong()));
        painter->restore();
    }
};

}  // namespace

ConversationListView::ConversationListView(QAbstractItemModel * model, const IconProvider & icons, QWidget * parent)
    : QWidget(parent), m_model(model), m_icons(icons) {
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kGap, theme::kGap, 0, theme::kGap);
    layout->setSpacing(theme::kGap);

    auto * header = new QHBoxLayout;
    auto * title = new QLabel(tr("Conversations"), this);
    title->setFont(theme::titleFont(font()));
    header->addWidget(title, 1);
    m_new = new QToolButton(this);
    m_new->setToolTip(tr("New conversation (Ctrl+N)"));
    m_new->setAccessibleName(tr("New conversation"));
    m_new->setAutoRaise(true);
    m_new->setIconSize(QSize(20, 20));
    header->addWidget(m_new);
    layout->addLayout(header);

    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search titles and messages"));
    m_search->setClearButtonEnabled(true);
    m_search->setAccessibleName(tr("Search conversations"));
    m_search->setToolTip(tr("Search conversation titles and message text (Ctrl+F)"));
    layout->addWidget(m_search);

    m_list = new QListView(this);
    m_list->setModel(model);
    m_list->setItemDelegate(new ConversationDelegate(m_list));
    m_list->setSelectionMode(QAbstractItemView::SingleSelection);
    m_list->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_list->setContextMenuPolicy(Qt::CustomContextMenu);
    m_list->setFrameShape(QFrame::NoFrame);
    m_list->setAccessibleName(tr("Conversation list"));
    m_list->setUniformItemSizes(true);
    layout->addWidget(m_list, 1);

    m_searchDelay.setSingleShot(true);
    m_searchDelay.setInterval(200);
    connect(&m_searchDelay, &QTimer::timeout, this, [this] { emit searchChanged(m_search->text()); });
    connect(m_search, &QLineEdit::textChanged, this, [this] { m_searchDelay.start(); });
    connect(m_new, &QToolButton::clicked, this, &ConversationListView::newConversationRequested);
    connect(m_list->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex & current) {
        if (!m_settingCurrent && current.isValid())
            emit conversationSelected(current.data(app::ConversationListModel::IdRole).toLongLong());
    });
    connect(m_list, &QListView::customContextMenuRequested, this, &ConversationListView::showContextMenu);

    auto * rename = new QAction(tr("Rename"), m_list);
    rename->setShortcut(Qt::Key_F2);
    rename->setShortcutContext(Qt::WidgetShortcut);
    connect(rename, &QAction::triggered, this, &ConversationListView::renameCurrent);
    auto * remove = new QAction(tr("Delete"), m_list);
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetShortcut);
    connect(remove, &QAction::triggered, this, &ConversationListView::deleteCurrent);
    m_list->addActions({rename, remove});
    refreshIcons();
}

void ConversationListView::refreshIcons() { m_new->setIcon(m_icons.icon(QStringLiteral("new"))); }

qint64 ConversationListView::currentId() const {
    const QModelIndex i = m_list->currentIndex();
    return i.isValid() ? i.data(app::ConversationListModel::IdRole).toLongLong() : 0;
}

void ConversationListView::setCurrentConversation(qint64 id) {
    m_settingCurrent = true;
    const auto * model = static_cast<app::ConversationListModel *>(m_model);
    const int row = model->rowOf(id);
    if (row >= 0) {
        m_list->setCurrentIndex(m_model->index(row, 0));
    } else {
        m_list->clearSelection();
        m_list->setCurrentIndex({});
    }
    m_settingCurrent = false;
}

void ConversationListView::focusSearch() {
    m_search->setFocus();
    m_search->selectAll();
}

void ConversationListView::renameCurrent() {
    const qint64 id = currentId();
    if (id == 0) return;
    bool ok = false;
    const QString title = QInputDialog::getText(this, tr("Rename conversation"), tr("Title:"), QLineEdit::Normal,
                                                m_list->currentIndex().data().toString(), &ok);
    if (ok && !title.trimmed().isEmpty()) emit renameRequested(id, title);
}

void ConversationListView::deleteCurrent() {
    const qint64 id = currentId();
    if (id == 0) return;
    const QString title = m_list->currentIndex().data().toString();
    const auto answer = QMessageBox::question(this, tr("Delete conversation"),
                                              tr("Delete \u201C%1\u201D with its messages and document? This cannot be undone.").arg(title),
                                              QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer == QMessageBox::Yes) emit deleteRequested(id);
}

void ConversationListView::showContextMenu(const QPoint & at) {
    const QModelIndex index = m_list->indexAt(at);
    if (!index.isValid()) return;
    m_list->setCurrentIndex(index);
    QMenu menu(this);
    menu.addAction(m_icons.icon(QStringLiteral("edit")), tr("Rename\tF2"), this, &ConversationListView::renameCurrent);
    menu.addAction(m_icons.icon(QStringLiteral("delete")), tr("Delete\tDel"), this, &ConversationListView::deleteCurrent);
    menu.exec(m_list->viewport()->mapToGlobal(at));
}

}  // namespace lr::ui
