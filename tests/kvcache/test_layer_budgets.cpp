// Per-layer budgets: every shape keeps the total (n_layers x the uniform budget) with the
// floor and the sequence as bounds, pyramid falls and inverse rises going up, the ramp is
// PyramidKV's; in a cache each full-attention layer keeps exactly its budget after eviction
// and after SnapKV's selection at a prompt's end, the retention view still averages over the
// layers; the setting reaches eval-kv, and uniform measures as without it.
#include <QtTest>

#include <numeric>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/kv_evaluation.h"
#include "kvcache/kv_cache.h"
#include "kvcache/layer_budgets.h"
#include "kvcache/selection_policy.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

Q_DECLARE_METATYPE(lr::KvLayerBudget)
Q_DECLARE_METATYPE(lr::KvPolicy)

namespace {

uint64_t total(const std::vector<uint32_t> & b) { return std::accumulate(b.begin(), b.end(), uint64_t(0)); }

constexpr uint32_t kLayers = 4, kHeads = 2, kDim = 8;

// A cache of kLayers full-attention layers fed through the CPU backend's kv_write (no
// attention: the mass stays zero, which is all the counts below need).
struct LayeredCache {
    CpuBackend backend{{.n_threads = 1}};
    std::unique_ptr<KvCache> kv;

    explicit LayeredCache(KvSettings settings) {
        settings.block_tokens = 8;
        settings.prefix_cache = false;
        KvCacheConfig c{.settings = settings, .max_tokens = 1024};
        c.rope = {.n_rot = kDim, .head_dim = kDim};
        kv = std::move(KvCache::create(c, {.n_layer = kLayers, .n_head_kv = kHeads, .head_dim = kDim}, backend)).value();
    }

    // Feeds n tokens as a prompt (in the ubatches the policy asks for) or as decode steps.
    void feed(uint32_t n, bool prompt) {
        std::vector<int32_t> tokens(n, 5);
        for (uint32_t done = 0; done < n;) {
            const std::span<const int32_t> rest = std::span(tokens).subspan(done, prompt ? n - done : 1);
            auto plan = kv->plan(0, {.tokens = rest, .max_tokens = 64, .prompt = prompt});
            QVERIFY(plan.ok());
            const uint32_t m = plan->n_tokens();
            std::vector<float> k(size_t(m) * kHeads * kDim, 0.25f), v = k;
            for (uint32_t il = 0; il < kLayers; ++il) {
                auto view = kv->layer_view(*plan, il, nullptr);
                QVERIFY(view.ok());
                backend.kv_write(*view, k.data(), v.data(), plan->positions().data(), m);
            }
            kv->apply(*plan);
            done += m;
        }
    }

    // The positions one KV head of layer il keeps.
    uint32_t kept(uint32_t il, uint32_t head) {
        auto rows = kv->layer_rows(0, il, head, true);
        return rows.ok() ? uint32_t(rows->size() / kDim) : 0;
    }
};

KvModelShape layered_shape() { return {.n_layer = kLayers, .n_head_kv = kHeads, .head_dim = kDim}; }

}  // namespace

class TestLayerBudgets : public QObject {
    Q_OBJECT

private slots:
    // ---- The shapes, on plain numbers -----------------------------------------------------

    void shapesKeepTheTotal_data() {
        QTest::addColumn<KvLayerBudget>("shape");
        QTest::addColumn<uint32_t>("layers");
        QTest::addColumn<uint32_t>("budget");
        QTest::addColumn<uint32_t>("floor");
        QTest::addColumn<uint32_t>("tokens");
        for (KvLayerBudget shape : {KvLayerBudget::uniform, KvLayerBudget::pyramid, KvLayerBudget::inverse}) {
            const QByteArray name(kv_layer_budget_name(shape).data());
            QTest::newRow(name + " 5 layers, 20%") << shape << 5u << 103u << 55u << 512u;
            QTest::newRow(name + " 28 layers, 10%") << shape << 28u << 410u << 36u << 4096u;
            QTest::newRow(name + " 2 layers") << shape << 2u << 50u << 10u << 200u;
            QTest::newRow(name + " 7 layers, rounding") << shape << 7u << 13u << 6u << 100u;
            QTest::newRow(name + " near the sequence") << shape << 6u << 90u << 8u << 100u;  // the bottom is capped
            QTest::newRow(name + " floor above the budget") << shape << 6u << 5u << 20u << 100u;
            QTest::newRow(name + " one layer") << shape << 1u << 40u << 8u << 100u;
        }
    }
    void shapesKeepTheTotal() {
        QFETCH(KvLayerBudget, shape);
        QFETCH(uint32_t, layers);
        QFETCH(uint32_t, budget);
        QFETCH(uint32_t, floor);
        QFETCH(uint32_t, tokens);
        const std::vector<uint32_t> b = layer_budgets(
            {.shape = shape, .n_layers = layers, .budget = budget, .floor = floor, .n_tokens = tokens});
        QCOMPARE(b.size(), size_t(layers));
        QCOMPARE(total(b), uint64_t(layers) * budget);
        for (uint32_t x : b) {
            QVERIFY(x >= std::min(floor, budget));
            QVERIFY(x <= tokens);
        }
        for (uint32_t i = 1; i < layers; ++i) {
            if (shape == KvLayerBudget::uniform) QCOMPARE(b[i], budget);
            if (shape == KvLayerBudget::pyramid) QVERIFY(b[i] <= b[i - 1]);
            if (shape == KvLayerBudget::inverse) QVERIFY(b[i] >= b[i - 1]);
        }
        // A shape that has room to move anything does.
        if (shape != KvLayerBudget::uniform && layers > 1 && floor < budget) QVERIFY(b.front() != b.back());
    }

