#pragma once
// The model picker's table: one row per model found, with the planner's estimate of the
// memory it needs at the chosen context. Unsupported files are rows too, with the reason.

#include <QAbstractTableModel>

#include <vector>

#include "app/core/engine_settings.h"
#include "app/core/model_catalog.h"

namespace lr::app {

class ModelListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, SourceColumn, ArchitectureColumn, QuantizationColumn, SizeColumn, ContextColumn, MemoryColumn, ColumnCount };
    enum Roles { PathRole = Qt::UserRole + 1, SupportedRole, VerdictRole, ProblemRole };

    using QAbstractTableModel::QAbstractTableModel;

    int rowCount(const QModelIndex & parent = {}) const override;
    int columnCount(const QModelIndex & parent = {}) const override;
    QVariant data(const QModelIndex & index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex & index) const override;

    void setEntries(std::vector<ModelEntry> entries);  // modelReset
    // The settings the estimate is for (contextTokens 0: each model's trained context).
    // Emits dataChanged for the memory column.
    void setSettings(const EngineSettings & settings);
    const ModelEntry * entryAt(int row) const;
    const MemoryPlan * planAt(int row) const;

private:
    void replan();

    std::vector<ModelEntry> m_entries;
    std::vector<MemoryPlan> m_plans;
    EngineSettings m_settings;
};

// "fits: ...", "needs the disk tier: ...", "won't fit: ...".
QString verdictText(const MemoryPlan & plan);
QString formatBytes(quint64 bytes);

}  // namespace lr::app
