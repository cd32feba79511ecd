#include "model_list_model.h"

#include <QBrush>
#include <QGuiApplication>
#include <QPalette>

namespace lr::app {

QString formatBytes(quint64 bytes) { return QString::fromStdString(format_bytes(bytes)); }

QString verdictText(const MemoryPlan & plan) {
    const QString total = formatBytes(plan.resident_bytes());
    switch (plan.verdict) {
        case MemoryVerdict::fits: return QStringLiteral("fits (%1)").arg(total);
        case MemoryVerdict::needs_disk: return QStringLiteral("needs the disk tier (%1)").arg(total);
        case MemoryVerdict::wont_fit: return QStringLiteral("won't fit: lower the context or enable compression");
    }
    return {};
}

int ModelListModel::rowCount(const QModelIndex & parent) const { return parent.isValid() ? 0 : int(m_entries.size()); }
int ModelListModel::columnCount(const QModelIndex & parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ModelListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
        case NameColumn: return QStringLiteral("Model");
        case SourceColumn: return QStringLiteral("Found in");
        case ArchitectureColumn: return QStringLiteral("Architecture");
        case QuantizationColumn: return QStringLiteral("Quantization");
        case SizeColumn: return QStringLiteral("Size");
        case ContextColumn: return QStringLiteral("Trained context");
        case MemoryColumn: return QStringLiteral("Memory at the chosen context");
        default: return {};
    }
}

Qt::ItemFlags ModelListModel::flags(const QModelIndex & index) const {
    if (!index.isValid() || !checkIndex(index)) return Qt::NoItemFlags;
    // Unsupported rows stay selectable, so their reason can be read and copied.
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

QVariant ModelListModel::data(const QModelIndex & index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ModelEntry & e = m_entries[size_t(index.row())];
    const MemoryPlan & plan = m_plans[size_t(index.row())];
    switch (role) {
        case PathRole: return e.path;
        case SupportedRole: return e.supported;
        case VerdictRole: return e.supported ? int(plan.verdict) : -1;
        case ProblemRole: return e.problem;
        case Qt::ToolTipRole:
            if (!e.supported) return QStringLiteral("Cannot be used: %1").arg(e.problem);
            if (index.column() == MemoryColumn) return QString::fromStdString(plan.message);
            return e.path;
        case Qt::ForegroundRole:
            if (!e.supported) return QGuiApplication::palette().brush(QPalette::Disabled, QPalette::Text);
            return {};
        case Qt::DisplayRole:
            switch (index.column()) {
                case NameColumn: return e.name;
                case SourceColumn: return e.source;
                case ArchitectureColumn: return e.architecture.isEmpty() ? QStringLiteral("?") : e.architecture;
                case QuantizationColumn: return e.quantization;
                case SizeColumn: return formatBytes(e.fileBytes);
                case ContextColumn: return e.nCtxTrain ? QVariant(e.nCtxTrain) : QVariant(QStringLiteral("?"));
                case MemoryColumn: return e.supported ? verdictText(plan) : QStringLiteral("unsupported: %1").arg(e.problem);
                default: return {};
            }
        default: return {};
    }
}

void ModelListModel::setEntries(std::vector<ModelEntry> entries) {
    beginResetModel();
    m_entries = std::move(entries);
    replan();
    endResetModel();
}

void ModelListModel::setSettings(const EngineSettings & settings) {
    m_settings = settings;
    replan();
    if (!m_entries.empty()) emit dataChanged(index(0, MemoryColumn), index(rowCount() - 1, MemoryColumn));
}

void ModelListModel::replan() {
    const MachineMemory machine = probeMachine(m_settings);
    m_plans.assign(m_entries.size(), MemoryPlan{});
    for (size_t i = 0; i < m_entries.size(); ++i) {
        if (m_entries[i].supported) m_plans[i] = planFor(m_entries[i].shape, m_settings, machine);
    }
}

const ModelEntry * ModelListModel::entryAt(int row) const { return row >= 0 && row < rowCount() ? &m_entries[size_t(row)] : nullptr; }
const MemoryPlan * ModelListModel::planAt(int row) const { return row >= 0 && row < rowCount() ? &m_plans[size_t(row)] : nullptr; }

}  // namespace lr::app
