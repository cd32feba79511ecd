// Where the model looks (KvCache::observe_attention, attention()): on stories260K the
// recorded mass is attention's own (each query and head gives 1 in all), evicted positions
// are marked exactly as the cache's retention says, observing never changes the logits,
// and nothing is recorded unless asked.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <numeric>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/session.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

int32_t argmax(std::span<const float> v) { return int32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

KvSettings h2o_quarter() {
    KvSettings kv;
    kv.policy = KvPolicy::h2o;
    kv.keep_ratio = 0.25;
    return kv;
}

}  // namespace

class TestKvAttention : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::vector<int32_t> prompt_;

    std::unique_ptr<Session> session(const KvSettings & kv, bool observe) {
        SessionConfig c{.n_ctx = 512, .chunk_tokens = 64, .kv = kv};
        c.kv.prefix_cache = false;
        auto s = std::move(Session::create(model_, c)).value();
        s->kv_cache().observe_attention(observe);
        return s;
    }
    // The prompt in ubatches of 64, then `steps` greedy tokens one at a time.
    static void run(Session & s, const std::vector<int32_t> & prompt, int steps) {
        QVERIFY(s.append(prompt).ok());
        for (int i = 0; i < steps; ++i) {
            const int32_t next = argmax(s.logits());
            QVERIFY(s.append(std::span(&next, 1)).ok());
        }
    }

private slots:
    void initTestCase() {
        auto model = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(model.ok());
        model_ = std::move(model).value();
        QFile text(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(text.open(QIODevice::ReadOnly));
        prompt_ = model_->tokenizer().encode(text.read(1200).toStdString(), true, false);
        prompt_.resize(std::min<size_t>(prompt_.size(), 200));
        QVERIFY(prompt_.size() == 200);
    }

    void massSumsToQueriesTimesHeads_data() {
        QTest::addColumn<int>("policy");
        QTest::newRow("none") << int(KvPolicy::none);
        QTest::newRow("h2o") << int(KvPolicy::h2o);
        QTest::newRow("quest") << int(KvPolicy::quest);  // its decode steps read a few pages
    }
    // Attention sums to 1 per query and head, over what the query could see: the mass of
    // each layer sums to queries x query heads, however much was evicted.
    void massSumsToQueriesTimesHeads() {
        QFETCH(int, policy);
        KvSettings kv = h2o_quarter();
        kv.policy = KvPolicy(policy);
        auto s = session(kv, true);
        constexpr int kSteps = 12;
        run(*s, prompt_, kSteps);
        const AttentionMass a = s->attention();
        const uint32_t n = uint32_t(prompt_.size()) + kSteps;
        QCOMPARE(a.n_queries, uint64_t(n));
        QCOMPARE(a.n_positions, n);
        QCOMPARE(a.layers.size(), size_t(model_->hparams().n_layer));
        QCOMPARE(a.n_query_heads, model_->hparams().n_head);
        const double per_layer = double(n) * a.n_query_heads;
        double total = 0;
        for (size_t l = 0; l < a.layers.size(); ++l) {
            double sum = 0;
            for (uint32_t p = 0; p < n; ++p) {
                sum += a.mass_at(l, p);
                QVERIFY(a.mass_at(l, p) >= 0.0f);
                QVERIFY(a.mean_at(l, p) <= 1.0f + 1e-5f);
            }
            QVERIFY2(std::abs(sum - per_layer) <= 1e-4 * per_layer,
                     qPrintable(QString("layer %1: %2 vs %3").arg(l).arg(sum).arg(per_layer)));
            total += sum;
        }
        QVERIFY(std::abs(total - per_layer * double(a.layers.size())) <= 1e-4 * total);
        // Position p is seen by the queries at or after it.
        for (uint32_t p = 0; p < n; ++p) QCOMPARE(a.queries[p], n - p);
    }

    void evictedPositionsAreMarkedAsRetentionSays() {
        auto s = session(h2o_quarter(), true);
        run(*s, prompt_, 16);
        const AttentionMass a = s->attention();
        const std::vector<float> kept = s->retention();
        QCOMPARE(size_t(a.n_positions), kept.size());
        int evicted = 0, evicted_with_mass = 0;
        for (uint32_t p = 0; p < a.n_positions; ++p) {
            double mean = 0;
            bool none = true, all = true;
            for (size_t l = 0; l < a.layers.size(); ++l) {
                mean += a.held_at(l, p);
                none = none && a.held_at(l, p) == 0.0f;
                all = all && a.held_at(l, p) == 1.0f;
            }
            mean /= double(a.layers.size());
            QVERIFY2(std::abs(mean - kept[p]) < 1e-6, qPrintable(QString("position %1: %2 vs %3").arg(p).arg(mean).arg(kept[p])));
            QCOMPARE(none, kept[p] == 0.0f);
            QCOMPARE(all, kept[p] == 1.0f);
            if (none) {
                ++evicted;
                double received = 0;
                for (size_t l = 0; l < a.layers.size(); ++l) received += a.mass_at(l, p);
                evicted_with_mass += received > 0;
            }
        }
        // H2O at 25% evicted most positions; what they received before stays recorded.
        QVERIFY(evicted > int(a.n_positions) / 3);
        QCOMPARE(evicted_with_mass, evicted);
    }

    void observingLeavesTheLogitsUnchanged_data() {
        QTest::addColumn<int>("policy");
        QTest::newRow("none") << int(KvPolicy::none);
        QTest::newRow("h2o") << int(KvPolicy::h2o);
    }
    void observingLeavesTheLogitsUnchanged() {
        QFETCH(int, policy);
        KvSettings kv = h2o_quarter();
        kv.policy = KvPolicy(policy);
        auto off = session(kv, false);
        auto on = session(kv, true);
        QVERIFY(off->append(prompt_).ok());
        QVERIFY(on->append(prompt_).ok());
        for (int i = 0; i < 16; ++i) {
            QCOMPARE(on->logits().size(), off->logits().size());
            QVERIFY2(std::memcmp(on->logits().data(), off->logits().data(), off->logits().size_bytes()) == 0,
                     qPrintable(QString("logits differ at step %1").arg(i)));
            const int32_t next = argmax(off->logits());
            QVERIFY(off->append(std::span(&next, 1)).ok());
            QVERIFY(on->append(std::span(&next, 1)).ok());
        }
        QVERIFY(!on->attention().empty());
    }

    // H2O gathers mass for itself; only observation records it by position.
    void nothingIsRecordedUnlessObserved() {
        auto s = session(h2o_quarter(), false);
        run(*s, prompt_, 4);
        QVERIFY(s->attention().empty());
        QCOMPARE(s->attention().n_queries, uint64_t(0));
    }

    void truncatingCutsTheRecord() {
        auto s = session({}, true);
        run(*s, prompt_, 4);
        s->truncate(100);
        const AttentionMass a = s->attention();
        QCOMPARE(a.n_positions, 100u);
        QCOMPARE(a.queries.size(), size_t(100));
        QCOMPARE(a.mass.size(), size_t(100) * a.layers.size());
        // Evaluating again records the new queries on top.
        QVERIFY(s->append(std::span(prompt_).subspan(100, 20)).ok());
        QCOMPARE(s->attention().n_positions, 120u);
        QCOMPARE(s->attention().queries[119], 1u);
    }
};

QTEST_GUILESS_MAIN(TestKvAttention)
#include "test_kv_attention.moc"
