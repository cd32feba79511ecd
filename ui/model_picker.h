#pragma once
// Choosing a model: the bundled one and every GGUF found in the usual places (scanned in the
// background), with architecture, size, quantization, trained context and the planner's
// estimate at the chosen context. Unsupported files are listed with the reason. Folders can
// be added (remembered) and any file opened.

#include <QDialog>
#include <QFutureWatcher>

#include <stop_token>

#include "app/core/engine_settings.h"
#include "app/core/model_catalog.h"

class QLabel;
class QSpinBox;
class QTableView;
class QPushButton;
class QSortFilterProxyModel;

namespace lr::app {
class AppSettings;
class ModelListModel;
}  // namespace lr::app

namespace lr::ui {

class IconProvider;

class ModelPicker : public QDialog {
    Q_OBJECT
public:
    ModelPicker(app::AppSettings & settings, const app::EngineSettings & engine, const QString & currentPath, const IconProvider & icons,
                QWidget * parent = nullptr);
    ~ModelPicker() override;

    // The model chosen (a path, or kBundledModelPath), once accepted.
    QString chosenPath() const { return m_chosen; }
    // Scans the usual places again (in the background).
    void rescan();
    bool isScanning() const { return m_watcher.isRunning(); }

    app::ModelListModel * model() const { return m_model; }
    QTableView * table() const { return m_table; }

private:
    void scanFinished();
    void selectionChanged();
    void addFolder();
    void openFile();
    void choose();
    int selectedRow() const;

    app::AppSettings & m_settings;
    app::EngineSettings m_engine;
    QString m_current;
    QString m_chosen;
    app::ModelListModel * m_model;
    QSortFilterProxyModel * m_sorted;
    QTableView * m_table;
    QSpinBox * m_context;
    QLabel * m_status;
    QLabel * m_detail;
    QPushButton * m_use;
    QFutureWatcher<std::vector<app::ModelEntry>> m_watcher;
    std::stop_source m_stop;
};

}  // namespace lr::ui
