#include "health_section.h"

#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "ui/theme.h"

namespace lr::ui {

HealthSection::HealthSection(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("KV cache health"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    clear();
}

QString HealthSection::severityTitle(KvHealthSeverity severity) {
    switch (severity) {
        case KvHealthSeverity::info: return tr("Info");
        case KvHealthSeverity::warning: return tr("Warning");
        case KvHealthSeverity::critical: return tr("Critical");
    }
    return {};
}

QString HealthSection::checkTitle(KvHealthCheck check) {
    switch (check) {
        case KvHealthCheck::memory: return tr("Memory");
        case KvHealthCheck::disk_space: return tr("Disk space");
        case KvHealthCheck::fragmentation: return tr("Fragmentation");
        case KvHealthCheck::prefix_cache: return tr("Prefix cache");
        case KvHealthCheck::faults: return tr("Faults");
    }
    return {};
}

void HealthSection::clear() { setFindings({}, 0, 0); }

void HealthSection::setFindings(const std::vector<KvHealthFinding> & findings, uint64_t checks, uint64_t repairs) {
    const QLocale locale;
    if (checks == 0) {
        m_summary->setText(tr("Not checked yet: the checks run once a session exists, then every few seconds."));
    } else {
        const QString counts = (checks == 1 ? tr("1 check") : tr("%1 checks").arg(locale.toString(qulonglong(checks)))) +
                               QStringLiteral(", ") +
                               (repairs == 1 ? tr("1 repair") : tr("%1 repairs").arg(locale.toString(qulonglong(repairs))));
        const bool problems = worst_severity(findings) != KvHealthSeverity::info;
        m_summary->setText(problems ? tr("%1. The latest check found:").arg(counts)
                                    : tr("%1. Nothing wrong at the latest check.").arg(counts));
    }
    while (m_rows.size() > qsizetype(findings.size())) delete m_rows.takeLast();
    while (m_rows.size() < qsizetype(findings.size())) {
        auto * row = new QLabel(this);
        row->setWordWrap(true);
        row->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout()->addWidget(row);
        m_rows << row;
    }
    m_severities.clear();
    for (size_t i = 0; i < findings.size(); ++i) {
        const KvHealthFinding & f = findings[i];
        QString text = tr("%1 \u2014 %2: %3").arg(severityTitle(f.severity), checkTitle(f.check), QString::fromStdString(f.message));
        if (!f.repair.empty()) text += QLatin1Char('\n') + tr("Repaired: %1").arg(QString::fromStdString(f.repair));
        m_rows[qsizetype(i)]->setText(text);
        m_rows[qsizetype(i)]->setAccessibleName(severityTitle(f.severity));
        m_severities.push_back(f.severity);
    }
    refreshStyle();
}

void HealthSection::refreshStyle() {
    const QPalette & p = palette();
    for (qsizetype i = 0; i < m_rows.size(); ++i) {
        const KvHealthSeverity s = m_severities[size_t(i)];
        const QColor colour = s == KvHealthSeverity::critical  ? theme::bad(p)
                              : s == KvHealthSeverity::warning ? theme::caution(p)
                                                               : p.color(QPalette::WindowText);
        QPalette rowPalette = m_rows[i]->palette();
        rowPalette.setColor(QPalette::WindowText, colour);
        m_rows[i]->setPalette(rowPalette);
    }
    m_summary->setFont(theme::captionFont(font()));
}

QString HealthSection::summary() const { return m_summary->text(); }

QStringList HealthSection::rows() const {
    QStringList out;
    for (const QLabel * l : m_rows) out << l->text();
    return out;
}

}  // namespace lr::ui
