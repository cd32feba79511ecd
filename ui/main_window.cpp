#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/core/document_loader.h"
#include "app/core/engine_requests.h"
#include "ui/about_text.h"
#include "ui/attention_view.h"
#include "ui/cache_panel.h"
#include "ui/cache_settings_panel.h"
#include "ui/chat_view.h"
#include "ui/composer.h"
#include "ui/conversation_list_view.h"
#include "ui/document_panel.h"
#include "ui/model_picker.h"
#include "ui/retention_view.h"
#include "ui/serve_panel.h"
#include "ui/server_section.h"
#include "ui/theme.h"

namespace lr::ui {
namespace {

QScrollArea * scrolled(QWidget * inner, QWidget * parent) {
    auto * area = new QScrollArea(parent);
    area->setWidget(inner);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    return area;
}

}  // namespace

MainWindow::MainWindow(app::SessionController & controller, app::AppSettings & settings, app::ServerHost & server, QWidget * parent)
    : QMainWindow(parent), m_controller(controller), m_settings(settings), m_server(server),
      m_icons(palette().color(QPalette::WindowText)) {
    setWindowTitle(tr("Longread"));
    setWindowIcon(m_icons.icon(QStringLiteral("longread"), QColor()));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

    // Centre: conversations | chat column.
    auto * splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setChildrenCollapsible(false);
    m_conversations = new ConversationListView(controller.conversations(), m_icons, splitter);
    m_conversations->setMinimumWidth(200);
    auto * column = new QWidget(splitter);
    auto * columnLayout = new QVBoxLayout(column);
    columnLayout->setContentsMargins(0, 0, 0, 0);
    columnLayout->setSpacing(0);
    m_document = new DocumentPanel(m_icons, column);
    columnLayout->addWidget(m_document);
    m_chat = new ChatView(controller.messages(), m_icons, column);
    columnLayout->addWidget(m_chat, 1);
    m_banner = new QFrame(column);
    m_banner->setObjectName(QStringLiteral("errorBanner"));
    auto * bannerLayout = new QHBoxLayout(m_banner);
    bannerLayout->setContentsMargins(theme::kPad * 2, theme::kGap, theme::kPad * 2, theme::kGap);
    m_bannerText = new QLabel(m_banner);
    m_bannerText->setWordWrap(true);
    m_bannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_bannerText->setAccessibleName(tr("Message"));
    m_bannerClose = new QToolButton(m_banner);
    m_bannerClose->setAutoRaise(true);
    m_bannerClose->setAccessibleName(tr("Dismiss the message"));
    m_bannerClose->setToolTip(tr("Dismiss"));
    bannerLayout->addWidget(m_bannerText, 1);
    bannerLayout->addWidget(m_bannerClose, 0, Qt::AlignTop);
    m_banner->hide();
    columnLayout->addWidget(m_banner);
    m_composer = new Composer(m_icons, column);
    columnLayout->addWidget(m_composer);
    splitter->addWidget(m_conversations);
    splitter->addWidget(column);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({260, 760});
    setCentralWidget(splitter);

    // Right: the KV cache.
    m_dock = new QDockWidget(tr("KV cache"), this);
    m_dock->setObjectName(QStringLiteral("cacheDock"));
    m_dock->setAccessibleName(tr("KV cache panel"));
    m_dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetFloatable);
    m_tabs = new QTabWidget(m_dock);
    m_tabs->setDocumentMode(true);
    m_tabs->setAccessibleName(tr("KV cache views"));
    m_cache = new CachePanel(m_tabs);
    m_retention = new RetentionView(m_tabs);
    m_attention = new AttentionView(m_tabs);
    // The Settings tab: the cache's settings, then serving (app-wide, as the last ones).
    auto * settingsPage = new QWidget(m_tabs);
    auto * settingsLayout = new QVBoxLayout(settingsPage);
    settingsLayout->setContentsMargins(0, 0, 0, 0);
    settingsLayout->setSpacing(0);
    m_settingsPanel = new CacheSettingsPanel(settingsPage);
    m_servePanel = new ServePanel(settingsPage);
    settingsLayout->addWidget(m_settingsPanel);
    settingsLayout->addWidget(m_servePanel);
    m_tabs->addTab(scrolled(m_cache, m_tabs), tr("Live"));
    m_tabs->addTab(m_retention, tr("Retention"));
    m_tabs->addTab(m_attention, tr("Attention"));
    m_tabs->addTab(scrolled(settingsPage, m_tabs), tr("Settings"));
    m_tabs->setTabToolTip(LiveTab, tr("Where the KV cache lives and how it is used, updated live"));
    m_tabs->setTabToolTip(RetentionTab, tr("The document shaded by what the cache keeps of it"));
    m_tabs->setTabToolTip(AttentionTab, tr("Where the model looks in the document, by layer, and what the cache evicted"));
    m_tabs->setTabToolTip(SettingsTab,
                          tr("Cache policy, codecs, tier budgets, context, with the planner's prediction; serving on this computer"));
    m_dock->setWidget(m_tabs);
    m_dock->setMinimumWidth(340);
    addDockWidget(Qt::RightDockWidgetArea, m_dock);

