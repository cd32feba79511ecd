// The layer budget's shape as a stored setting: it round-trips through the app's settings
// storage (the defaults new conversations start with) and a conversation's JSON, a bad stored
// name falls back, and changing it rebuilds the session.
#include <QtTest>

#include <QTemporaryDir>

#include "app/core/app_settings.h"
#include "app/core/engine_settings.h"

using namespace lr;
using namespace lr::app;

class TestLayerBudgetSettings : public QObject {
    Q_OBJECT
private slots:
    void roundTripsThroughTheSettingsStorage() {
        QTemporaryDir dir;
        const QString file = dir.filePath("settings.ini");
        for (KvLayerBudget shape : {KvLayerBudget::pyramid, KvLayerBudget::inverse, KvLayerBudget::uniform}) {
            EngineSettings s;
            s.kv.policy = KvPolicy::snapkv;
            s.kv.layer_budget = shape;
            AppSettings(std::make_unique<QSettings>(file, QSettings::IniFormat)).setEngineDefaults(s);
            // A new AppSettings on the same file, as after a restart.
            const EngineSettings back = AppSettings(std::make_unique<QSettings>(file, QSettings::IniFormat)).engineDefaults();
            QCOMPARE(back.kv.layer_budget, shape);
            QCOMPARE(back.kv.policy, KvPolicy::snapkv);
        }
    }

    void storedByName() {
        EngineSettings s;
        s.kv.layer_budget = KvLayerBudget::inverse;
        QCOMPARE(toJson(s).value("layerBudget").toString(), QStringLiteral("inverse"));
        const EngineSettings back = engineSettingsFromJson(toJson(s), EngineSettings{});
        QCOMPARE(back.kv.layer_budget, KvLayerBudget::inverse);
    }

    void aBadStoredNameFallsBack() {
        EngineSettings defaults;
        defaults.kv.layer_budget = KvLayerBudget::pyramid;
        const EngineSettings s = engineSettingsFromJson({{"layerBudget", "steep"}, {"kBits", 8}}, defaults);
        QCOMPARE(s.kv.layer_budget, KvLayerBudget::pyramid);
        QCOMPARE(s.kv.k_bits, 8u);
        QCOMPARE(engineSettingsFromJson({{"layerBudget", 3}}, defaults).kv.layer_budget, KvLayerBudget::pyramid);
    }

    void changingItRebuildsTheSession() {
        EngineSettings a, b;
        a.kv.policy = b.kv.policy = KvPolicy::h2o;
        b.kv.layer_budget = KvLayerBudget::pyramid;
        QVERIFY(!same_session(sessionOptions(a), sessionOptions(b)));
        QVERIFY(same_session(sessionOptions(b), sessionOptions(b)));
        QCOMPARE(policyDescription(b.kv), QStringLiteral("h2o 20% (recent 50%, 4 sinks), pyramid layers, warm-up 100 tokens"));
    }
};

QTEST_GUILESS_MAIN(TestLayerBudgetSettings)
#include "test_layer_budget_settings.moc"
