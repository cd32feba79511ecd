#pragma once
// The cache panel's "Health" area: what the KV cache's health monitor found at its latest
// check (a row per finding: severity, what is wrong, and what was repaired), and how many
// checks and repairs it has run. Fed from the KvStats in each CacheSnapshot.

#include <QWidget>

#include <vector>

#include "engine/api/kv_health.h"

class QLabel;

namespace lr::ui {

class HealthSection : public QWidget {
    Q_OBJECT
public:
    explicit HealthSection(QWidget * parent = nullptr);

    void setFindings(const std::vector<KvHealthFinding> & findings, uint64_t checks, uint64_t repairs);
    void clear();  // no session: nothing checked
    void refreshStyle();

    QString summary() const;   // "3 checks, 1 repair" ...
    QStringList rows() const;  // each finding's text, in order

    static QString severityTitle(KvHealthSeverity severity);  // "Warning"
    static QString checkTitle(KvHealthCheck check);           // "Disk space"

private:
    QLabel * m_summary;
    QList<QLabel *> m_rows;
    std::vector<KvHealthSeverity> m_severities;  // of m_rows, for their colours
};

}  // namespace lr::ui
