#pragma once
// The main window: conversations on the left, the chat in the centre (document panel,
// messages, composer), the KV cache in a dock on the right (live panel, retention view,
// settings, with serving on this computer). Follows the system's light or dark palette; every control has an accessible
// name; the menus list the keyboard shortcuts. Drop a document anywhere to read it.

#include <QMainWindow>

#include "app/core/app_settings.h"
#include "app/core/server_host.h"
#include "app/core/session_controller.h"
#include "ui/icon_provider.h"

class QDockWidget;
class QLabel;
class QTabWidget;
class QToolButton;
class QFrame;

namespace lr::ui {

class CachePanel;
class CacheSettingsPanel;
class ChatView;
class Composer;
class ConversationListView;
class DocumentPanel;
class RetentionView;
class AttentionView;
class ServePanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(app::SessionController & controller, app::AppSettings & settings, app::ServerHost & server, QWidget * parent = nullptr);
    ~MainWindow() override;

    enum CacheTab { LiveTab, RetentionTab, AttentionTab, SettingsTab };
    void showCacheTab(CacheTab tab);
    void chooseModel();
    void openDocumentDialog();
    // The message shown above the composer (errors the user should read); empty hides it.
    void showBanner(const QString & message);

    ChatView * chatView() const { return m_chat; }
    Composer * composer() const { return m_composer; }
    DocumentPanel * documentPanel() const { return m_document; }
    CachePanel * cachePanel() const { return m_cache; }
    RetentionView * retentionView() const { return m_retention; }
    AttentionView * attentionView() const { return m_attention; }
    CacheSettingsPanel * settingsPanel() const { return m_settingsPanel; }
    ServePanel * servePanel() const { return m_servePanel; }
    ConversationListView * conversationList() const { return m_conversations; }
    QDockWidget * cacheDock() const { return m_dock; }
    QTabWidget * cacheTabs() const { return m_tabs; }
    QLabel * bannerLabel() const { return m_bannerText; }
    QLabel * modelStatus() const { return m_modelStatus; }
    QLabel * activityStatus() const { return m_activity; }

protected:
    void dragEnterEvent(QDragEnterEvent * event) override;
    void dropEvent(QDropEvent * event) override;
    void changeEvent(QEvent * event) override;
    void closeEvent(QCloseEvent * event) override;

private:
    void buildMenus();
    void connectController();
    void connectServer();
    void refreshStyle();
    void updateTitle();
    void updateActivity();
    void showShortcuts();

    app::SessionController & m_controller;
    app::AppSettings & m_settings;
    app::ServerHost & m_server;
    IconProvider m_icons;
    ConversationListView * m_conversations;
    DocumentPanel * m_document;
    ChatView * m_chat;
    Composer * m_composer;
    QFrame * m_banner;
    QLabel * m_bannerText;
    QToolButton * m_bannerClose;
    QDockWidget * m_dock;
    QTabWidget * m_tabs;
    CachePanel * m_cache;
    RetentionView * m_retention;
    AttentionView * m_attention;  // where the model looks in the document
    CacheSettingsPanel * m_settingsPanel;
    ServePanel * m_servePanel;
    QLabel * m_modelStatus;
    QLabel * m_activity;
    QString m_modelText;
    bool m_restyling = false;
    bool m_restylePending = false;
};

}  // namespace lr::ui
