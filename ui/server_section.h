#pragma once
// The cache panel's "Server" section, shown while the app serves: requests running and
// waiting, completions served, the hit rate of the server's own KV cache, and a row per
// running sequence (tokens held, KV bytes, policy). Fed by ServerSnapshot values a few
// times a second (ServerHost); hidden otherwise.

#include <QWidget>

#include <optional>

#include "app/core/server_snapshot.h"

class QLabel;

namespace lr::ui {

class ServerSection : public QWidget {
    Q_OBJECT
public:
    explicit ServerSection(QWidget * parent = nullptr);

    void setState(const app::ServerState & state);
    void setSnapshot(const app::ServerSnapshot & snapshot);

    QLabel * summaryLabel() const { return m_summary; }
    QLabel * servedLabel() const { return m_served; }
    QLabel * hitRateLabel() const { return m_hitRate; }
    // The running sequences' rows' texts, in the order they came.
    QStringList sequenceRows() const;

private:
    void showSequences(const std::vector<SequenceStats> & sequences);

    QLabel * m_address;
    QLabel * m_summary;
    QLabel * m_served;
    QLabel * m_hitRate;
    QWidget * m_sequences;  // one QLabel per running sequence
    QList<QLabel *> m_sequenceRows;
};

}  // namespace lr::ui
