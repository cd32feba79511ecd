// The adaptive mode in the app: the settings panel's Tier management, Demotion order and
// Prefetch choices reach the settings (and the settings file, by name), and the cache
// panel lists the automatic decisions only when there are some.
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QtTest>

#include "app/core/engine_settings.h"
#include "support/eventually.h"
#include "ui/cache_panel.h"
#include "ui/cache_settings_panel.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestAdaptPanels : public QObject {
    Q_OBJECT

private slots:
    void settingsPanelChoicesReachTheSettings() {
        CacheSettingsPanel panel;
        EngineSettings s;
        s.kv.adapt = true;
        s.kv.demotion = KvDemotion::fifo;
        s.kv.prefetch_layers = 0;
        panel.setSettings(s);
        QCOMPARE(panel.adaptBox()->currentData().toBool(), true);
        QCOMPARE(panel.demotionBox()->currentData().toInt(), int(KvDemotion::fifo));
        QCOMPARE(panel.prefetchBox()->currentData().toInt(), 0);
        for (QComboBox * box : {panel.adaptBox(), panel.demotionBox(), panel.prefetchBox()}) {
            QVERIFY(!box->toolTip().isEmpty());
            QVERIFY(!box->accessibleName().isEmpty());
        }

        QSignalSpy edited(&panel, &CacheSettingsPanel::settingsEdited);
        panel.adaptBox()->setCurrentIndex(panel.adaptBox()->findData(false));
        panel.demotionBox()->setCurrentIndex(panel.demotionBox()->findData(int(KvDemotion::lru)));
        panel.prefetchBox()->setCurrentIndex(panel.prefetchBox()->findData(2));
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 1, kEventuallyMs);  // debounced into one
        const EngineSettings out = panel.settings();
        QVERIFY(!out.kv.adapt);
        QCOMPARE(int(out.kv.demotion), int(KvDemotion::lru));
        QCOMPARE(out.kv.prefetch_layers, 2u);
    }

    void settingsFileKeepsThemByName() {
        EngineSettings s;
        s.kv.adapt = true;
        s.kv.demotion = KvDemotion::lru;
        s.kv.prefetch_layers = 2;
        const QJsonObject json = toJson(s);
        QCOMPARE(json.value("demotion").toString(), QStringLiteral("lru"));
        const EngineSettings back = engineSettingsFromJson(json, EngineSettings{});
        QVERIFY(back.kv.adapt);
        QCOMPARE(int(back.kv.demotion), int(KvDemotion::lru));
        QCOMPARE(back.kv.prefetch_layers, 2u);
        // A depth out of range falls back to the defaults as a whole.
        QJsonObject bad = json;
        bad.insert("prefetchLayers", 7);
        QCOMPARE(engineSettingsFromJson(bad, EngineSettings{}).kv.prefetch_layers, 1u);
    }

    void cachePanelListsTheDecisions() {
        CachePanel panel;
        QWidget * section = nullptr;
        for (QLabel * l : panel.findChildren<QLabel *>()) {
            if (l->accessibleName() == QStringLiteral("Automatic decisions")) section = l->parentWidget();
        }
        QVERIFY(section);
        CacheSnapshot s{.hasSession = true};
        panel.setSnapshot(s);
        QVERIFY(panel.adaptDecisionRows().isEmpty());
        QVERIFY(section->isHidden());
        s.kv.move_ms = 40;
        s.kv.fetch_wait_ms = 12.5;
        s.kv.bytes_moved = 8 << 20;
        s.kv.adapt_decisions = {
            {.at_s = 2.0, .ubatch = 12, .what = "prefetch 1 -> 2 layers ahead", .why = "a layer holds 0.1 MiB"},
            {.at_s = 3.5, .ubatch = 16, .what = "recent window 25% -> 50% of the budget", .why = "short chat: 300 tokens held"}};
        panel.setSnapshot(s);
        QCOMPARE(panel.adaptDecisionRows(),
                 (QStringList{QStringLiteral("2.0 s: prefetch 1 -> 2 layers ahead (a layer holds 0.1 MiB)"),
                              QStringLiteral("3.5 s: recent window 25% -> 50% of the budget (short chat: 300 tokens held)")}));
        QVERIFY(!section->isHidden());
        panel.setSnapshot({});  // no session: the section hides with the numbers
        QVERIFY(section->isHidden());
    }
};

QTEST_MAIN(TestAdaptPanels)
#include "test_adapt_panels.moc"
