// The settings panel's reply settings: Thinking and Reasoning effort, enabled only where the
// loaded model's template offers them (the tooltip says why not), sampling and the reply's
// length; every choice reaches the settings.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include "app/core/engine_settings.h"
#include "support/eventually.h"
#include "ui/cache_settings_panel.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestReplySettingsPanel : public QObject {
    Q_OBJECT

private slots:
    void enabledWhereTheTemplateOffersIt() {
        CacheSettingsPanel panel;
        QVERIFY(!panel.thinkingBox()->isEnabled() && !panel.effortBox()->isEnabled());  // no model yet
        QVERIFY(panel.thinkingBox()->toolTip().contains(QStringLiteral("Load a model")));

        ModelInfo qwen;
        qwen.thinkingSwitch = true;
        panel.setModel(qwen);
        QVERIFY(panel.thinkingBox()->isEnabled());
        QVERIFY(!panel.effortBox()->isEnabled());
        QVERIFY(panel.effortBox()->toolTip().contains(QStringLiteral("no such choice")));
        QVERIFY(!panel.thinkingBox()->toolTip().contains(QStringLiteral("no such choice")));

        ModelInfo oss;
        oss.reasoningEffort = true;
        panel.setModel(oss);
        QVERIFY(!panel.thinkingBox()->isEnabled());
        QVERIFY(panel.effortBox()->isEnabled());
    }

    void choicesReachTheSettings() {
        CacheSettingsPanel panel;
        ModelInfo both;
        both.thinkingSwitch = both.reasoningEffort = true;
        panel.setModel(both);
        EngineSettings s;
        s.thinking = {.enabled = false, .effort = "low"};
        panel.setSettings(s);
        QCOMPARE(panel.thinkingBox()->currentData().toInt(), 0);
        QCOMPARE(panel.effortBox()->currentData().toString(), QStringLiteral("low"));
        QCOMPARE(panel.settings().thinking, s.thinking);

        QSignalSpy edited(&panel, &CacheSettingsPanel::settingsEdited);
        panel.thinkingBox()->setCurrentIndex(panel.thinkingBox()->findData(1));
        panel.effortBox()->setCurrentIndex(panel.effortBox()->findData(QStringLiteral("high")));
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 1, kEventuallyMs);
        QCOMPARE(edited.first().at(0).value<EngineSettings>().thinking, (ThinkingChoice{.enabled = true, .effort = "high"}));

        panel.thinkingBox()->setCurrentIndex(panel.thinkingBox()->findData(-1));
        panel.effortBox()->setCurrentIndex(panel.effortBox()->findData(QString()));
        QCOMPARE(panel.settings().thinking, ThinkingChoice{});  // the model's defaults
    }

    void samplingAndLengthReachTheSettings() {
        CacheSettingsPanel panel;
        EngineSettings s;
        s.sampler.temperature = 0.3f;
        s.sampler.top_p = 0.9f;
        s.maxReplyTokens = 2048;
        panel.setSettings(s);
        QCOMPARE(panel.temperatureBox()->value(), 0.3);
        QCOMPARE(panel.topPBox()->value(), 0.9);
        QCOMPARE(panel.maxReplyBox()->value(), 2048);
        QCOMPARE(panel.settings().sampler.temperature, 0.3f);  // the same float back
        QCOMPARE(panel.settings().sampler.top_k, s.sampler.top_k);
        QVERIFY(!panel.temperatureBox()->toolTip().isEmpty());

        QSignalSpy edited(&panel, &CacheSettingsPanel::settingsEdited);
        panel.temperatureBox()->setValue(0);
        panel.maxReplyBox()->setValue(0);
        QTRY_COMPARE_WITH_TIMEOUT(edited.count(), 1, kEventuallyMs);
        const EngineSettings out = edited.first().at(0).value<EngineSettings>();
        QCOMPARE(out.sampler.temperature, 0.0f);  // greedy
        QCOMPARE(out.maxReplyTokens, 0);          // until the context is full
        QCOMPARE(panel.temperatureBox()->text(), QStringLiteral("0 (greedy)"));
    }
};

QTEST_MAIN(TestReplySettingsPanel)
#include "test_reply_settings_panel.moc"