    m_modelStatus = new QLabel(this);
    m_modelStatus->setAccessibleName(tr("Model"));
    m_activity = new QLabel(this);
    m_activity->setAccessibleName(tr("Activity"));
    statusBar()->addWidget(m_modelStatus, 1);
    statusBar()->addPermanentWidget(m_activity);

    buildMenus();
    connectController();
    connectServer();
    refreshStyle();

    if (!restoreGeometry(m_settings.windowGeometry())) resize(1440, 900);
    restoreState(m_settings.windowState());
    updateTitle();
    updateActivity();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
    auto add = [this](QMenu * menu, const QString & text, const QKeySequence & key, const QString & icon, auto slot) {
        QAction * a = menu->addAction(text);
        if (!key.isEmpty()) a->setShortcut(key);
        if (!icon.isEmpty()) a->setIcon(m_icons.icon(icon));
        a->setShortcutContext(Qt::WindowShortcut);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };
    QMenu * file = menuBar()->addMenu(tr("&File"));
    add(file, tr("&New conversation"), QKeySequence::New, QStringLiteral("new"), [this] { m_controller.newConversation(); });
    add(file, tr("&Open a document\u2026"), QKeySequence::Open, QStringLiteral("document"), [this] { openDocumentDialog(); });
    add(file, tr("Choose a &model\u2026"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), QStringLiteral("model"),
        [this] { chooseModel(); });
    file->addSeparator();
    add(file, tr("&Quit"), QKeySequence::Quit, QString(), [this] { close(); });

    QMenu * chat = menuBar()->addMenu(tr("&Conversation"));
    add(chat, tr("&Summarize the document"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), QStringLiteral("summarize"),
        [this] { m_controller.summarizeDocument(); });
    add(chat, tr("S&top the reply"), QKeySequence(Qt::CTRL | Qt::Key_Period), QStringLiteral("stop"), [this] { m_controller.stop(); });
    add(chat, tr("&Regenerate the reply"), QKeySequence(Qt::CTRL | Qt::Key_R), QStringLiteral("regenerate"),
        [this] { m_controller.regenerate(); });
    add(chat, tr("&Edit the last message"), QKeySequence(Qt::CTRL | Qt::Key_E), QStringLiteral("edit"), [this] {
        if (!m_controller.isReplying() && !m_controller.lastPrompt().isEmpty()) m_composer->beginEdit(m_controller.lastPrompt());
    });
    add(chat, tr("&Copy the last reply"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), QStringLiteral("copy"), [this] {
        const auto & rows = m_controller.messages()->messages();
        for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
            if (it->role == QLatin1String("assistant")) {
                QApplication::clipboard()->setText(it->text);
                return;
            }
        }
    });
    chat->addSeparator();
    add(chat, tr("Re&name\u2026"), QKeySequence(Qt::Key_F2), QStringLiteral("edit"), [this] { m_conversations->renameCurrent(); });
    add(chat, tr("&Delete\u2026"), QKeySequence(Qt::CTRL | Qt::Key_Delete), QStringLiteral("delete"),
        [this] { m_conversations->deleteCurrent(); });
    add(chat, tr("Searc&h"), QKeySequence::Find, QStringLiteral("search"), [this] { m_conversations->focusSearch(); });
    add(chat, tr("Write a &message"), QKeySequence(Qt::CTRL | Qt::Key_L), QString(), [this] { m_composer->focusInput(); });

    QMenu * view = menuBar()->addMenu(tr("&View"));
    QAction * toggle = m_dock->toggleViewAction();
    toggle->setText(tr("&KV cache panel"));
    toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K));
    view->addAction(toggle);
    add(view, tr("Cache: &live"), QKeySequence(Qt::ALT | Qt::Key_1), QStringLiteral("cache"), [this] { showCacheTab(LiveTab); });
    add(view, tr("Cache: &retention"), QKeySequence(Qt::ALT | Qt::Key_2), QStringLiteral("eye"), [this] { showCacheTab(RetentionTab); });
    add(view, tr("Cache: &settings"), QKeySequence(Qt::ALT | Qt::Key_3), QStringLiteral("settings"), [this] { showCacheTab(SettingsTab); });
    add(view, tr("Cache: where the model &looks"), QKeySequence(Qt::ALT | Qt::Key_4), QStringLiteral("eye"),
        [this] { showCacheTab(AttentionTab); });

    QMenu * help = menuBar()->addMenu(tr("&Help"));
    add(help, tr("&Keyboard shortcuts"), QKeySequence::HelpContents, QStringLiteral("keyboard"), [this] { showShortcuts(); });
    add(help, tr("&About Longread"), QKeySequence(), QString(), [this] { QMessageBox::about(this, tr("About Longread"), aboutText()); });
}

