// The eval-kv harness: the full cache against itself is exact; a policy costs something
// measurable, and each measure is where it should be.
#include <QtTest>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/kv_evaluation.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

class TestKvEvaluation : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::vector<int32_t> tokens_;

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        model_ = *m;
        QFile f(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        tokens_ = model_->tokenizer().encode(f.readAll().toStdString(), true, false);
    }

    void fullCacheAgainstItselfIsExact() {
        auto e = evaluate_kv_policy(model_, tokens_, 128, KvSettings{}, 2);
        QVERIFY2(e.ok(), e.status().message().c_str());
        QCOMPARE(e->n_windows, size_t(2));
        QCOMPARE(e->n_scored, size_t(2 * 64));
        QCOMPARE(e->ppl, e->ppl_full);
        QCOMPARE(e->kld, 0.0);
        QCOMPARE(e->top1_agree, 1.0);
        QCOMPARE(e->kv_bytes, e->kv_bytes_full);
        QCOMPARE(e->read_ratio, 1.0);
        QVERIFY(e->ppl_full > 1 && e->ppl_full < 20);  // a trained model on its own kind of text
    }

    void aPolicyCostsSomethingAndSavesMemory_data() {
        QTest::addColumn<int>("policy");
        QTest::addColumn<int>("bits");
        QTest::newRow("h2o") << int(KvPolicy::h2o) << 16;
        QTest::newRow("streaming") << int(KvPolicy::streaming) << 16;
        QTest::newRow("q4") << int(KvPolicy::none) << 4;
    }
    void aPolicyCostsSomethingAndSavesMemory() {
        QFETCH(int, policy);
        QFETCH(int, bits);
        KvSettings kv;
        kv.policy = KvPolicy(policy);
        kv.keep_ratio = 0.25;
        kv.k_bits = kv.v_bits = uint32_t(bits);
        kv.residual_tokens = 16;
        kv.block_tokens = 8;
        auto e = evaluate_kv_policy(model_, tokens_, 128, kv, 2);
        QVERIFY2(e.ok(), e.status().message().c_str());
        qInfo("PPL %.4f (full %.4f), KL %.4f, top-1 %.1f%%, KV %.1f%%", e->ppl, e->ppl_full, e->kld, 100 * e->top1_agree,
              100.0 * double(e->kv_bytes) / double(e->kv_bytes_full));
        QVERIFY(e->kld > 0);
        QVERIFY(e->top1_agree < 1.0 && e->top1_agree > 0.3);
        QVERIFY(e->kv_bytes < e->kv_bytes_full * 3 / 4);
        QVERIFY(std::isfinite(e->ppl));
    }

    // Quest keeps everything and reads about its budget's share of the KV rows (whole pages:
    // the budget is rounded up to one, and the sinks' and the new token's are always read).
    void questReadsItsBudget() {
        KvSettings kv;
        kv.policy = KvPolicy::quest;
        kv.keep_ratio = 0.25;
        kv.block_tokens = 8;
        auto e = evaluate_kv_policy(model_, tokens_, 128, kv, 2);
        QVERIFY2(e.ok(), e.status().message().c_str());
        qInfo("quest 25%%: read %.1f%% of the KV rows, KL %.4f", 100 * e->read_ratio, e->kld);
        QCOMPARE(e->kv_bytes, e->kv_bytes_full);
        QVERIFY(e->read_ratio > 0.2 && e->read_ratio < 0.32);
        QVERIFY(e->kld > 0);
    }

    void badInputIsAnError() {
        const std::vector<int32_t> few(50, 300);
        QCOMPARE(evaluate_kv_policy(model_, few, 128, KvSettings{}).status().code(), StatusCode::invalid_argument);
        KvSettings bad;
        bad.keep_ratio = 2;
        QCOMPARE(evaluate_kv_policy(model_, tokens_, 128, bad).status().code(), StatusCode::invalid_argument);
    }
};

QTEST_GUILESS_MAIN(TestKvEvaluation)
#include "test_kv_evaluation.moc"
