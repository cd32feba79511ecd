// The settings panel's layer budget (offscreen): it shows the conversation's shape, an edit
// reaches the settings it emits, and it is enabled only for the policies it shapes.
#include <QComboBox>
#include <QSignalSpy>
#include <QtTest>

#include "support/eventually.h"
#include "ui/cache_settings_panel.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestLayerBudgetPanel : public QObject {
    Q_OBJECT
private slots:
    void editsTheLayerBudget() {
        CacheSettingsPanel panel;
        EngineSettings s;
        s.kv.policy = KvPolicy::h2o;
        s.kv.layer_budget = KvLayerBudget::inverse;
        panel.setSettings(s);
        QComboBox * box = panel.layerBudgetBox();
        QCOMPARE(KvLayerBudget(box->currentData().toInt()), KvLayerBudget::inverse);
        QVERIFY(box->isEnabled());
        QVERIFY(!box->toolTip().isEmpty());
        QSignalSpy edited(&panel, &CacheSettingsPanel::settingsEdited);
        box->setCurrentIndex(box->findData(int(KvLayerBudget::pyramid)));
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 1, kEventuallyMs);
        QCOMPARE(edited.at(0).at(0).value<EngineSettings>().kv.layer_budget, KvLayerBudget::pyramid);
        // Quest and streaming keep every layer alike; SnapKV is shaped.
        panel.policyBox()->setCurrentIndex(panel.policyBox()->findData(int(KvPolicy::quest)));
        QVERIFY(!box->isEnabled());
        panel.policyBox()->setCurrentIndex(panel.policyBox()->findData(int(KvPolicy::streaming)));
        QVERIFY(!box->isEnabled());
        panel.policyBox()->setCurrentIndex(panel.policyBox()->findData(int(KvPolicy::snapkv)));
        QVERIFY(box->isEnabled());
        QCOMPARE(panel.settings().kv.layer_budget, KvLayerBudget::pyramid);
    }
};

QTEST_MAIN(TestLayerBudgetPanel)
#include "test_layer_budget_panel.moc"