void MainWindow::showShortcuts() {
    QStringList rows;
    for (QAction * menu : menuBar()->actions()) {
        for (QAction * a : menu->menu()->actions()) {
            if (!a->shortcut().isEmpty()) {
                rows << QStringLiteral("<tr><td>%1</td><td>&nbsp;&nbsp;<b>%2</b></td></tr>")
                            .arg(a->text().remove(QLatin1Char('&')).remove(QChar(0x2026)),
                                 a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped());
            }
        }
    }
    rows << tr("<tr><td>Send / new line</td><td>&nbsp;&nbsp;<b>Enter / Shift+Enter</b></td></tr>")
         << tr("<tr><td>Stop the reply, cancel an edit</td><td>&nbsp;&nbsp;<b>Esc</b></td></tr>");
    QMessageBox box(this);
    box.setWindowTitle(tr("Keyboard shortcuts"));
    box.setText(QStringLiteral("<table>%1</table>").arg(rows.join(QString())));
    box.exec();
}

void MainWindow::connectController() {
    app::SessionController & c = m_controller;
    connect(m_conversations, &ConversationListView::conversationSelected, &c, &app::SessionController::selectConversation);
    connect(m_conversations, &ConversationListView::newConversationRequested, &c, &app::SessionController::newConversation);
    connect(m_conversations, &ConversationListView::renameRequested, &c, &app::SessionController::renameConversation);
    connect(m_conversations, &ConversationListView::deleteRequested, &c, &app::SessionController::deleteConversation);
    connect(m_conversations, &ConversationListView::searchChanged, &c, &app::SessionController::search);

    connect(m_composer, &Composer::sendRequested, this, [this](const QString & text) {
        showBanner(QString());
        m_controller.sendMessage(text);
    });
    connect(m_composer, &Composer::resendEditedRequested, &c, &app::SessionController::resendEdited);
    connect(m_composer, &Composer::stopRequested, &c, &app::SessionController::stop);
    connect(m_composer, &Composer::attachRequested, this, &MainWindow::openDocumentDialog);
    connect(m_composer, &Composer::summarizeRequested, &c, &app::SessionController::summarizeDocument);
    connect(m_chat, &ChatView::editLastRequested, this, [this] { m_composer->beginEdit(m_controller.lastPrompt()); });
    connect(m_chat, &ChatView::regenerateRequested, &c, &app::SessionController::regenerate);
    connect(m_chat, &ChatView::openDocumentRequested, this, &MainWindow::openDocumentDialog);
    connect(m_chat, &ChatView::chooseModelRequested, this, &MainWindow::chooseModel);

    connect(m_document, &DocumentPanel::summarizeRequested, &c, &app::SessionController::summarizeDocument);
    connect(m_document, &DocumentPanel::stopReadingRequested, &c, &app::SessionController::stopReadingDocument);
    connect(m_document, &DocumentPanel::readAgainRequested, &c, &app::SessionController::readDocumentAgain);
    connect(m_document, &DocumentPanel::removeRequested, &c, &app::SessionController::removeDocument);
    connect(m_document, &DocumentPanel::cacheSettingsRequested, this, [this] { showCacheTab(SettingsTab); });
    connect(m_document, &DocumentPanel::raiseContextRequested, this, [this](uint32_t tokens) {
        app::EngineSettings s = m_controller.settings();
        s.contextTokens = tokens;
        m_controller.setSettings(s);
    });
    connect(m_settingsPanel, &CacheSettingsPanel::settingsEdited, &c, &app::SessionController::setSettings);
    connect(m_settingsPanel, &CacheSettingsPanel::saveAsDefaultsRequested, &c, &app::SessionController::saveSettingsAsDefaults);
    connect(m_settingsPanel, &CacheSettingsPanel::threadsEdited, this, [this](int threads) { m_settings.setThreads(threads); });
    connect(m_settingsPanel, &CacheSettingsPanel::cacheDirectoryEdited, this, [this](const QString & dir) {
        if (dir == m_settings.cacheDirectory()) return;
        m_settings.setCacheDirectory(dir);
        app::EngineSettings s = m_controller.settings();
        s.kv.dir = dir.toStdString();
        m_controller.setSettings(s);
    });
    m_settingsPanel->setEngineValues(m_settings.threads(), m_settings.cacheDirectory());

    connect(&c, &app::SessionController::currentConversationChanged, this, [this](qint64 id) {
        m_conversations->setCurrentConversation(id);
        m_retention->setRetention(m_controller.retention());
        m_attention->setRetention(m_controller.retention());
        m_composer->setCanSummarize(m_controller.canSummarize());
        updateTitle();
    });
    connect(c.conversations(), &QAbstractItemModel::dataChanged, this, &MainWindow::updateTitle);
    connect(c.conversations(), &QAbstractItemModel::modelReset, this,
            [this] { m_conversations->setCurrentConversation(m_controller.currentConversation()); });
    connect(c.conversations(), &QAbstractItemModel::rowsInserted, this,
            [this] { m_conversations->setCurrentConversation(m_controller.currentConversation()); });
    connect(&c, &app::SessionController::replyingChanged, this, [this](bool replying) {
        m_composer->setReplying(replying);
        m_chat->setReplying(replying);
        m_composer->setCanSummarize(m_controller.canSummarize());
        updateActivity();
    });
    connect(&c, &app::SessionController::modelLoading, this, [this](const QString & path) {
        m_modelText = tr("Loading %1\u2026")
                          .arg(path == QLatin1String(app::kBundledModelPath) ? tr("the bundled model") : QFileInfo(path).fileName());
        m_modelStatus->setText(m_modelText);
        m_chat->setModelDescription(m_modelText);
        updateActivity();
    });
    connect(&c, &app::SessionController::modelReady, this, [this](const app::ModelInfo & m) {
        const bool bundled = m.path == QLatin1String(app::kBundledModelPath);
        m_modelText = tr("%1 \u00b7 %2 \u00b7 %3 \u00b7 trained for %4 tokens \u00b7 %5")
                          .arg(bundled ? tr("stories260K (bundled demo)") : m.name, m.architecture, m.quantization,
                               QLocale().toString(m.nCtxTrain), m.backend);
        m_modelStatus->setText(m_modelText);
        m_modelStatus->setToolTip(m.path);
        m_chat->setModelDescription(bundled ? tr("Ready with the bundled demo model, stories260K: a tiny story-teller, good for trying "
                                                 "Longread out. For real documents, choose a chat model (Llama, Qwen, Mistral\u2026).")
                                            : tr("Ready with %1.").arg(m.name));
        m_settingsPanel->setModel(m);
        m_document->setTrainedContext(m.nCtxTrain);
        m_cache->setBackend(m.backend);
        if (!m.backendNote.isEmpty()) showBanner(m.backendNote);  // e.g. why the GPU is not used
        updateActivity();
    });
    connect(&c, &app::SessionController::modelFailed, this, [this](const QString & message) {
        m_modelStatus->setText(tr("No model"));
        showBanner(message);
        updateActivity();
    });
    connect(&c, &app::SessionController::documentChanged, this, [this](const app::DocumentState & s) {
        m_document->setState(s);
        m_composer->setCanSummarize(m_controller.canSummarize());
        if (s.phase == app::DocumentPhase::none) {
            m_retention->setRetention(std::nullopt);
            m_attention->setRetention(std::nullopt);
        }
        updateActivity();
    });
    connect(&c, &app::SessionController::settingsChanged, m_settingsPanel, &CacheSettingsPanel::setSettings);
    connect(&c, &app::SessionController::retentionChanged, m_retention, [this](const app::RetentionSnapshot & r) {
        m_retention->setRetention(r);
        m_attention->setRetention(r);
    });
    connect(&c, &app::SessionController::errorOccurred, this, &MainWindow::showBanner);
    connect(&c, &app::SessionController::storageFailed, this, &MainWindow::showBanner);
    connect(&c, &app::SessionController::cacheSnapshot, m_cache, &CachePanel::setSnapshot);
    connect(&c, &app::SessionController::engineBusyChanged, this, &MainWindow::updateActivity);
    connect(m_bannerClose, &QToolButton::clicked, this, [this] { showBanner(QString()); });
}

