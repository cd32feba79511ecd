#pragma once
// The live KV cache panel (the right dock): a bar per tier (VRAM or the RAM arena, host
// RAM, disk; absent tiers shown as absent), a row per kind of layer memory the model has
// ("Full attention: 22 layers, 12.3 MiB"), hit rate and bytes moved over time (TimeChart),
// prefill and decode speed, context used of the limit, evictions and restored tokens, the
// policy and codecs; how hard the policy works (retention, evictions per 1,000 tokens,
// refusals, time spent selecting). Fed by CacheSnapshot values a few times a second; samples the latest
// one for the charts four times a second. While the app serves, a section on its server.

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include <deque>
#include <optional>

#include <QPointF>

#include "app/core/cache_snapshot.h"

class QLabel;
class QProgressBar;

namespace lr::ui {

class HealthSection;
class ServerSection;
class TierBar;
class TimeChart;

class CachePanel : public QWidget {
    Q_OBJECT
public:
    explicit CachePanel(QWidget * parent = nullptr);

    void setSnapshot(const app::CacheSnapshot & snapshot);
    // "CPU, 4 threads" or a CUDA device: names the device tier (RAM arena or VRAM).
    void setBackend(const QString & backend);
    void refreshStyle();

    static constexpr int kSampleIntervalMs = 250;
    static constexpr int kHistorySeconds = 60;
    // The top of a chart's axis for values up to `highest`: 1, 2 or 5 times a power of ten,
    // at least 1.2x it (readable labels, which change seldom).
    static double axisTop(double highest);

    const std::optional<app::CacheSnapshot> & snapshot() const { return m_snapshot; }
    TierBar * tierBar(int tier) const { return m_tiers[tier]; }
    QLabel * valueLabel(const QString & key) const;
    // The per-layer-kind rows' texts, in order.
    QStringList layerKindRows() const;
    int chartPoints() const;
    // The app's server, while it serves (its own cache, not the chat's).
    ServerSection * serverSection() const { return m_server; }
    // The adaptive mode's latest decisions, one line each, newest last.
    QStringList adaptDecisionRows() const;
    // What the cache's health monitor found (the "Health" area).
    HealthSection * healthSection() const { return m_health; }

private:
    void sample();
    void showNumbers();
    void showLayerKinds(const std::vector<KvLayerKindStats> & kinds);
    // Retention, eviction rate, refusals and time selecting.
    void showMonitoring(const KvStats & kv);

    std::optional<app::CacheSnapshot> m_snapshot;
    std::optional<app::CacheSnapshot> m_previousSample;
    QString m_backend;
    QLabel * m_policy;
    QLabel * m_empty;
    ServerSection * m_server;
    TierBar * m_tiers[3];
    QWidget * m_layerKinds;  // one QLabel per layer kind
    QList<QLabel *> m_layerKindRows;
    QProgressBar * m_context;
    QHash<QString, QLabel *> m_values;
    HealthSection * m_health;
    TimeChart * m_hitChart;
    TimeChart * m_movedChart;
    std::deque<QPointF> m_hitHistory;    // (seconds since start, %)
    std::deque<QPointF> m_movedHistory;  // (seconds since start, MiB/s)
    QTimer m_sampler;
    QElapsedTimer m_clock;
    // The adaptive mode: moves and waits, and its decisions (shown while it has any).
    void showAdaptDecisions(const KvStats & kv);
    QWidget * m_adapt;
    QLabel * m_moves;
    QLabel * m_decisions;
};

}  // namespace lr::ui
