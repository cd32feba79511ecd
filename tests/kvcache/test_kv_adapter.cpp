// Placement's demotion orders and prefetch depth, and the adaptive mode: each order picks
// the victim it should on an access pattern built to tell them apart, each depth fetches the
// layers it should ahead, every order, depth and the adaptive mode give logits bit-identical
// to the all-in-RAM cache, and the adapter's decisions follow injected measurements (short
// chat, long document, noise) without ever exceeding the planned budgets.
#include <QtTest>

#include <random>

#include "app/cli/cli_args.h"
#include "app/cli/cli_common.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "kvcache/kv_adapter.h"
#include "kvcache/kv_cache.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint32_t kBlockTokens = 4;
constexpr uint32_t kHeadDim = 32;

// A model shape of n_layer full-attention layers with one KV head.
KvModelShape shape_of(uint32_t n_layer) { return {.n_layer = n_layer, .n_head_kv = 1, .head_dim = kHeadDim}; }

uint64_t block_bytes() { return KvBlockLayout{{kBlockTokens, 1, kHeadDim}, KvCodec::f16, KvCodec::f16}.block_bytes(); }

// A cache of blocks of kBlockTokens whose device tier holds `device_blocks` of them, RAM
// behind it plenty.
KvCacheConfig tiered_config(uint32_t device_blocks, KvDemotion order, uint32_t prefetch) {
    KvCacheConfig c{.max_tokens = 256};
    c.settings.prefix_cache = false;
    c.settings.block_tokens = kBlockTokens;
    c.settings.demotion = order;
    c.settings.prefetch_layers = prefetch;
    c.capacities = {.device_bytes = device_blocks * block_bytes(), .host_bytes = 64 * block_bytes(), .disk_bytes = 0};
    return c;
}

// `n` tokens of `seq` through every layer's view (policy none reads no query): the blocks
// attention reads are pinned on the device, new ones made for the tokens.
Status append(KvCache & kv, uint32_t n_layer, SeqId seq, uint32_t n) {
    const std::vector<int32_t> tokens(n, 5);
    LR_ASSIGN_OR_RETURN(UbatchPlan plan, kv.plan(seq, {.tokens = tokens, .max_tokens = 64, .prompt = n > 1}));
    for (uint32_t il = 0; il < n_layer; ++il) {
        if (Result<PagedKvView> view = kv.layer_view(plan, il, nullptr); !view.ok()) {
            kv.discard(plan);
            return view.status();
        }
    }
    kv.apply(plan);
    return {};
}

// Windows of measurements for the adapter: each call is one window later.
struct Workload {
    KvAdaptSample sample;
    void window(uint32_t context, uint64_t held, uint64_t layer, uint64_t reads, uint64_t hits, uint64_t moved, double wait_ms) {
        sample.ubatches += KvAdapter::kWindowUbatches;
        sample.at_s += 0.5;
        sample.context_tokens = context;
        sample.held_bytes = held;
        sample.layer_bytes = layer;
        sample.block_reads += reads;
        sample.block_hits += hits;
        sample.bytes_moved += moved;
        sample.move_ms += double(moved) / 1e6;
        sample.fetch_wait_ms += wait_ms;
    }
};

}  // namespace