void MainWindow::connectServer() {
    ServerSection * section = m_cache->serverSection();
    m_servePanel->setServeSettings(m_server.serveSettings());
    m_servePanel->setState(m_server.state());
    section->setState(m_server.state());
    connect(m_servePanel, &ServePanel::serveSettingsEdited, &m_server, &app::ServerHost::setServeSettings);
    connect(&m_server, &app::ServerHost::stateChanged, m_servePanel, &ServePanel::setState);
    connect(&m_server, &app::ServerHost::stateChanged, section, &ServerSection::setState);
    connect(&m_server, &app::ServerHost::snapshotChanged, section, &ServerSection::setSnapshot);
}

void MainWindow::updateTitle() {
    const app::ConversationRecord * c = m_controller.conversations()->find(m_controller.currentConversation());
    setWindowTitle(c ? tr("%1 \u2014 Longread").arg(c->title) : tr("Longread"));
}

void MainWindow::updateActivity() {
    QString text;
    const app::DocumentState & d = m_controller.document();
    if (m_controller.isModelLoading()) {
        text = tr("Loading the model\u2026");
    } else if (m_controller.isReplying()) {
        text = tr("Writing a reply\u2026 (Esc stops)");
    } else if (d.phase == app::DocumentPhase::reading) {
        text = d.progress.total ? tr("Reading the document: %1%").arg(100 * d.progress.done / std::max<uint32_t>(d.progress.total, 1))
                                : tr("Measuring the document\u2026");
    } else if (d.phase == app::DocumentPhase::loading) {
        text = tr("Opening %1\u2026").arg(d.title);
    } else if (m_controller.isModelReady()) {
        text = tr("Ready");
    } else {
        text = tr("No model loaded");
    }
    m_activity->setText(text);
}