    void pyramidFollowsPyramidKvsRamp() {
        // 5 layers, 20% of 512 (103 tokens), 4 sinks + a 32-token window: 67 selected tokens
        // per layer on average; the top layer selects 1/20 of that, the bottom 39/20 of it.
        const LayerBudgetRequest r{.shape = KvLayerBudget::pyramid, .n_layers = 5, .budget = 103, .floor = 36, .n_tokens = 512};
        const std::vector<uint32_t> pyramid = layer_budgets(r);
        const double mean = 103 - 36;
        QVERIFY(std::abs(double(pyramid.back() - 36) - mean / kPyramidBeta) <= 1.0);
        QVERIFY(std::abs(double(pyramid.front() - 36) - mean * (2 - 1 / kPyramidBeta)) <= 1.0);
        // Equal steps between layers (an arithmetic ramp), to a token.
        for (uint32_t i = 2; i < 5; ++i) QVERIFY(std::abs(int(pyramid[i - 1] - pyramid[i]) - int(pyramid[0] - pyramid[1])) <= 1);
        LayerBudgetRequest up = r;
        up.shape = KvLayerBudget::inverse;
        std::vector<uint32_t> inverse = layer_budgets(up);
        std::reverse(inverse.begin(), inverse.end());
        for (uint32_t i = 0; i < 5; ++i) QVERIFY(std::abs(int(inverse[i]) - int(pyramid[i])) <= 1);
    }

    void streamingIsUniformWhateverTheShape() {
        KvSettings s;
        s.policy = KvPolicy::streaming;
        s.layer_budget = KvLayerBudget::pyramid;
        auto policy = SelectionPolicy::create(s, {.block_tokens = 8, .n_head_kv = kHeads, .head_dim = kDim}, 1024);
        const std::vector<uint32_t> b = layer_budgets(*policy, layered_shape(), 40, 400, false);
        QCOMPARE(b, std::vector<uint32_t>(kLayers, 40u));
    }

    void onlyFullAttentionLayersAreShaped() {
        KvSettings s;
        s.policy = KvPolicy::h2o;
        s.layer_budget = KvLayerBudget::pyramid;
        auto policy = SelectionPolicy::create(s, {.block_tokens = 8, .n_head_kv = kHeads, .head_dim = kDim}, 1024);
        KvModelShape shape{.n_layer = 5, .n_head_kv = kHeads, .head_dim = kDim};
        shape.layers = {{.kind = KvLayerKind::full},
                        {.kind = KvLayerKind::sliding_window, .window = 64},
                        {.kind = KvLayerKind::full},
                        {.kind = KvLayerKind::recurrent, .state_bytes = 1024},
                        {.kind = KvLayerKind::full}};
        const std::vector<uint32_t> b = layer_budgets(*policy, shape, 100, 500, false);
        QCOMPARE(b[1], 100u);  // not evicting: the uniform budget, unused
        QCOMPARE(b[3], 100u);
        QVERIFY(b[0] > b[2] && b[2] > b[4]);
        QCOMPARE(b[0] + b[2] + b[4], 300u);
    }

    void namesAndErrors() {
        for (KvLayerBudget shape : {KvLayerBudget::uniform, KvLayerBudget::pyramid, KvLayerBudget::inverse})
            QVERIFY(kv_layer_budget_from_name(kv_layer_budget_name(shape)) == shape);
        QVERIFY(!kv_layer_budget_from_name("pyramidal"));
        QVERIFY(!kv_layer_budget_from_name(""));
        KvSettings s;
        s.layer_budget = KvLayerBudget(7);
        const Status st = validate(s);
        QVERIFY(!st.ok());
        QVERIFY2(st.message().find("uniform, pyramid or inverse") != std::string::npos, st.message().c_str());
        // describe() names a shape where it applies.
        s.layer_budget = KvLayerBudget::inverse;
        s.policy = KvPolicy::h2o;
        QVERIFY(describe(s).find("inverse layers") != std::string::npos);
        s.policy = KvPolicy::streaming;
        QVERIFY(describe(s).find("layers") == std::string::npos);
        s.layer_budget = KvLayerBudget::uniform;
        s.policy = KvPolicy::h2o;
        QVERIFY(describe(s).find("layers") == std::string::npos);
    }

