// The cache panel's monitoring rows (retention, eviction rate, refusals, time selecting) in
// plain words, and the settings panel's warm-up and automatic prefill chunk, which travel
// through the settings like the other cache settings.
#include <QLabel>
#include <QSpinBox>
#include <QtTest>

#include "ui/cache_panel.h"
#include "ui/cache_settings_panel.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;

class TestCacheMonitoring : public QObject {
    Q_OBJECT

    static QString text(const CachePanel & panel, const char * key) { return panel.valueLabel(QString::fromLatin1(key))->text(); }

private slots:
    void thePanelShowsHowHardThePolicyWorks() {
        CachePanel panel;
        CacheSnapshot s{.hasSession = true};
        s.kv.tokens_written = 200;
        s.kv.retention_ratio = 0.25;
        s.kv.evictions_per_1k = 750;
        s.kv.refusals = 2;
        s.kv.selection_ms = {{"h2o", 12.4}, {"snapkv", 3.25}};
        // Evictions are counted over the full-attention layers, kept and seen per layer.
        s.kv.layer_kinds = {{.kind = KvLayerKind::full, .n_layers = 4}, {.kind = KvLayerKind::sliding_window, .n_layers = 2}};
        s.kv.evicted_tokens = 600;
        s.kv.tokens_kept = 50;
        s.kv.tokens_seen = 200;
        panel.setSnapshot(s);
        QCOMPARE(text(panel, "evicted"), QStringLiteral("150 a layer (kept 50 of 200 seen)"));
        QCOMPARE(text(panel, "retention"), QStringLiteral("25.0% of the tokens given"));
        QCOMPARE(text(panel, "evictionRate"), QStringLiteral("750.0 per 1,000 tokens written"));
        QCOMPARE(text(panel, "refusals"), QStringLiteral("2 (the tokens would not fit)"));
        QCOMPARE(text(panel, "selecting"), QStringLiteral("h2o: 12 ms, snapkv: 3.25 ms"));
        QVERIFY(!panel.valueLabel(QStringLiteral("retention"))->toolTip().isEmpty());
    }

    void aCacheThatEvictedNothingSaysSo() {
        CachePanel panel;
        CacheSnapshot s{.hasSession = true};
        panel.setSnapshot(s);
        QCOMPARE(text(panel, "retention"), QStringLiteral("100.0% of the tokens given"));
        QCOMPARE(text(panel, "evictionRate"), QStringLiteral("\u2014 (nothing written yet)"));
        QCOMPARE(text(panel, "refusals"), QStringLiteral("none"));
        QCOMPARE(text(panel, "selecting"), QStringLiteral("none (nothing evicted)"));
    }

    void warmupAndAutomaticChunkReachTheSettings() {
        CacheSettingsPanel panel;
        panel.warmupBox()->setValue(128);
        panel.chunkBox()->setValue(0);
        QCOMPARE(panel.chunkBox()->text(), QStringLiteral("Automatic"));
        EngineSettings s = panel.settings();
        QCOMPARE(s.kv.warmup_tokens, 128u);
        QCOMPARE(s.chunkTokens, kAutoChunk);
        QVERIFY(validationError(s).isEmpty());
        QVERIFY(!panel.warmupBox()->toolTip().isEmpty());
        // Stored and read back as the other settings are.
        const EngineSettings back = engineSettingsFromJson(toJson(s), EngineSettings{});
        QCOMPARE(back.kv.warmup_tokens, 128u);
        QCOMPARE(back.chunkTokens, kAutoChunk);
        s.kv.warmup_tokens = 64;
        s.chunkTokens = 96;
        panel.setSettings(s);
        QCOMPARE(panel.warmupBox()->value(), 64);
        QCOMPARE(panel.chunkBox()->value(), 96);
        // A stored value out of range falls back to the defaults as a whole.
        QJsonObject bad = toJson(s);
        bad.insert(QStringLiteral("warmupTokens"), double(1 << 21));
        QCOMPARE(engineSettingsFromJson(bad, EngineSettings{}).kv.warmup_tokens, EngineSettings{}.kv.warmup_tokens);
    }
};

QTEST_MAIN(TestCacheMonitoring)
#include "test_cache_monitoring.moc"
