#include "cache_panel.h"

#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QVBoxLayout>

#include <cmath>

#include "app/core/model_list_model.h"
#include "ui/health_section.h"
#include "ui/layer_kind_text.h"
#include "ui/server_section.h"
#include "ui/theme.h"
#include "ui/tier_bar.h"
#include "ui/time_chart.h"

namespace lr::ui {
namespace {

QLabel * sectionTitle(const QString & text, QWidget * parent) {
    auto * l = new QLabel(text, parent);
    QFont f = l->font();
    f.setWeight(QFont::DemiBold);
    l->setFont(f);
    return l;
}

}  // namespace

CachePanel::CachePanel(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("KV cache, live"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad, theme::kPad, theme::kPad, theme::kPad);
    layout->setSpacing(theme::kGap);

    m_policy = new QLabel(this);
    m_policy->setWordWrap(true);
    m_policy->setAccessibleName(tr("Policy and codecs"));
    layout->addWidget(m_policy);
    m_empty = new QLabel(tr("No session yet: the numbers appear once the model has read something."), this);
    m_empty->setWordWrap(true);
    layout->addWidget(m_empty);
    m_server = new ServerSection(this);
    layout->addWidget(m_server);

    layout->addWidget(sectionTitle(tr("Where the KV cache lives"), this));
    const QString names[3] = {tr("Device (RAM arena)"), tr("Host RAM"), tr("Disk")};
    for (int i = 0; i < 3; ++i) {
        m_tiers[i] = new TierBar(names[i], this);
        layout->addWidget(m_tiers[i]);
    }

    layout->addWidget(sectionTitle(tr("By layer kind"), this));
    m_layerKinds = new QWidget(this);
    auto * kinds = new QVBoxLayout(m_layerKinds);
    kinds->setContentsMargins(0, 0, 0, 0);
    kinds->setSpacing(2);
    layout->addWidget(m_layerKinds);

    layout->addWidget(sectionTitle(tr("Context"), this));
    m_context = new QProgressBar(this);
    m_context->setAccessibleName(tr("Context used"));
    m_context->setTextVisible(true);
    m_context->setMaximumHeight(18);
    layout->addWidget(m_context);

    auto * form = new QFormLayout;
    form->setHorizontalSpacing(theme::kPad);
    form->setVerticalSpacing(4);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    const std::pair<const char *, QString> rows[] = {
        {"prefill", tr("Prefill")},           {"decode", tr("Decode")},           {"hitRate", tr("Hit rate")},
        {"moved", tr("Moved between tiers")}, {"prefetch", tr("Prefetched")},     {"evicted", tr("Evicted tokens")},
        {"restored", tr("Restored tokens")},  {"metadata", tr("Block metadata")}, {"faults", tr("Faults handled")},
    };
    auto addValueRow = [&](const char * key, const QString & label) {
        auto * value = new QLabel(QStringLiteral("\u2014"), this);
        value->setAccessibleName(label);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        value->setWordWrap(true);
        m_values.insert(QString::fromLatin1(key), value);
        form->addRow(label, value);
    };
    for (const auto & [key, label] : rows) addValueRow(key, label);
    // Monitoring: how hard the policy works.
    addValueRow("retention", tr("Retention"));
    addValueRow("evictionRate", tr("Eviction rate"));
    addValueRow("refusals", tr("Refused"));
    addValueRow("selecting", tr("Time selecting"));
    m_values.value("retention")
        ->setToolTip(tr("Of the tokens each conversation was given, the share its cache still keeps (mean over conversations)"));
    m_values.value("evictionRate")->setToolTip(tr("Token positions evicted for every 1,000 tokens written to the cache"));
    m_values.value("refusals")->setToolTip(tr("Steps the cache refused because their tokens would not fit the context or the tiers"));
    m_values.value("selecting")->setToolTip(tr("Time the cache policy spent choosing what to evict, per policy"));
    m_values.value("prefill")->setToolTip(tr("Prompt and document tokens evaluated per second, in the last prefill"));
    m_values.value("decode")->setToolTip(tr("Tokens generated per second, in the last reply"));
    m_values.value("hitRate")->setToolTip(tr("Of the KV blocks attention read, the share already on the device tier"));
    m_values.value("moved")->setToolTip(tr("Bytes copied between the device, host and disk tiers"));
    m_values.value("evicted")->setToolTip(tr("Token positions the cache policy dropped to stay within its budget"));
    m_values.value("restored")->setToolTip(tr("Tokens whose KV was restored from the prefix cache instead of computed"));
    m_values.value("metadata")
        ->setToolTip(tr("RAM the cache keeps per block besides the tiers: positions, the attention "
                        "each token received (h2o, snapkv) and the key bounds quest ranks pages by"));
    layout->addLayout(form);

    layout->addWidget(sectionTitle(tr("Health"), this));
    m_health = new HealthSection(this);
    layout->addWidget(m_health);

    m_hitChart = new TimeChart(tr("Hit rate (%)"), kHistorySeconds, this);
    m_hitChart->setTop(100);
    layout->addWidget(m_hitChart);
    m_movedChart = new TimeChart(tr("Moved between tiers (MiB/s)"), kHistorySeconds, this);
    m_movedChart->setTop(axisTop(1));  // as the first sample sets it, with nothing moved
    layout->addWidget(m_movedChart);

    m_adapt = new QWidget(this);
    auto * adapt = new QVBoxLayout(m_adapt);
    adapt->setContentsMargins(0, 0, 0, 0);
    adapt->setSpacing(2);
    adapt->addWidget(sectionTitle(tr("Automatic decisions"), m_adapt));
    m_moves = new QLabel(m_adapt);
    m_moves->setWordWrap(true);
    m_moves->setAccessibleName(tr("Moving blocks and waiting for them"));
    adapt->addWidget(m_moves);
    m_decisions = new QLabel(m_adapt);
    m_decisions->setWordWrap(true);
    m_decisions->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_decisions->setAccessibleName(tr("Automatic decisions"));
    m_decisions->setToolTip(tr("What the automatic mode changed (tier budgets, prefetch depth, recent window) and from which measurement"));
    adapt->addWidget(m_decisions);
    layout->addWidget(m_adapt);
    m_adapt->hide();
    layout->addStretch(1);

    m_clock.start();
    m_sampler.setInterval(kSampleIntervalMs);
    connect(&m_sampler, &QTimer::timeout, this, &CachePanel::sample);
    m_sampler.start();
    showNumbers();
    refreshStyle();
}

QLabel * CachePanel::valueLabel(const QString & key) const { return m_values.value(key); }

QStringList CachePanel::layerKindRows() const {
    QStringList rows;
    for (const QLabel * l : m_layerKindRows) rows << l->text();
    return rows;
}

void CachePanel::showLayerKinds(const std::vector<KvLayerKindStats> & kinds) {
    while (m_layerKindRows.size() > qsizetype(kinds.size())) delete m_layerKindRows.takeLast();
    while (m_layerKindRows.size() < qsizetype(kinds.size())) {
        auto * row = new QLabel(m_layerKinds);
        row->setTextInteractionFlags(Qt::TextSelectableByMouse);
        m_layerKinds->layout()->addWidget(row);
        m_layerKindRows << row;
    }
    const QLocale locale;
    for (size_t i = 0; i < kinds.size(); ++i) {
        const KvLayerKindStats & k = kinds[i];
        QLabel * row = m_layerKindRows[qsizetype(i)];
        const QString layers = k.n_layers == 1 ? tr("1 layer") : tr("%1 layers").arg(k.n_layers);
        row->setText(tr("%1: %2, %3").arg(layerKindTitle(k.kind), layers, app::formatBytes(k.bytes)));
        row->setToolTip(tr("Positions each of these layers keeps: %1").arg(locale.toString(qulonglong(k.tokens_kept))));
    }
}

int CachePanel::chartPoints() const { return m_movedChart->pointCount(); }

void CachePanel::setBackend(const QString & backend) {
    m_backend = backend;
    m_tiers[0]->setName(backend.contains(QLatin1String("CUDA"), Qt::CaseInsensitive) ? tr("VRAM (device tier)")
                                                                                     : tr("RAM arena (device tier)"));
}

void CachePanel::setSnapshot(const app::CacheSnapshot & snapshot) {
    m_snapshot = snapshot;
    showNumbers();
}

void CachePanel::showNumbers() {
    const QLocale locale;
    const bool have = m_snapshot && m_snapshot->hasSession;
    m_empty->setVisible(!have);
    if (!have) {
        m_adapt->hide();
        m_policy->setText(tr("Policy: \u2014"));
        for (TierBar * t : m_tiers) t->setAbsent(tr("No session yet."));
        showLayerKinds({});
        m_context->setRange(0, 1);
        m_context->setValue(0);
        m_context->setFormat(tr("no session"));
        m_health->clear();
        return;
    }
    const app::CacheSnapshot & s = *m_snapshot;
    const KvStats & kv = s.kv;
    m_policy->setText(tr("<b>Policy</b> %1<br><b>Codecs</b> %2").arg(s.policy.toHtmlEscaped(), s.codecs.toHtmlEscaped()));
    for (int i = 0; i < 3; ++i) {
        const KvTierStats & t = kv.tiers[size_t(i)];
        if (t.present) {
            m_tiers[i]->setUsage(t.used_bytes, t.capacity_bytes, t.blocks);
        } else {
            m_tiers[i]->setAbsent(tr("This engine build has no %1 tier yet: the whole KV cache is on the tiers that are shown.")
                                      .arg(QString::fromLatin1(t.name)));
        }
    }
    showLayerKinds(kv.layer_kinds);
    m_context->setRange(0, int(std::max<uint32_t>(s.contextLimit, 1)));
    m_context->setValue(int(s.contextUsed));
    m_context->setFormat(tr("%1 of %2 tokens").arg(locale.toString(s.contextUsed), locale.toString(s.contextLimit)));

    auto rate = [&](double r) { return r > 0 ? tr("%1 tok/s").arg(r, 0, 'f', r < 100 ? 1 : 0) : tr("\u2014 (none yet)"); };
    m_values.value("prefill")->setText(rate(s.prefillTokensPerSecond));
    m_values.value("decode")->setText(rate(s.decodeTokensPerSecond));
    m_values.value("hitRate")->setText(
        kv.block_reads == 0 ? tr("\u2014 (no block reads counted yet)")
                            : tr("%1% (%2 of %3 block reads)")
                                  .arg(100.0 * kv.hit_rate(), 0, 'f', 1)
                                  .arg(locale.toString(qulonglong(kv.block_hits)), locale.toString(qulonglong(kv.block_reads))));
    QString moved = tr("%1 (%2 demoted, %3 promoted)")
                        .arg(app::formatBytes(kv.bytes_moved))
                        .arg(locale.toString(qulonglong(kv.demotions)), locale.toString(qulonglong(kv.promotions)));
    if (kv.narrowed_blocks > 0)
        moved += tr(", %1 blocks narrowed to a lower tier's bits").arg(locale.toString(qulonglong(kv.narrowed_blocks)));
    m_values.value("moved")->setText(moved);
    m_values.value("prefetch")
        ->setText(
            tr("%1 blocks, %2 in time").arg(locale.toString(qulonglong(kv.prefetches)), locale.toString(qulonglong(kv.prefetch_hits))));
    // evicted_tokens sums the full-attention layers: shown per layer, like kept and seen.
    uint64_t n_full = 0;
    for (const KvLayerKindStats & k : kv.layer_kinds)
        if (k.kind == KvLayerKind::full) n_full += k.n_layers;
    const uint64_t evicted = n_full > 0 ? kv.evicted_tokens / n_full : kv.evicted_tokens;
    m_values.value("evicted")->setText(tr("%1 a layer (kept %2 of %3 seen)")
                                           .arg(locale.toString(qulonglong(evicted)), locale.toString(qulonglong(kv.tokens_kept)),
                                                locale.toString(qulonglong(kv.tokens_seen))));
    QString restored = locale.toString(qulonglong(kv.restored_tokens));
    if (kv.restored_states > 0) {
        restored += kv.restored_states == 1 ? tr(", with the recurrent states at their end")
                                            : tr(", with recurrent states %1 times").arg(locale.toString(qulonglong(kv.restored_states)));
    }
    if (kv.prefill_ms_saved > 0) restored += tr(" (saved ~%1 of prefill)").arg(QStringLiteral("%1 ms").arg(kv.prefill_ms_saved, 0, 'f', 0));
    m_values.value("restored")->setText(restored);
    m_values.value("metadata")->setText(app::formatBytes(kv.mirror_bytes));
    m_values.value("faults")->setText(
        kv.faults == 0 ? tr("none")
                       : tr("%1 (last: %2)").arg(locale.toString(qulonglong(kv.faults)), QString::fromStdString(kv.last_fault)));
    showAdaptDecisions(kv);
    showMonitoring(kv);
    m_health->setFindings(kv.health, kv.health_checks, kv.health_repairs);
}

QStringList CachePanel::adaptDecisionRows() const {
    return m_decisions->text().isEmpty() ? QStringList{} : m_decisions->text().split(QLatin1Char('\n'));
}

void CachePanel::showAdaptDecisions(const KvStats & kv) {
    m_adapt->setVisible(!kv.adapt_decisions.empty());
    const double mibPerSecond = kv.move_ms > 0 ? double(kv.bytes_moved) / (1 << 20) / (kv.move_ms / 1000) : 0;
    m_moves->setText(tr("Moving blocks took %1 ms (%2 MiB/s); attention waited %3 ms for them.")
                         .arg(kv.move_ms, 0, 'f', 1)
                         .arg(mibPerSecond, 0, 'f', 0)
                         .arg(kv.fetch_wait_ms, 0, 'f', 1));
    QStringList rows;
    for (const KvAdaptDecision & d : kv.adapt_decisions) {
        rows << tr("%1 s: %2 (%3)").arg(d.at_s, 0, 'f', 1).arg(QString::fromStdString(d.what), QString::fromStdString(d.why));
    }
    m_decisions->setText(rows.join(QLatin1Char('\n')));
}

void CachePanel::showMonitoring(const KvStats & kv) {
    const QLocale locale;
    m_values.value("retention")->setText(tr("%1% of the tokens given").arg(100 * kv.retention_ratio, 0, 'f', 1));
    m_values.value("evictionRate")
        ->setText(kv.tokens_written == 0 ? tr("\u2014 (nothing written yet)")
                                         : tr("%1 per 1,000 tokens written").arg(kv.evictions_per_1k, 0, 'f', 1));
    m_values.value("refusals")
        ->setText(kv.refusals == 0 ? tr("none") : tr("%1 (the tokens would not fit)").arg(locale.toString(qulonglong(kv.refusals))));
    QStringList selecting;
    for (const auto & [policy, ms] : kv.selection_ms) {
        selecting << tr("%1: %2 ms").arg(QString::fromStdString(policy)).arg(ms, 0, 'f', ms < 10 ? 2 : 0);
    }
    m_values.value("selecting")->setText(selecting.isEmpty() ? tr("none (nothing evicted)") : selecting.join(QStringLiteral(", ")));
}

double CachePanel::axisTop(double highest) {
    const double want = std::max(highest, 1e-9) * 1.2;
    const double decade = std::pow(10.0, std::floor(std::log10(want)));
    for (double step : {1.0, 2.0, 5.0}) {
        if (step * decade >= want) return step * decade;
    }
    return 10 * decade;
}

void CachePanel::sample() {
    if (!m_snapshot || !m_snapshot->hasSession) return;
    const double now = double(m_clock.elapsed()) / 1000.0;
    const KvStats & kv = m_snapshot->kv;
    // Hit rate only when attention has read blocks: no reads is not "100%".
    if (kv.block_reads > 0) m_hitHistory.emplace_back(now, 100.0 * kv.hit_rate());
    double mibPerSecond = 0;
    if (m_previousSample && kv.bytes_moved >= m_previousSample->kv.bytes_moved) {
        mibPerSecond = double(kv.bytes_moved - m_previousSample->kv.bytes_moved) / (1 << 20) / (kSampleIntervalMs / 1000.0);
    }
    m_movedHistory.emplace_back(now, mibPerSecond);
    m_previousSample = m_snapshot;
    // The x axis is "seconds ago".
    auto plot = [now](std::deque<QPointF> & history, TimeChart * chart) {
        while (!history.empty() && history.front().x() < now - kHistorySeconds) history.pop_front();
        QList<QPointF> points;
        points.reserve(qsizetype(history.size()));
        for (const QPointF & pt : history) points << QPointF(pt.x() - now, pt.y());
        chart->setPoints(std::move(points));
    };
    plot(m_hitHistory, m_hitChart);
    plot(m_movedHistory, m_movedChart);
    double top = 1;
    for (const QPointF & pt : m_movedHistory) top = std::max(top, pt.y());
    m_movedChart->setTop(axisTop(top));
}

void CachePanel::refreshStyle() {
    const QPalette & p = palette();
    QPalette caption = m_empty->palette();
    caption.setColor(QPalette::WindowText, theme::subtleText(p));
    m_empty->setPalette(caption);
    m_health->refreshStyle();
}

}  // namespace lr::ui