class TestKvAdapter : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    QTemporaryDir dir_;

    SessionConfig all_in_ram(uint32_t n_ctx) const {
        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 16};
        c.kv.block_tokens = 8;
        c.kv.prefix_cache = false;
        c.kv.dir = (dir_.path() + "/ram").toStdString();
        c.kv.disk_mib = 0.001;  // no room: nothing spills
        return c;
    }

    // The device holds about a layer, the host less than one: blocks go through every tier.
    SessionConfig tiered(uint32_t n_ctx, const QString & name) const {
        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 16};
        c.kv.block_tokens = 8;
        c.kv.prefix_cache = false;
        const double layer = layer_mib(*model_, n_ctx, 8);
        c.kv.device_mib = layer * 1.2;
        c.kv.host_mib = layer * 0.6;
        c.kv.disk_mib = 64;
        c.kv.dir = (dir_.path() + "/" + name).toStdString();
        return c;
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        model_ = *m;
    }

    // ---- Demotion order ------------------------------------------------------------------------

    // One layer; sequences 2, 4 and 1 write a block each in that order (stamps 1, 2, 3), then
    // sequence 2 reads its block again (used at 4). The device holds three blocks, so
    // sequence 3's first block needs one to leave: the layer cycle takes the first other
    // sequence's (1), FIFO the oldest block (2's, made first), LRU the one read longest ago
    // (4's).
    void eachOrderPicksItsVictim_data() {
        QTest::addColumn<int>("order");
        QTest::addColumn<uint32_t>("victim");
        QTest::newRow("cycle") << int(KvDemotion::cycle) << 1u;
        QTest::newRow("fifo") << int(KvDemotion::fifo) << 2u;
        QTest::newRow("lru") << int(KvDemotion::lru) << 4u;
    }
    void eachOrderPicksItsVictim() {
        QFETCH(int, order);
        QFETCH(uint32_t, victim);
        auto kv = KvCache::create(tiered_config(3, KvDemotion(order), 1), shape_of(1), backend_);
        QVERIFY2(kv.ok(), kv.status().message().c_str());
        for (SeqId seq : {2u, 4u, 1u}) QVERIFY(append(**kv, 1, seq, 2).ok());
        QVERIFY(append(**kv, 1, 2, 1).ok());  // reads its block again, makes none
        QCOMPARE((*kv)->stats().demotions, uint64_t(0));
        QVERIFY(append(**kv, 1, 3, 2).ok());
        QCOMPARE((*kv)->stats().demotions, uint64_t(1));
        for (SeqId seq : {1u, 2u, 3u, 4u}) {
            const std::vector<KvTier> tiers = (*kv)->block_tiers(seq, 0);
            QCOMPARE(tiers.size(), size_t(1));
            QCOMPARE(int(tiers[0]), int(seq == victim ? KvTier::host : KvTier::device));
        }
    }

    // ---- Prefetch depth ------------------------------------------------------------------------

    // Four layers of two blocks each (6 tokens), a device of six blocks: after the prompt
    // layer 2 is on the host (the cycle pushed it out for layer 3). During the next token, with
    // depth 1 the view of layer 1 prefetches layer 2 (two blocks); with depth 2 the view of
    // layer 0 prefetches layer 2 and the view of layer 1 prefetches layer 3, which layer 2's
    // prefetch had pushed out (four blocks); with none nothing is prefetched and layer 2 is
    // fetched when read.
    void prefetchDepthFetchesThatManyLayersAhead_data() {
        QTest::addColumn<uint32_t>("depth");
        QTest::addColumn<uint64_t>("prefetches");
        QTest::newRow("none") << 0u << uint64_t(0);
        QTest::newRow("next layer") << 1u << uint64_t(2);
        QTest::newRow("next two layers") << 2u << uint64_t(4);
    }
    void prefetchDepthFetchesThatManyLayersAhead() {
        QFETCH(uint32_t, depth);
        QFETCH(uint64_t, prefetches);
        auto kv = KvCache::create(tiered_config(6, KvDemotion::cycle, depth), shape_of(4), backend_);
        QVERIFY2(kv.ok(), kv.status().message().c_str());
        QVERIFY(append(**kv, 4, 1, 6).ok());
        QVERIFY((*kv)->block_tiers(1, 2) == (std::vector<KvTier>{KvTier::host, KvTier::host}));
        QCOMPARE((*kv)->stats().prefetches, uint64_t(0));
        QVERIFY(append(**kv, 4, 1, 1).ok());
        const KvStats s = (*kv)->stats();
        QCOMPARE(s.prefetches, prefetches);
        QCOMPARE(s.block_reads, uint64_t(8));  // the prompt's view read no blocks yet
        // Without prefetch, layer 2's two blocks are fetched when read: two misses.
        if (depth == 0) QCOMPARE(s.block_hits, uint64_t(6));
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    // ---- Lossless ------------------------------------------------------------------------------

    // Every order and depth, and the adaptive mode, with blocks forced through RAM and disk:
    // the logits are bit-identical to the all-in-RAM cache's.
    void everySettingEqualsAllInRam_data() {
        QTest::addColumn<int>("order");
        QTest::addColumn<uint32_t>("depth");
        QTest::addColumn<bool>("adapt");
        for (KvDemotion order : {KvDemotion::cycle, KvDemotion::lru, KvDemotion::fifo}) {
            for (uint32_t depth : {0u, 1u, 2u}) {
                QTest::newRow(qPrintable(QString("%1-%2").arg(kv_demotion_name(order).data()).arg(depth))) << int(order) << depth << false;
            }
        }
        QTest::newRow("adapt-cycle") << int(KvDemotion::cycle) << 1u << true;
        QTest::newRow("adapt-lru") << int(KvDemotion::lru) << 0u << true;
    }
    void everySettingEqualsAllInRam() {
        QFETCH(int, order);
        QFETCH(uint32_t, depth);
        QFETCH(bool, adapt);
        std::mt19937 rng(11);
        const std::vector<int32_t> prompt = random_prompt(rng, 180, int32_t(model_->hparams().n_vocab));
        const int steps = 40;
        const uint32_t n_ctx = uint32_t(prompt.size()) + steps + 1;
        const SessionRun reference = run_session(model_, prompt, steps, all_in_ram(n_ctx));
        QVERIFY2(reference.status.ok(), reference.status.message().c_str());

        SessionConfig c = tiered(n_ctx, QString("%1-%2-%3").arg(order).arg(depth).arg(adapt));
        c.kv.demotion = KvDemotion(order);
        c.kv.prefetch_layers = depth;
        c.kv.adapt = adapt;
        const SessionRun r = run_session(model_, prompt, steps, c);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        QVERIFY2(identical(reference, r), "logits differ from the all-in-RAM cache");
        const KvStats & s = r.stats;
        qInfo("%s prefetch %u%s: hits %llu/%llu, moved %.2f MiB, %llu prefetched, %.1f ms waiting, %zu decisions",
              kv_demotion_name(KvDemotion(order)).data(), depth, adapt ? " adapt" : "", (unsigned long long)s.block_hits,
              (unsigned long long)s.block_reads, double(s.bytes_moved) / kMiB, (unsigned long long)s.prefetches, s.fetch_wait_ms,
              s.adapt_decisions.size());
        QVERIFY(s.bytes_moved > 0);
        QCOMPARE(s.faults, uint64_t(0));
        if (depth == 0 && !adapt) QCOMPARE(s.prefetches, uint64_t(0));
        if (adapt) {
            // The device took the RAM the host had: the blocks held fit both together.
            QVERIFY(!s.adapt_decisions.empty());
            QVERIFY(std::any_of(s.adapt_decisions.begin(), s.adapt_decisions.end(),
                                [](const KvAdaptDecision & d) { return d.what.starts_with("device"); }));
            const uint64_t planned = uint64_t(c.kv.device_mib * kMiB) + uint64_t(c.kv.host_mib * kMiB);
            QVERIFY(s.tiers[0].capacity_bytes + s.tiers[1].capacity_bytes <= planned);
            QVERIFY(s.tiers[0].capacity_bytes > uint64_t(c.kv.device_mib * kMiB));
        }
    }

    // H2O on a short chat with the adaptive mode: a narrow recent window grows to the chat's
    // share and the decision says why (a lossy change: only with a policy that has a window).
    void recentWindowFollowsAShortChat() {
        std::mt19937 rng(3);
        const std::vector<int32_t> prompt = random_prompt(rng, 120, int32_t(model_->hparams().n_vocab));
        SessionConfig c = all_in_ram(200);
        c.kv.policy = KvPolicy::h2o;
        c.kv.keep_ratio = 0.5;
        c.kv.recent_ratio = 0.25;
        c.kv.adapt = true;
        const SessionRun r = run_session(model_, prompt, 30, c);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        const std::vector<KvAdaptDecision> & log = r.stats.adapt_decisions;
        auto recent = std::find_if(log.begin(), log.end(), [](const KvAdaptDecision & d) { return d.what.starts_with("recent window"); });
        QVERIFY(recent != log.end());
        QCOMPARE(QString::fromStdString(recent->what), QStringLiteral("recent window 25% -> 50% of the budget"));
        QVERIFY(recent->why.starts_with("short chat: "));
        // The first ubatch starts the first window; the third window in a row confirms.
        QCOMPARE(recent->ubatch, uint64_t(1 + KvAdapter::kWindowUbatches * KvAdapter::kConfirmations));
    }

    // ---- The adapter, from injected measurements ----------------------------------------------

    // A short chat on a small device, with blocks missing: the device takes the RAM the
    // blocks need, the prefetch goes two layers ahead, the recent window grows.
    void shortChatIsAggressive() {
        const KvAdaptPlan plan{.device_bytes = 1 * kMiB, .host_bytes = 63 * kMiB, .shared_memory = true, .adapts_recent = true};
        KvAdapter adapter(plan,
                          {.device_bytes = plan.device_bytes, .host_bytes = plan.host_bytes, .prefetch_layers = 1, .recent_ratio = 0.25});
        Workload w;
        QVERIFY(adapter.observe(w.sample).empty());  // the first window starts
        std::vector<KvAdaptDecision> all;
        for (int i = 0; i < KvAdapter::kConfirmations; ++i) {
            QCOMPARE(adapter.choice().prefetch_layers, 1u);  // not before the last confirmation
            w.window(600, 4 * kMiB, 64 * 1024, 400, 300, 2 * kMiB, 3.0);
            for (KvAdaptDecision & d : adapter.observe(w.sample)) all.push_back(d);
        }
        const KvAdaptChoice & c = adapter.choice();
        QCOMPARE(all.size(), size_t(3));
        QVERIFY(c.device_bytes >= 4 * kMiB);
        QCOMPARE(c.device_bytes + c.host_bytes, 64 * kMiB);
        QCOMPARE(c.prefetch_layers, 2u);
        QCOMPARE(c.recent_ratio, KvAdapter::kChatRecent);
        for (const KvAdaptDecision & d : all) {
            QVERIFY(!d.what.empty() && !d.why.empty());
            QCOMPARE(d.ubatch, w.sample.ubatches);
        }
        QVERIFY(all[0].why.find("hit rate 75%") != std::string::npos);
    }

    // A long document whose layers outgrow a GPU's device tier: no prefetch (it would push
    // out what the pass still reads), a short recent window, and VRAM and RAM keep the
    // budgets planned for them.
    void longDocumentIsConservative() {
        const KvAdaptPlan plan{.device_bytes = 8 * kMiB, .host_bytes = 64 * kMiB, .shared_memory = false, .adapts_recent = true};
        KvAdapter adapter(plan,
                          {.device_bytes = plan.device_bytes, .host_bytes = plan.host_bytes, .prefetch_layers = 1, .recent_ratio = 0.5});
        Workload w;
        adapter.observe(w.sample);
        for (int i = 0; i < KvAdapter::kConfirmations; ++i) {
            w.window(20000, 48 * kMiB, 6 * kMiB, 64, 16, 40 * kMiB, 25.0);
            adapter.observe(w.sample);
        }
        const KvAdaptChoice & c = adapter.choice();
        QCOMPARE(c.prefetch_layers, 0u);
        QCOMPARE(c.recent_ratio, KvAdapter::kDocumentRecent);
        QCOMPARE(c.device_bytes, plan.device_bytes);
        QCOMPARE(c.host_bytes, plan.host_bytes);
    }

    // Measurements that swing every window between a chat and a document, hits and misses:
    // no change is ever confirmed.
    void hysteresisHoldsUnderNoise() {
        const KvAdaptPlan plan{.device_bytes = 2 * kMiB, .host_bytes = 30 * kMiB, .shared_memory = true, .adapts_recent = true};
        const KvAdaptChoice start{.device_bytes = plan.device_bytes,
                                  .host_bytes = plan.host_bytes,
                                  .prefetch_layers = 1,
                                  .recent_ratio = 0.5};
        KvAdapter adapter(plan, start);
        Workload w;
        adapter.observe(w.sample);
        for (int i = 0; i < 60; ++i) {
            if (i % 2 == 0) {
                w.window(500, 1 * kMiB, 16 * 1024, 100, 100, 0, 0);  // a chat that fits
            } else {
                w.window(30000, 28 * kMiB, 4 * kMiB, 100, 10, 8 * kMiB, 9.0);  // a document that does not
            }
            QVERIFY(adapter.observe(w.sample).empty());
        }
        QCOMPARE(adapter.choice().device_bytes, start.device_bytes);
        QCOMPARE(adapter.choice().prefetch_layers, start.prefetch_layers);
        QCOMPARE(adapter.choice().recent_ratio, start.recent_ratio);
    }

    // Random measurements for many windows: the split stays within the plan (the device never
    // below its planned budget, both together exactly the planned total).
    void budgetsNeverExceedThePlan() {
        const KvAdaptPlan plan{.device_bytes = 3 * kMiB, .host_bytes = 13 * kMiB, .shared_memory = true, .adapts_recent = false};
        KvAdapter adapter(plan,
                          {.device_bytes = plan.device_bytes, .host_bytes = plan.host_bytes, .prefetch_layers = 1, .recent_ratio = 0.5});
        std::mt19937 rng(5);
        Workload w;
        adapter.observe(w.sample);
        int changes = 0;
        for (int i = 0; i < 2000; ++i) {
            const uint64_t held = rng() % (40 * kMiB);
            const uint64_t reads = 1 + rng() % 500;
            w.window(1 + rng() % 40000, held, held / 8, reads, rng() % (reads + 1), rng() % (8 * kMiB), double(rng() % 20));
            changes += int(adapter.observe(w.sample).size());
            const KvAdaptChoice & c = adapter.choice();
            QVERIFY(c.device_bytes >= plan.device_bytes);
            QCOMPARE(c.device_bytes + c.host_bytes, plan.device_bytes + plan.host_bytes);
            QVERIFY(c.prefetch_layers <= 2);
            QCOMPARE(c.recent_ratio, 0.5);  // no policy with a recent window
        }
        QVERIFY(changes > 0);  // it did decide, within the plan
    }

    // ---- Settings, flags, stats ----------------------------------------------------------------

    void flagsParse() {
        auto args = cli::Args::parse({"--kv-demotion", "lru", "--kv-prefetch", "2", "--kv-adapt"}, cli::kv_flags());
        QVERIFY(args.ok());
        auto k = cli::kv_settings(*args);
        QVERIFY2(k.ok(), k.status().message().c_str());
        QCOMPARE(int(k->demotion), int(KvDemotion::lru));
        QCOMPARE(k->prefetch_layers, 2u);
        QVERIFY(k->adapt);
        auto none = cli::kv_settings(*cli::Args::parse({}, cli::kv_flags()));
        QVERIFY(none.ok());
        QCOMPARE(int(none->demotion), int(KvDemotion::cycle));
        QCOMPARE(none->prefetch_layers, 1u);
        QVERIFY(!none->adapt);
        for (KvDemotion order : {KvDemotion::cycle, KvDemotion::lru, KvDemotion::fifo})
            QCOMPARE(int(*kv_demotion_from_name(kv_demotion_name(order))), int(order));
    }

    void badFlagsSayWhy_data() {
        QTest::addColumn<QStringList>("argv");
        QTest::addColumn<QString>("message");
        QTest::newRow("order") << QStringList{"--kv-demotion", "mru"} << "unknown --kv-demotion 'mru' (cycle, lru or fifo)";
        QTest::newRow("depth") << QStringList{"--kv-prefetch", "3"} << "option --kv-prefetch must be between 0 and 2, got 3";
        QTest::newRow("depth text") << QStringList{"--kv-prefetch", "next"} << "option --kv-prefetch expects an integer, got 'next'";
        QTest::newRow("adapt value") << QStringList{"--kv-adapt=yes"} << "option --kv-adapt takes no value";
    }
    void badFlagsSayWhy() {
        QFETCH(QStringList, argv);
        QFETCH(QString, message);
        std::vector<std::string> v;
        for (const QString & a : argv) v.push_back(a.toStdString());
        Status st;
        if (auto args = cli::Args::parse(v, cli::kv_flags()); !args.ok()) {
            st = args.status();
        } else {
            st = cli::kv_settings(*args).status();
        }
        QCOMPARE(st.code(), StatusCode::invalid_argument);
        QCOMPARE(QString::fromStdString(st.message()), message);
        KvSettings deep;
        deep.prefetch_layers = 3;
        QVERIFY(validate(deep).message().find("prefetch depth") != std::string::npos);
    }

    void statsCarryTheDecisions() {
        KvStats s;
        s.move_ms = 12.5;
        s.fetch_wait_ms = 3.25;
        s.adapt_decisions.push_back({.at_s = 1.5, .ubatch = 12, .what = "prefetch 1 -> 2 layers ahead", .why = "a \"small\" layer"});
        const std::string json = to_json(s);
        QVERIFY2(json.find("\"move_ms\":12.500,\"fetch_wait_ms\":3.250,\"adapt_decisions\":[{\"at_s\":1.500,\"ubatch\":12,"
                           "\"what\":\"prefetch 1 -> 2 layers ahead\",\"why\":\"a \\\"small\\\" layer\"}]") != std::string::npos,
                 json.c_str());
        const std::string text = to_text(s);
        QVERIFY2(text.find("automatic, ubatch 12: prefetch 1 -> 2 layers ahead") != std::string::npos, text.c_str());
        QVERIFY2(text.find("waiting for fetches 3.2 ms") != std::string::npos, text.c_str());
    }
};

QTEST_GUILESS_MAIN(TestKvAdapter)
#include "test_kv_adapter.moc"