    // ---- In the cache ---------------------------------------------------------------------

    void everyLayerKeepsItsBudget_data() {
        QTest::addColumn<KvPolicy>("policy");
        QTest::addColumn<KvLayerBudget>("shape");
        for (KvPolicy policy : {KvPolicy::h2o, KvPolicy::random, KvPolicy::snapkv}) {
            for (KvLayerBudget shape : {KvLayerBudget::uniform, KvLayerBudget::pyramid, KvLayerBudget::inverse}) {
                QTest::newRow((std::string(kv_policy_name(policy)) + " " + std::string(kv_layer_budget_name(shape))).c_str())
                    << policy << shape;
            }
        }
    }
    void everyLayerKeepsItsBudget() {
        QFETCH(KvPolicy, policy);
        QFETCH(KvLayerBudget, shape);
        KvSettings s;
        s.policy = policy;
        s.keep_ratio = 0.25;
        s.obs_window = 8;
        s.layer_budget = shape;
        LayeredCache c(s);
        // A 160-token prompt: h2o and random evict after each ubatch, snapkv selects at its end.
        c.feed(160, true);
        const uint32_t n = 160, budget = s.budget_for(n);
        auto p = SelectionPolicy::create(s, c.kv->block_shape(), 1024);
        const std::vector<uint32_t> expected = layer_budgets(*p, layered_shape(), budget, n, policy == KvPolicy::snapkv);
        QCOMPARE(total(expected), uint64_t(kLayers) * budget);
        for (uint32_t il = 0; il < kLayers; ++il) {
            for (uint32_t g = 0; g < kHeads; ++g) QCOMPARE(c.kept(il, g), expected[il]);
        }
        if (shape == KvLayerBudget::pyramid) QVERIFY(expected.front() > expected.back());
        if (shape == KvLayerBudget::inverse) QVERIFY(expected.front() < expected.back());
        // The mean over layers is the uniform budget, and the retention view (a share of the
        // (layer, head) pairs per position) still sums to it.
        QCOMPARE(c.kv->n_kept(0), budget);
        const std::vector<float> r = c.kv->retention(0);
        QCOMPARE(std::accumulate(r.begin(), r.end(), 0.0), double(budget));
        QCOMPARE(r.front(), 1.0f);  // a sink, in every layer
        QCOMPARE(r.back(), 1.0f);   // the newest, in every layer
        // Decoding: h2o and random keep every layer at its budget as the sequence grows.
        if (policy == KvPolicy::snapkv) return;
        c.feed(20, false);
        const std::vector<uint32_t> later = layer_budgets(*p, layered_shape(), s.budget_for(180), 180, false);
        for (uint32_t il = 0; il < kLayers; ++il) QCOMPARE(c.kept(il, 0), later[il]);
    }

    // ---- Measured ---------------------------------------------------------------------------

    // eval-kv on stories260K: the shapes reach the cache (pyramid and inverse measure
    // differently from uniform), and uniform measures as the cache without the setting did
    // (test_selection_policy's oracle, the numbers of commit 888c6aa, runs with uniform).
    void shapesReachTheEvaluation() {
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend);
        QVERIFY(model.ok());
        QFile f(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const std::vector<int32_t> tokens = (*model)->tokenizer().encode(f.readAll().toStdString(), true, false);
        KvSettings kv;
        kv.policy = KvPolicy::h2o;
        kv.keep_ratio = 0.25;
        kv.block_tokens = 8;
        kv.prefix_cache = false;
        kv.warmup_tokens = 0;  // as test_selection_policy's oracle
        std::vector<double> kld;
        for (KvLayerBudget shape : {KvLayerBudget::uniform, KvLayerBudget::pyramid, KvLayerBudget::inverse}) {
            kv.layer_budget = shape;
            auto e = evaluate_kv_policy(*model, tokens, 128, kv, 2);
            QVERIFY2(e.ok(), e.status().message().c_str());
            kld.push_back(e->kld);
        }
        QVERIFY2(std::abs(kld[0] - 0.16857760) < 1e-8, qPrintable(QString::number(kld[0], 'f', 10)));  // test_selection_policy's h2o row
        QVERIFY(kld[1] != kld[0] && kld[2] != kld[0] && kld[1] != kld[2]);
    }
};

QTEST_GUILESS_MAIN(TestLayerBudgets)
#include "test_layer_budgets.moc"