void MainWindow::showBanner(const QString & message) {
    m_bannerText->setText(message);
    m_banner->setVisible(!message.isEmpty());
}

void MainWindow::showCacheTab(CacheTab tab) {
    m_dock->show();
    m_dock->raise();
    m_tabs->setCurrentIndex(tab);
}

void MainWindow::openDocumentDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a document"), QString(), app::documentFileFilter());
    if (!path.isEmpty()) m_controller.attachDocument(path);
}

void MainWindow::chooseModel() {
    ModelPicker picker(m_settings, m_controller.settings(), m_controller.model().path, m_icons, this);
    if (picker.exec() == QDialog::Accepted && !picker.chosenPath().isEmpty()) m_controller.loadModel(picker.chosenPath());
}

void MainWindow::dragEnterEvent(QDragEnterEvent * event) {
    if (event->mimeData()->hasUrls()) {
        for (const QUrl & url : event->mimeData()->urls()) {
            if (url.isLocalFile()) {
                event->acceptProposedAction();
                return;
            }
        }
    }
}

void MainWindow::dropEvent(QDropEvent * event) {
    for (const QUrl & url : event->mimeData()->urls()) {
        if (url.isLocalFile()) {
            m_controller.attachDocument(url.toLocalFile());
            event->acceptProposedAction();
            return;
        }
    }
}

void MainWindow::changeEvent(QEvent * event) {
    QMainWindow::changeEvent(event);
    // The system switched between light and dark (or another palette).
    // Deferred: the children receive their new palettes after the window does.
    if ((event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange) && !m_restyling &&
        !m_restylePending) {
        m_restylePending = true;
        QTimer::singleShot(0, this, [this] {
            m_restylePending = false;
            refreshStyle();
        });
    }
}

void MainWindow::refreshStyle() {
    m_restyling = true;
    m_icons.setColor(palette().color(QPalette::WindowText));
    m_conversations->refreshIcons();
    m_composer->refreshIcons();
    m_chat->refreshStyle();
    m_document->refreshStyle();
    m_cache->refreshStyle();
    m_retention->refreshStyle();
    m_attention->refreshStyle();
    m_settingsPanel->refreshStyle();
    m_servePanel->refreshStyle();
    m_bannerClose->setIcon(m_icons.icon(QStringLiteral("close")));
    const QPalette & p = palette();
    m_banner->setStyleSheet(QStringLiteral("QFrame#errorBanner { background: %1; border-top: 1px solid %2; }")
                                .arg(theme::mix(p.color(QPalette::Base), theme::caution(p), 0.14).name(), theme::caution(p).name()));
    m_restyling = false;
}

void MainWindow::closeEvent(QCloseEvent * event) {
    m_settings.setWindowLayout(saveGeometry(), saveState());
    QMainWindow::closeEvent(event);
}

}  // namespace lr::ui
