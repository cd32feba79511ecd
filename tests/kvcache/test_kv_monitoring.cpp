// How hard the cache policy works, in KvStats: a sequence driven past its budget gives the
// retention and the evictions per 1,000 tokens its budget implies; a refused ubatch (the
// context, or no tier with room) counts once; time spent selecting is counted for the
// policies that evict and only for them; the JSON and the text carry all of it.
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/llama_graph.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

class TestKvMonitoring : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::vector<int32_t> prompt_;

    static SessionConfig with_policy(KvPolicy policy) {
        SessionConfig c{.n_ctx = 512, .chunk_tokens = 10};
        c.kv.prefix_cache = false;
        c.kv.policy = policy;
        return c;
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        model_ = *m;
        std::mt19937 rng(5);
        prompt_ = random_prompt(rng, 200, int32_t(model_->hparams().n_vocab));
    }

    // 200 tokens in ubatches of 10 under a budget of 50: each layer and head keeps 50 and
    // evicted 150, so 750 evictions per 1,000 tokens written and a retention of 25%.
    void theBudgetImpliesTheRates() {
        SessionConfig c = with_policy(KvPolicy::h2o);
        c.kv.budget_tokens = 50;
        auto s = std::move(Session::create(model_, c)).value();
        QCOMPARE(s->kv_stats().retention_ratio, 1.0);  // nothing held yet
        QCOMPARE(s->kv_stats().evictions_per_1k, 0.0);
        QVERIFY(s->append(std::span(prompt_).first(40)).ok());
        QCOMPARE(s->kv_stats().retention_ratio, 1.0);  // under the budget
        QVERIFY(s->append(std::span(prompt_).subspan(40)).ok());
        const KvStats st = s->kv_stats();
        QCOMPARE(st.tokens_written, uint64_t(200));
        QCOMPARE(s->kv_cache().n_kept(0), 50u);
        QCOMPARE(st.retention_ratio, 0.25);
        QCOMPARE(st.evictions_per_1k, 750.0);
        QCOMPARE(st.refusals, uint64_t(0));
    }

    // The mean over sequences: one kept whole, one at 25%.
    void retentionIsTheMeanOverSequences() {
        KvCacheConfig config{.max_tokens = 512};
        config.settings.prefix_cache = false;
        auto kv = KvCache::create(config, model_->kv_shape(), backend_);
        QVERIFY(kv.ok());
        QVERIFY((*kv)->open_sequence(1, {.policy = KvPolicy::h2o, .budget_tokens = 50}).ok());
        auto graph = LlamaGraph::create(*model_, 10);
        std::vector<float> logits;
        for (size_t at = 0; at < prompt_.size(); at += 10) {
            QVERIFY(graph->forward(**kv, 0, std::span(prompt_).subspan(at, 10), false, logits).ok());
            QVERIFY(graph->forward(**kv, 1, std::span(prompt_).subspan(at, 10), false, logits).ok());
        }
        const KvStats st = (*kv)->stats();
        QCOMPARE(st.retention_ratio, (1.0 + 0.25) / 2);
        QCOMPARE(st.tokens_written, uint64_t(400));
        QCOMPARE(st.evictions_per_1k, 1000.0 * 150 / 400);
    }

    void aRefusedPlanCountsOnce() {
        KvCacheConfig config{.max_tokens = 64};
        config.settings.prefix_cache = false;
        auto kv = KvCache::create(config, model_->kv_shape(), backend_);
        auto graph = LlamaGraph::create(*model_, 64);
        std::vector<float> logits;
        QVERIFY(graph->forward(**kv, 0, std::span(prompt_).first(60), false, logits).ok());
        QCOMPARE((*kv)->stats().refusals, uint64_t(0));
        QCOMPARE((*kv)->plan(0, {.tokens = std::span(prompt_).subspan(60, 8), .max_tokens = 64}).status().code(), StatusCode::context_full);
        (*kv)->flush();  // publishes the counters
        QCOMPARE((*kv)->stats().refusals, uint64_t(1));
        QVERIFY((*kv)->plan(0, {.tokens = std::span(prompt_).subspan(60, 4), .max_tokens = 64}).ok());  // fits: not counted
        (*kv)->flush();
        QCOMPARE((*kv)->stats().refusals, uint64_t(1));
    }

    // A session refuses a prompt that does not fit before planning it: that counts too.
    void aSessionsRefusedPromptCounts() {
        SessionConfig c = with_policy(KvPolicy::none);
        c.n_ctx = 64;
        auto s = std::move(Session::create(model_, c)).value();
        QVERIFY(s->append(std::span(prompt_).first(60)).ok());
        QCOMPARE(s->append(std::span(prompt_).subspan(60, 8)).code(), StatusCode::context_full);
        QCOMPARE(s->kv_stats().refusals, uint64_t(1));
        QCOMPARE(s->kv_stats().tokens_written, uint64_t(60));  // nothing of it was written
    }

    // A device tier of two blocks and no tier below: the view cannot get room.
    void aViewWithNoRoomCountsOnce() {
        KvCacheConfig tiny{.max_tokens = 512};
        tiny.settings.prefix_cache = false;
        const KvBlockLayout layout{{32, model_->hparams().n_head_kv, model_->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        tiny.capacities = {.device_bytes = 2 * layout.block_bytes(), .host_bytes = 0, .disk_bytes = 0};
        auto kv = KvCache::create(tiny, model_->kv_shape(), backend_);
        QVERIFY(kv.ok());
        auto graph = LlamaGraph::create(*model_, 64);
        std::vector<float> logits;
        const Status st = graph->forward(**kv, 0, std::span(prompt_).first(64), false, logits);
        QCOMPARE(st.code(), StatusCode::out_of_memory);
        (*kv)->flush();
        QCOMPARE((*kv)->stats().refusals, uint64_t(1));
    }

    void selectionTimeOnlyForEvictingPolicies_data() {
        QTest::addColumn<int>("policy");
        QTest::addColumn<bool>("evicts");
        QTest::newRow("none") << int(KvPolicy::none) << false;
        QTest::newRow("quest") << int(KvPolicy::quest) << false;
        QTest::newRow("h2o") << int(KvPolicy::h2o) << true;
        QTest::newRow("snapkv") << int(KvPolicy::snapkv) << true;
        QTest::newRow("streaming") << int(KvPolicy::streaming) << true;
        QTest::newRow("random") << int(KvPolicy::random) << true;
    }
    void selectionTimeOnlyForEvictingPolicies() {
        QFETCH(int, policy);
        QFETCH(bool, evicts);
        const SessionRun r = run_session(model_, prompt_, 4, with_policy(KvPolicy(policy)));
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        const std::string name(kv_policy_name(KvPolicy(policy)));
        QCOMPARE(r.stats.selection_ms.size(), size_t(evicts ? 1 : 0));
        if (evicts) QVERIFY(r.stats.selection_ms.at(name) > 0);
        QCOMPARE(r.stats.evicted_tokens > 0, evicts);
    }

    void theJsonAndTheTextCarryThem() {
        SessionConfig c = with_policy(KvPolicy::h2o);
        c.kv.budget_tokens = 50;
        const SessionRun r = run_session(model_, prompt_, 0, c);
        QVERIFY(r.status.ok());
        const QJsonObject json = QJsonDocument::fromJson(QByteArray::fromStdString(to_json(r.stats))).object();
        QCOMPARE(json.value("tokens_written").toDouble(), 200.0);
        QCOMPARE(json.value("retention_ratio").toDouble(), 0.25);
        QCOMPARE(json.value("evictions_per_1k").toDouble(), 750.0);
        QCOMPARE(json.value("refusals").toDouble(), 0.0);
        QVERIFY(json.value("selection_ms").toObject().value("h2o").toDouble() > 0);
        QVERIFY(json.contains("policy"));  // the keys before them are still there
        const std::string text = to_text(r.stats);
        QVERIFY2(text.find("retention 25.0%") != std::string::npos, text.c_str());
        QVERIFY(text.find("750.0 evictions per 1,000 tokens written, 0 ubatches refused") != std::string::npos);
        QVERIFY(text.find("time selecting what to evict, h2o: ") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestKvMonitoring)
#include "test_kv_monitoring.moc"
