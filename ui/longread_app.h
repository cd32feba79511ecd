#pragma once
// Everything the desktop app is made of, wired together: settings, the conversation
// database (with a clear way out when it cannot be opened), the engine thread, the session
// controller, the server on its model and the main window. main.cpp makes one; the end-to-end test makes two in a row
// (a restart) on the same files.

#include <QSettings>
#include <QString>

#include <memory>

#include "app/core/app_settings.h"
#include "app/core/database.h"
#include "app/core/engine_host.h"
#include "app/core/server_host.h"
#include "app/core/session_controller.h"

namespace lr::ui {

class MainWindow;

struct LongreadAppOptions {
    std::unique_ptr<QSettings> settings;           // AppSettings::userStore() in the app
    bool interactive = true;                       // ask what to do when the database cannot be opened
    app::EngineHost::EngineFactory engineFactory;  // empty: the real engine (LlmEngine)
    QString modelPath;                             // load this model instead of the last one
    QString documentPath;                          // open this document at start
};

class LongreadApp {
public:
    explicit LongreadApp(LongreadAppOptions options);
    ~LongreadApp();

    // Opens the database (offering to retry or to move a damaged file aside), builds the
    // window, shows it, starts the controller. False when there is no database to work with
    // (the user chose to quit, or, not interactive, it failed: databaseError() says why).
    bool start();

    const QString & databaseError() const { return m_databaseError; }
    MainWindow * window() const { return m_window.get(); }
    app::SessionController * controller() const { return m_controller.get(); }
    app::EngineHost * engine() const { return m_engine.get(); }
    app::ServerHost * server() const { return m_server.get(); }
    app::AppSettings & settings() { return m_settings; }

private:
    bool openDatabase();

    LongreadAppOptions m_options;
    app::AppSettings m_settings;
    std::unique_ptr<app::Database> m_db;
    std::unique_ptr<app::EngineHost> m_engine;
    std::unique_ptr<app::SessionController> m_controller;
    std::unique_ptr<app::ServerHost> m_server;  // serves the controller's model
    std::unique_ptr<MainWindow> m_window;
    QString m_databaseError;
};

}  // namespace lr::ui
