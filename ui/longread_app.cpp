#include "longread_app.h"

#include <QMessageBox>
#include <QPushButton>

#include "app/core/llm_engine.h"
#include "ui/main_window.h"

namespace lr::ui {

LongreadApp::LongreadApp(LongreadAppOptions options) : m_options(std::move(options)), m_settings(std::move(m_options.settings)) {}

LongreadApp::~LongreadApp() {
    // The window refers to the controller, the controller to the engine and the database.
    if (m_window) m_settings.setWindowLayout(m_window->saveGeometry(), m_window->saveState());
    m_window.reset();
    m_server.reset();
    m_controller.reset();
    m_engine.reset();
    m_db.reset();
    m_settings.sync();
}

bool LongreadApp::openDatabase() {
    const QString path = m_settings.databasePath();
    for (;;) {
        m_db = std::make_unique<app::Database>(path);
        if (m_db->open()) return true;
        m_databaseError = m_db->errorMessage();
        if (!m_options.interactive) return false;

        QMessageBox box;
        box.setIcon(QMessageBox::Warning);
        box.setWindowTitle(QObject::tr("Longread"));
        box.setText(m_db->errorMessage());
        QPushButton * retry = nullptr;
        QPushButton * aside = nullptr;
        switch (m_db->error()) {
            case app::DatabaseError::locked:
                box.setInformativeText(QObject::tr("Close the other Longread, then try again."));
                retry = box.addButton(QObject::tr("Try again"), QMessageBox::AcceptRole);
                break;
            case app::DatabaseError::corrupt:
                box.setInformativeText(
                    QObject::tr("Longread can keep the damaged file next to a new, empty database, so that "
                                "nothing is deleted (a recovery tool may still read it)."));
                aside = box.addButton(QObject::tr("Keep it aside and start a new one"), QMessageBox::AcceptRole);
                break;
            case app::DatabaseError::io: retry = box.addButton(QObject::tr("Try again"), QMessageBox::AcceptRole); break;
            case app::DatabaseError::newerSchema:
            case app::DatabaseError::none: break;
        }
        box.addButton(QObject::tr("Quit"), QMessageBox::RejectRole);
        box.exec();
        if (box.clickedButton() == aside && aside) {
            m_db.reset();
            QString why;
            const QString kept = app::Database::moveAside(path, &why);
            if (kept.isEmpty()) {
                QMessageBox::critical(nullptr, QObject::tr("Longread"), why);
                return false;
            }
            continue;
        }
        if (box.clickedButton() == retry && retry) continue;
        return false;
    }
}

bool LongreadApp::start() {
    if (!openDatabase()) return false;
    app::EngineHost::EngineFactory factory = m_options.engineFactory;
    if (!factory) factory = [] { return std::make_unique<app::LlmEngine>(); };
    m_engine = std::make_unique<app::EngineHost>(std::move(factory));
    if (!m_options.modelPath.isEmpty()) m_settings.setLastModel(m_options.modelPath);
    m_controller = std::make_unique<app::SessionController>(*m_db, *m_engine, m_settings);
    m_server = std::make_unique<app::ServerHost>(m_settings);
    QObject::connect(m_controller.get(), &app::SessionController::weightsChanged, m_server.get(), &app::ServerHost::setWeights);
    m_window = std::make_unique<MainWindow>(*m_controller, m_settings, *m_server);
    m_window->show();
    m_controller->start();
    if (!m_options.documentPath.isEmpty()) {
        // A document given on the command line starts its own conversation.
        m_controller->newConversation();
        m_controller->attachDocument(m_options.documentPath);
    }
    return true;
}

}  // namespace lr::ui
