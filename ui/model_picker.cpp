#include "model_picker.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "app/core/app_settings.h"
#include "app/core/engine_requests.h"
#include "app/core/model_list_model.h"
#include "ui/icon_provider.h"
#include "ui/theme.h"

namespace lr::ui {

ModelPicker::ModelPicker(app::AppSettings & settings, const app::EngineSettings & engine, const QString & currentPath,
                         const IconProvider & icons, QWidget * parent)
    : QDialog(parent), m_settings(settings), m_engine(engine), m_current(currentPath) {
    setWindowTitle(tr("Choose a model"));
    setAccessibleName(tr("Choose a model"));
    resize(980, 520);
    auto * layout = new QVBoxLayout(this);
    layout->setSpacing(theme::kGap);

    auto * intro = new QLabel(tr("Models found in LM Studio, GPT4All, Ollama, the Hugging Face cache, ~/models and the folders "
                                 "you add. Only each file's header is read."),
                              this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto * top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Estimate memory at a context of"), this));
    m_context = new QSpinBox(this);
    m_context->setRange(0, 1 << 24);
    m_context->setSingleStep(1024);
    m_context->setSpecialValueText(tr("each model's trained context"));
    m_context->setSuffix(tr(" tokens"));
    m_context->setValue(int(engine.contextTokens));
    m_context->setAccessibleName(tr("Context for the memory estimate"));
    m_context->setToolTip(tr("The context the memory estimate is for; the planner says whether the model fits at it."));
    top->addWidget(m_context);
    top->addStretch(1);
    m_status = new QLabel(this);
    top->addWidget(m_status);
    layout->addLayout(top);

    m_model = new app::ModelListModel(this);
    m_sorted = new QSortFilterProxyModel(this);
    m_sorted->setSourceModel(m_model);
    m_table = new QTableView(this);
    m_table->setModel(m_sorted);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setSortingEnabled(false);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(app::ModelListModel::NameColumn, QHeaderView::Interactive);
    m_table->setColumnWidth(app::ModelListModel::NameColumn, 230);
    m_table->setColumnWidth(app::ModelListModel::SourceColumn, 150);
    m_table->setAccessibleName(tr("Models found"));
    m_table->setWordWrap(false);
    layout->addWidget(m_table, 1);

    m_detail = new QLabel(this);
    m_detail->setWordWrap(true);
    m_detail->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_detail->setMinimumHeight(QFontMetrics(font()).lineSpacing() * 2);
    layout->addWidget(m_detail);

    auto * buttons = new QHBoxLayout;
    auto * add = new QPushButton(icons.icon(QStringLiteral("folder")), tr("Add a folder\u2026"), this);
    add->setAccessibleName(tr("Add a model folder"));
    add->setToolTip(tr("Look for GGUF files in a folder of yours, now and every time"));
    auto * open = new QPushButton(icons.icon(QStringLiteral("document")), tr("Open a file\u2026"), this);
    open->setAccessibleName(tr("Open a model file"));
    open->setToolTip(tr("Use any .gguf file"));
    auto * cancel = new QPushButton(tr("Cancel"), this);
    cancel->setAccessibleName(tr("Cancel"));
    m_use = new QPushButton(icons.icon(QStringLiteral("check")), tr("Use this model"), this);
    m_use->setAccessibleName(tr("Use this model"));
    m_use->setDefault(true);
    m_use->setEnabled(false);
    buttons->addWidget(add);
    buttons->addWidget(open);
    buttons->addStretch(1);
    buttons->addWidget(cancel);
    buttons->addWidget(m_use);
    layout->addLayout(buttons);

    connect(add, &QPushButton::clicked, this, &ModelPicker::addFolder);
    connect(open, &QPushButton::clicked, this, &ModelPicker::openFile);
    connect(cancel, &QPushButton::clicked, this, &QDialog::reject);
    connect(m_use, &QPushButton::clicked, this, &ModelPicker::choose);
    connect(m_table, &QTableView::doubleClicked, this, &ModelPicker::choose);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ModelPicker::selectionChanged);
    connect(m_context, &QSpinBox::valueChanged, this, [this](int value) {
        m_engine.contextTokens = uint32_t(value);
        m_model->setSettings(m_engine);
        selectionChanged();
    });
    connect(&m_watcher, &QFutureWatcher<std::vector<app::ModelEntry>>::finished, this, &ModelPicker::scanFinished);
    m_model->setSettings(m_engine);
    rescan();
}

ModelPicker::~ModelPicker() {
    m_stop.request_stop();
    m_watcher.waitForFinished();
}

void ModelPicker::rescan() {
    if (m_watcher.isRunning()) return;
    m_status->setText(tr("Looking for models\u2026"));
    m_model->setEntries({app::ModelCatalog::bundled()});
    m_stop = std::stop_source();
    const std::vector<app::ModelLocation> locations = app::ModelCatalog::standardLocations(QDir::homePath(), m_settings.modelFolders());
    m_watcher.setFuture(QtConcurrent::run([locations, stop = m_stop.get_token()] { return app::ModelCatalog::scan(locations, stop); }));
}

void ModelPicker::scanFinished() {
    std::vector<app::ModelEntry> entries{app::ModelCatalog::bundled()};
    const std::vector<app::ModelEntry> found = m_watcher.result();
    entries.insert(entries.end(), found.begin(), found.end());
    int unsupported = 0;
    for (const app::ModelEntry & e : found) unsupported += e.supported ? 0 : 1;
    m_model->setEntries(entries);
    m_table->resizeColumnToContents(app::ModelListModel::QuantizationColumn);
    m_table->resizeColumnToContents(app::ModelListModel::SizeColumn);
    m_table->resizeColumnToContents(app::ModelListModel::ArchitectureColumn);
    m_status->setText(found.empty() ? tr("No other models found; add a folder or open a file.")
                                    : tr("%n model file(s) found", nullptr, int(found.size())) +
                                          (unsupported ? tr(", %n not usable (see why)", nullptr, unsupported) : QString()));
    for (int r = 0; r < m_model->rowCount(); ++r) {
        if (m_model->entryAt(r)->path == m_current) m_table->selectRow(m_sorted->mapFromSource(m_model->index(r, 0)).row());
    }
}

int ModelPicker::selectedRow() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : m_sorted->mapToSource(rows.first()).row();
}

