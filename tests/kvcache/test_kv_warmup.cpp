// Warm-up (KvSettings::warmup_tokens) on the bundled model: below N tokens a sequence keeps
// every position and its blocks stay f16 past the full-precision window; once it holds N
// the policy evicts to its budget and aged blocks take the codecs; warm-up 0 changes
// nothing; SnapKV selects at a prompt's end only past the warm-up; streaming's warm-up ends
// at the context; the planner counts the warm-up's peak; bad values are refused by name.
#include <QtTest>

#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

// h2o keeping 40 tokens, 4-bit K and V with no full-precision window, so that without a
// warm-up every full block past the first ubatches is evicted or re-encoded at once.
SessionConfig compressed(uint32_t warmup, KvPolicy policy = KvPolicy::h2o) {
    SessionConfig c{.n_ctx = 512, .chunk_tokens = 16};
    c.kv.prefix_cache = false;
    c.kv.policy = policy;
    c.kv.budget_tokens = 40;
    c.kv.k_bits = c.kv.v_bits = 4;
    c.kv.residual_tokens = 0;
    c.kv.warmup_tokens = warmup;
    return c;
}

}  // namespace

class TestKvWarmup : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::vector<int32_t> prompt_;

    std::unique_ptr<Session> session(const SessionConfig & config) {
        auto s = Session::create(model_, config);
        if (!s.ok()) qFatal("%s", s.status().message().c_str());
        return std::move(s).value();
    }

    // Every block of every layer of the session's sequence in f16 (K and V).
    bool all_f16(Session & s) {
        for (uint32_t il = 0; il < model_->hparams().n_layer; ++il) {
            for (const auto & [k, v] : s.kv_cache().layer_codecs(0, il)) {
                if (k != KvCodec::f16 || v != KvCodec::f16) return false;
            }
        }
        return true;
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        model_ = *m;
        std::mt19937 rng(11);
        prompt_ = random_prompt(rng, 300, int32_t(model_->hparams().n_vocab));
    }

    void belowTheWarmupEverythingStaysThenTheBudgetApplies() {
        auto s = session(compressed(160));
        QVERIFY(s->append(std::span(prompt_).first(144)).ok());  // nine ubatches of 16
        QCOMPARE(s->kv_cache().n_kept(0), 144u);
        for (float kept : s->retention()) QCOMPARE(kept, 1.0f);
        QVERIFY(all_f16(*s));  // 144 tokens: four blocks would be past a window of 0
        QCOMPARE(s->kv_stats().evicted_tokens, uint64_t(0));
        // The ubatch that reaches 160 tokens ends the warm-up: evicted to the budget, and the
        // full blocks left take 4 bits.
        QVERIFY(s->append(std::span(prompt_).subspan(144, 16)).ok());
        QCOMPARE(s->kv_cache().n_kept(0), 40u);
        QVERIFY(!all_f16(*s));
        QVERIFY(s->kv_stats().evicted_tokens > 0);
    }

    // The same sequence without a warm-up is compressed from the first ubatches on: the test
    // above can fail.
    void withoutAWarmupTheBudgetAppliesAtOnce() {
        auto s = session(compressed(0));
        QVERIFY(s->append(std::span(prompt_).first(144)).ok());
        QCOMPARE(s->kv_cache().n_kept(0), 40u);
        QVERIFY(!all_f16(*s));
    }

    // A sequence whose every ubatch ends past the warm-up runs exactly as with none.
    void warmupZeroIsBitIdentical_data() {
        QTest::addColumn<int>("policy");
        QTest::newRow("h2o, q4") << int(KvPolicy::h2o);
        QTest::newRow("snapkv, q4") << int(KvPolicy::snapkv);
        QTest::newRow("none, q4") << int(KvPolicy::none);
    }
    void warmupZeroIsBitIdentical() {
        QFETCH(int, policy);
        SessionConfig zero = compressed(0, KvPolicy(policy));
        SessionConfig one = compressed(1, KvPolicy(policy));
        zero.kv.then = one.kv.then = KvPolicy::h2o;
        const SessionRun a = run_session(model_, std::vector(prompt_.begin(), prompt_.begin() + 100), 40, zero);
        const SessionRun b = run_session(model_, std::vector(prompt_.begin(), prompt_.begin() + 100), 40, one);
        QVERIFY2(a.status.ok(), a.status.message().c_str());
        QVERIFY(identical(a, b));
        QCOMPARE(a.tokens, b.tokens);
        QCOMPARE(a.stats.tokens_kept, b.stats.tokens_kept);
        QCOMPARE(a.stats.evicted_tokens, b.stats.evicted_tokens);
        // ... and the warm-up does change a run that ends inside it.
        const SessionRun warm = run_session(model_, std::vector(prompt_.begin(), prompt_.begin() + 100), 40,
                                            compressed(200, KvPolicy(policy)));
        QVERIFY(!identical(a, warm));
    }

    // SnapKV selects at the end of a prompt only once the warm-up is over.
    void snapkvSelectsPastTheWarmupOnly() {
        auto short_prompt = session(compressed(160, KvPolicy::snapkv));
        QVERIFY(short_prompt->append(std::span(prompt_).first(120)).ok());
        QCOMPARE(short_prompt->kv_cache().n_kept(0), 120u);
        auto long_prompt = session(compressed(160, KvPolicy::snapkv));
        QVERIFY(long_prompt->append(std::span(prompt_).first(200)).ok());
        QCOMPARE(long_prompt->kv_cache().n_kept(0), 40u);
    }

    // Streaming renumbers to run past the context: its warm-up ends at the context, so its
    // window never outgrows it.
    void streamingsWarmupEndsAtTheContext_data() {
        QTest::addColumn<uint32_t>("n_ctx");
        QTest::newRow("ubatches end at the context") << 128u;
        QTest::newRow("a ubatch crosses it") << 120u;
    }

    void streamingsWarmupEndsAtTheContext() {
        QFETCH(uint32_t, n_ctx);
        SessionConfig c = compressed(100000, KvPolicy::streaming);
        c.n_ctx = n_ctx;
        c.kv.k_bits = c.kv.v_bits = 16;
        auto s = session(c);
        for (size_t at = 0; at < prompt_.size(); at += 16) {
            const Status st = s->append(std::span(prompt_).subspan(at, std::min<size_t>(16, prompt_.size() - at)));
            QVERIFY2(st.ok(), st.message().c_str());
            QVERIFY2(s->kv_cache().n_kept(0) <= n_ctx, qPrintable(QString::number(s->kv_cache().n_kept(0))));
        }
        QCOMPARE(s->kv_cache().n_kept(0), 40u);
        QVERIFY(describe(c.kv).find("warm-up 100000 tokens (at most the context)") != std::string::npos);
    }

    // Re-encoding on the way down to RAM waits for the warm-up too.
    void lowerTiersKeepTheCodecsDuringTheWarmup() {
        SessionConfig c = compressed(1000, KvPolicy::none);
        c.kv.k_bits = c.kv.v_bits = 16;
        c.kv.host_bits = 4;
        c.kv.device_mib = layer_mib(*model_, c.n_ctx, c.kv.block_tokens) * 1.2;  // a layer and a bit
        c.kv.host_mib = 64;
        auto s = session(c);
        QVERIFY(s->append(std::span(prompt_).first(250)).ok());
        QVERIFY(s->kv_stats().demotions > 0);
        QCOMPARE(s->kv_stats().narrowed_blocks, uint64_t(0));
        c.kv.warmup_tokens = 0;
        auto cold = session(c);
        QVERIFY(cold->append(std::span(prompt_).first(250)).ok());
        QVERIFY(cold->kv_stats().narrowed_blocks > 0);
    }

    void thePlannerCountsTheWarmup() {
        const ModelMemoryShape shape = memory_shape(*model_);
        const KvTierCapacities roomy{.device_bytes = 1ull << 30, .host_bytes = 0, .disk_bytes = 0};
        KvSettings h2o{.policy = KvPolicy::h2o, .keep_ratio = 0.1};
        const MemoryPlan cold = plan_memory(shape, 512, 64, h2o, roomy);
        h2o.warmup_tokens = 400;
        const MemoryPlan warm = plan_memory(shape, 512, 64, h2o, roomy);
        QCOMPARE(warm.kv_bytes, kv_bytes_for_tokens(shape, KvSettings{}, 400));
        QVERIFY(warm.kv_bytes > cold.kv_bytes);
    }

    void badValuesAreRefusedByName() {
        KvSettings s;
        s.warmup_tokens = (1u << 20) + 1;
        const Status st = validate(s);
        QCOMPARE(st.code(), StatusCode::invalid_argument);
        QVERIFY2(st.message().find("warm-up must be 0 to 1048576 tokens") != std::string::npos, st.message().c_str());
        s.warmup_tokens = 1u << 20;
        QVERIFY(validate(s).ok());
        QVERIFY(describe(KvSettings{}).find("warm-up") == std::string::npos);
        s = {.policy = KvPolicy::h2o, .warmup_tokens = 100};
        QCOMPARE(describe(s), std::string("h2o 20% (recent 50%, 4 sinks), inverse layers, warm-up 100 tokens, K f16 / V f16"));
    }
};

QTEST_GUILESS_MAIN(TestKvWarmup)
#include "test_kv_warmup.moc"
