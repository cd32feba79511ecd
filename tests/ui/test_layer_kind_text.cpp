// Where a model's cache policies reach, in the words the settings panel uses.
#include <QtTest>

#include "ui/layer_kind_text.h"

using namespace lr;

class TestLayerKindText : public QObject {
    Q_OBJECT

private slots:
    void policyReachNamesWhatTheOtherLayersKeep() {
        const std::vector<KvLayerKindPlan> dense = {{.kind = KvLayerKind::full, .n_layers = 22}};
        QVERIFY(ui::policyReachText(dense).isEmpty());
        const std::vector<KvLayerKindPlan> qwen35 = {{.kind = KvLayerKind::full, .n_layers = 1},
                                                     {.kind = KvLayerKind::recurrent, .n_layers = 3}};
        QCOMPARE(ui::policyReachText(qwen35),
                 QStringLiteral("This model keeps 3 of 4 layers as a fixed-size state; eviction, Quest and the KV codecs apply to "
                                "the other 1."));
        const std::vector<KvLayerKindPlan> gemma4 = {{.kind = KvLayerKind::full, .n_layers = 1},
                                                     {.kind = KvLayerKind::sliding_window, .n_layers = 2},
                                                     {.kind = KvLayerKind::shared, .n_layers = 2}};
        QCOMPARE(ui::policyReachText(gemma4),
                 QStringLiteral("This model keeps 2 of 5 layers as a sliding window, 2 of 5 layers reading an earlier layer's KV; "
                                "eviction, Quest and the KV codecs apply to the other 1."));
    }
};

QTEST_GUILESS_MAIN(TestLayerKindText)
#include "test_layer_kind_text.moc"
