// EngineSettings: validation names the setting, JSON round trips (and bad stored values
// fall back), the one mapping onto SessionConfig, and what the engine applies today.
#include <QtTest>

#include "app/core/engine_settings.h"
#include "engine/runtime/session.h"

using namespace lr;
using namespace lr::app;

class TestEngineSettings : public QObject {
    Q_OBJECT
private slots:
    void validationNamesTheSetting_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("expected");
        QTest::newRow("valid") << ""
                               << "";
        QTest::newRow("chunk 8193") << "chunk8193"
                                    << "prefill chunk";
        QTest::newRow("automatic chunk") << "chunkAuto"
                                         << "";
        QTest::newRow("tiny context") << "ctx10"
                                      << "context";
        QTest::newRow("bits 5") << "bits5"
                                << "KV bits";
        QTest::newRow("keep 0") << "keep0"
                                << "keep ratio";
        QTest::newRow("summary 4") << "summary4"
                                   << "summary length";
        QTest::newRow("negative budget") << "budget"
                                         << "tier budgets";
    }
    void validationNamesTheSetting() {
        QFETCH(QString, field);
        QFETCH(QString, expected);
        EngineSettings s;
        if (field == "chunk8193") s.chunkTokens = 8193;
        if (field == "chunkAuto") s.chunkTokens = kAutoChunk;
        if (field == "ctx10") s.contextTokens = 10;
        if (field == "bits5") s.kv.k_bits = 5;
        if (field == "keep0") s.kv.keep_ratio = 0;
        if (field == "summary4") s.summaryTokens = 4;
        if (field == "budget") s.kv.host_mib = -1;
        const QString error = validationError(s);
        if (expected.isEmpty()) {
            QVERIFY2(error.isEmpty(), qPrintable(error));
        } else {
            QVERIFY2(error.contains(expected, Qt::CaseInsensitive), qPrintable(error));
        }
    }

    void jsonRoundTrip() {
        EngineSettings s;
        s.kv.policy = KvPolicy::h2o;
        s.kv.keep_ratio = 0.3;
        s.kv.recent_ratio = 0.25;
        s.kv.sink_tokens = 8;
        s.kv.k_bits = 8;
        s.kv.v_bits = 4;
        s.kv.host_bits = 8;
        s.kv.disk_bits = 4;
        s.kv.device_mib = 512;
        s.kv.dir = "/tmp/kv";
        s.contextTokens = 2048;
        s.chunkTokens = 128;
        s.maxReplyTokens = 300;
        s.summaryTokens = 200;
        s.sampler.temperature = 0.5f;
        s.thinking = {.enabled = false, .effort = "high"};
        const EngineSettings back = engineSettingsFromJson(toJson(s), EngineSettings{});
        QCOMPARE(back.kv.policy, KvPolicy::h2o);
        QCOMPARE(back.kv.keep_ratio, 0.3);
        QCOMPARE(back.kv.recent_ratio, 0.25);
        QCOMPARE(back.kv.sink_tokens, 8u);
        QCOMPARE(back.kv.k_bits, 8u);
        QCOMPARE(back.kv.v_bits, 4u);
        QCOMPARE(back.kv.host_bits, 8u);
        QCOMPARE(back.kv.disk_bits, 4u);
        QVERIFY(same_session(sessionOptions(back), sessionOptions(s)));
        EngineSettings other = back;
        other.kv.disk_bits = 8;
        QVERIFY(!same_session(sessionOptions(other), sessionOptions(s)));
        QCOMPARE(back.kv.device_mib, 512.0);
        QCOMPARE(back.kv.dir, std::string("/tmp/kv"));
        QCOMPARE(back.contextTokens, 2048u);
        QCOMPARE(back.chunkTokens, 128u);
        QCOMPARE(back.maxReplyTokens, 300);
        QCOMPARE(back.summaryTokens, 200u);
        QCOMPARE(back.sampler.temperature, 0.5f);
        QCOMPARE(back.thinking, (ThinkingChoice{.enabled = false, .effort = "high"}));
        // The model's default is stored as such; a file from before the setting keeps the defaults'.
        EngineSettings defaults;
        defaults.thinking.enabled = true;
        QCOMPARE(engineSettingsFromJson(toJson(EngineSettings{}), defaults).thinking, ThinkingChoice{});
        QCOMPARE(engineSettingsFromJson(QJsonObject{{"temperature", 0.5}}, defaults).thinking, defaults.thinking);
        QCOMPARE(engineSettingsFromJson(QJsonObject{{"thinking", "maybe"}, {"reasoningEffort", 3}}, defaults).thinking, defaults.thinking);
    }

    void badStoredValuesFallBack() {
        EngineSettings defaults;
        defaults.chunkTokens = 64;
        const EngineSettings s = engineSettingsFromJson({{"chunkTokens", 9000}, {"kBits", 8}}, defaults);
        QCOMPARE(s.chunkTokens, 64u);  // the whole object falls back: a chunk of 9000 is invalid
        QCOMPARE(s.kv.k_bits, 16u);
        const EngineSettings t = engineSettingsFromJson({{"policy", "no-such-policy"}, {"kBits", 8}}, defaults);
        QCOMPARE(t.kv.policy, KvPolicy::none);
        QCOMPARE(t.kv.k_bits, 8u);
        // Counts past int32 (converting them was undefined behaviour) keep the defaults.
        const EngineSettings u = engineSettingsFromJson({{"maxReplyTokens", 3e9}, {"topK", -1e12}, {"kBits", 8}}, defaults);
        QCOMPARE(u.maxReplyTokens, defaults.maxReplyTokens);
        QCOMPARE(u.sampler.top_k, defaults.sampler.top_k);
        QCOMPARE(u.kv.k_bits, 8u);
    }

    void oneMappingOntoTheSession() {
        EngineSettings s;
        s.contextTokens = 1024;
        s.chunkTokens = 96;
        s.kv.k_bits = 8;
        s.kv.v_bits = 4;
        const SessionOptions c = sessionOptions(s);
        QCOMPARE(c.n_ctx, 1024u);
        QCOMPARE(c.chunk_tokens, 96u);
        QCOMPARE(c.kv.k_codec(), KvCodec::q8);
        QCOMPARE(c.kv.v_codec(), KvCodec::q4);
        QCOMPARE(c.kv.prefix_cache, s.kv.prefix_cache);
    }

    // Where the app's defaults differ from the engine's (as measured: docs/BENCHMARKS.md):
    // the prefill chunk and the tier management are automatic, and reach the session so.
    void theAppsDefaultsAreAutomatic() {
        const SessionOptions c = sessionOptions(EngineSettings{});
        QCOMPARE(c.chunk_tokens, kAutoChunk);
        QVERIFY(c.kv.adapt);
        QCOMPARE(SessionOptions{}.chunk_tokens, 256u);
        QVERIFY(!KvSettings{}.adapt);
    }

    void thePredictionCountsWhatThePolicyKeeps() {
        EngineSettings s;
        s.kv.policy = KvPolicy::h2o;
        s.kv.keep_ratio = 0.1;
        QCOMPARE(sessionOptions(s).kv.policy, KvPolicy::h2o);
        // The preview plans what will run: a tenth of the context kept.
        const ModelMemoryShape shape{.n_layer = 2, .n_head_kv = 2, .head_dim = 64, .n_ctx_train = 1000, .weight_bytes = 1000};
        QCOMPARE(planFor(shape, s, probeMachine(s)).kv_bytes, kv_bytes_for_tokens(shape, s.kv, 100));
    }

    void sessionNeedsRebuildOnlyForSessionKnobs() {
        EngineSettings a;
        EngineSettings b = a;
        b.sampler.temperature = 0.1f;
        b.maxReplyTokens = 5;
        QVERIFY(same_session(sessionOptions(a), sessionOptions(b)));
        b.chunkTokens = 64;
        QVERIFY(!same_session(sessionOptions(a), sessionOptions(b)));
        EngineSettings c = a;
        c.kv.v_bits = 8;
        QVERIFY(!same_session(sessionOptions(a), sessionOptions(c)));
    }

    void memoryShapeFromHyperParameters() {
        ModelHParams hp;
        hp.n_layer = 22;
        hp.n_head = 32;
        hp.n_head_kv = 4;
        hp.head_dim = 64;
        hp.n_embd = 2048;
        hp.n_ff = 5632;
        hp.n_vocab = 32000;
        hp.n_ctx_train = 2048;
        const ModelMemoryShape shape = memory_shape(hp, 600u << 20);
        QCOMPARE(shape.n_layer, 22u);
        QCOMPARE(shape.n_head_kv, 4u);
        QCOMPARE(shape.weight_bytes, uint64_t(600u << 20));
        QCOMPARE(shape.n_vocab, 32000u);
        // x, xn, q, attn, the FFN's gate and up, and the matmul input copy, in floats.
        QVERIFY(shape.scratch_bytes_per_token >= 4u * (4 * 2048u + 3 * 5632u));
    }

    void aGpuHoldsTheWeightsBeforeTheDeviceTier() {
        EngineSettings s;
        s.contextTokens = 131072;
        const uint64_t gib = uint64_t(1) << 30;
        const ModelMemoryShape shape{.n_layer = 32, .n_head_kv = 8, .head_dim = 128, .n_ctx_train = 131072, .weight_bytes = 4 * gib};
        const MachineMemory gpu{.available_ram_bytes = 16 * gib, .free_disk_bytes = 100 * gib, .free_vram_bytes = 8 * gib};
        // 16 GiB of KV: the device tier is 80 % of the VRAM the weights and the ops leave.
        const MemoryPlan on_gpu = planFor(shape, s, gpu);
        QCOMPARE(on_gpu.kv_device_bytes, (8 * gib - 4 * gib - kDeviceOpsReserveBytes) / 5 * 4);
        QCOMPARE(on_gpu.kv_host_bytes, 16 * gib / 4);  // the weights are not in RAM
        // Weights too large for the GPU: planned in RAM, with the device tier.
        const ModelMemoryShape big{.n_layer = 32, .n_head_kv = 8, .head_dim = 128, .n_ctx_train = 131072, .weight_bytes = 10 * gib};
        const MemoryPlan in_ram = planFor(big, s, gpu);
        QCOMPARE(in_ram.kv_device_bytes, 6 * gib / 2);
        QCOMPARE(in_ram.kv_host_bytes, 6 * gib / 4);
    }

    void descriptions() {
        KvSettings kv;
        kv.k_bits = 8;
        QCOMPARE(codecsDescription(kv), QStringLiteral("K q8 / V f16"));
        kv.disk_bits = 4;
        QCOMPARE(codecsDescription(kv), QStringLiteral("K q8 / V f16, disk ≤ 4-bit"));
        QCOMPARE(policyName(KvPolicy::snapkv), QStringLiteral("snapkv"));
    }
};

QTEST_GUILESS_MAIN(TestEngineSettings)
#include "test_engine_settings.moc"
