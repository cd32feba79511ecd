// The settings panel's Thinking and Reasoning effort: enabled only where the loaded model's
// template offers them (the tooltip says why not), and the choices reach the settings.
#include <QComboBox>
#include <QSignalSpy>
#include <QtTest>

#include "app/core/engine_settings.h"
#include "support/eventually.h"
#include "ui/cache_settings_panel.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestThinkingChoicePanel : public QObject {
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
};

QTEST_MAIN(TestThinkingChoicePanel)
#include "test_thinking_choice_panel.moc"