void ModelPicker::selectionChanged() {
    const int row = selectedRow();
    const app::ModelEntry * e = m_model->entryAt(row);
    m_use->setEnabled(e && e->supported);
    if (!e) {
        m_detail->clear();
        return;
    }
    if (!e->supported) {
        m_detail->setText(tr("<b>%1</b> cannot be used: %2").arg(e->name.toHtmlEscaped(), e->problem.toHtmlEscaped()));
        return;
    }
    const MemoryPlan * plan = m_model->planAt(row);
    m_detail->setText(tr("<b>%1</b> \u2014 %2<br>%3")
                          .arg(e->name.toHtmlEscaped(), e->path.toHtmlEscaped(), QString::fromStdString(plan->message).toHtmlEscaped()));
}

void ModelPicker::addFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a folder with models"), QDir::homePath());
    if (dir.isEmpty()) return;
    QStringList folders = m_settings.modelFolders();
    if (!folders.contains(dir)) folders << dir;
    m_settings.setModelFolders(folders);
    rescan();
}

void ModelPicker::openFile() {
    const QString file = QFileDialog::getOpenFileName(this, tr("Open a model"), QDir::homePath(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (file.isEmpty()) return;
    const app::ModelEntry e = app::ModelCatalog::inspect(file, tr("Opened"));
    if (!e.supported) {
        m_detail->setText(tr("<b>%1</b> cannot be used: %2").arg(e.name.toHtmlEscaped(), e.problem.toHtmlEscaped()));
        return;
    }
    m_chosen = file;
    accept();
}

void ModelPicker::choose() {
    const app::ModelEntry * e = m_model->entryAt(selectedRow());
    if (!e || !e->supported) return;
    m_chosen = e->path;
    accept();
}

}  // namespace lr::ui
