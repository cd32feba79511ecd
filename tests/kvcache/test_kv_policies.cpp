// The lossy policies: on hand-made attention patterns the heavy hitters are the ones kept,
// sinks are never dropped, budgets are exact, an evicted position never comes back; the
// codecs stay within their error bounds and leave the recent window untouched; streaming
// runs past the trained context; quest reads fewer blocks and drops nothing.
#include <QtTest>

#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "engine/api/memory_plan.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "engine/model/random_model_writer.h"
#include "engine/runtime/generator.h"
#include "kvcache/kv_cache.h"
#include "kvcache/page_bounds.h"
#include "kvcache/token_selection.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

std::vector<int32_t> iota_positions(int32_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) p[size_t(i)] = i;
    return p;
}

// A KvCache over a synthetic shape, fed through the CPU backend's kv_write, with the
// attention mass of each layer view set by the test instead of by attention.
struct SyntheticCache {
    CpuBackend backend{{.n_threads = 1}};
    std::unique_ptr<KvCache> kv;
    static constexpr uint32_t kHeads = 2, kDim = 8;

    explicit SyntheticCache(KvSettings settings, uint32_t max_tokens = 1024) {
        settings.block_tokens = 8;
        settings.warmup_tokens = 0;  // the policies act from the first ubatch (test_kv_warmup: after one)
        KvCacheConfig c{.settings = settings, .max_tokens = max_tokens};
        c.rope = {.n_rot = kDim, .head_dim = kDim};
        kv = std::move(KvCache::create(c, {.n_layer = 1, .n_head_kv = kHeads, .head_dim = kDim}, backend)).value();
    }

    // Appends n tokens; mass(position, head) is the attention each cached slot receives.
    // prompt_end: they end a prompt (SnapKV's observation window, then its selection).
    void append(uint32_t n, const std::function<float(int32_t, uint32_t)> & mass, bool prompt_end = false) {
        std::vector<int32_t> tokens(n, 5);
        auto plan = kv->plan(0, {.tokens = tokens, .max_tokens = n, .prompt = prompt_end});
        QVERIFY(plan.ok());
        QCOMPARE(plan->n_tokens(), n);
        auto view = kv->layer_view(*plan, 0, nullptr);
        QVERIFY(view.ok());
        std::vector<float> k(size_t(n) * kHeads * kDim, 0.25f), v = k;
        backend.kv_write(*view, k.data(), v.data(), plan->positions().data(), n);
        if (view->attn_mass) {
            for (uint32_t b = 0; b < view->n_blocks(); ++b) {
                const auto * bpos = reinterpret_cast<const int32_t *>(view->blocks[b].data + view->layout(b).pos_offset());
                for (uint32_t g = 0; g < kHeads; ++g) {
                    for (uint32_t s = 0; s < 8; ++s) {
                        const int32_t p = bpos[g * 8 + s];
                        if (p != kInvalidPos) view->attn_mass[(size_t(b) * kHeads + g) * 8 + s] = mass(p, g);
                    }
                }
            }
        }
        kv->apply(*plan);
    }

    std::vector<float> retention() const { return kv->retention(0); }
    // Positions held by any head.
    std::set<int32_t> held() const {
        std::set<int32_t> out;
        const std::vector<float> r = retention();
        for (size_t p = 0; p < r.size(); ++p) {
            if (r[p] > 0) out.insert(int32_t(p));
        }
        return out;
    }
};

// A session with K q8 / V q4 past a full-precision window of `residual` tokens.
SessionConfig q8_q4_config(uint32_t chunk, uint32_t residual) {
    SessionConfig c{.n_ctx = 512, .chunk_tokens = chunk};
    c.kv.prefix_cache = false;
    c.kv.k_bits = 8;
    c.kv.v_bits = 4;
    c.kv.residual_tokens = residual;
    c.kv.warmup_tokens = 0;  // blocks narrow as soon as they age
    return c;
}

// 300 tokens in a fixed pattern.
std::vector<int32_t> patterned_prompt() {
    std::vector<int32_t> prompt(300);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + (i * 37) % 500);
    return prompt;
}

float sum(const std::vector<float> & v) { return std::accumulate(v.begin(), v.end(), 0.0f); }

}  // namespace

class TestKvPolicies : public QObject {
    Q_OBJECT

private slots:
    // ---- select_positions on hand-made patterns ----------------------------------------

    void heavyHittersSinksAndRecentAreKept() {
        const std::vector<int32_t> pos = iota_positions(40);
        std::vector<float> score(40, 0.01f);
        score[10] = 5.0f;  // two heavy hitters
        score[25] = 3.0f;
        std::vector<uint8_t> keep;
        select_positions(pos, score, {.budget = 10, .sinks = 4, .recent = 4}, keep);
        QCOMPARE(std::count(keep.begin(), keep.end(), 1), 10);
        for (int i = 0; i < 4; ++i) QVERIFY(keep[size_t(i)]);    // sinks
        for (int i = 36; i < 40; ++i) QVERIFY(keep[size_t(i)]);  // recent
        QVERIFY(keep[10] && keep[25]);                           // heavy hitters
        // Among equal scores the more recent position wins.
        score[10] = score[25] = 0.01f;
        select_positions(pos, score, {.budget = 10, .sinks = 4, .recent = 4}, keep);
        QVERIFY(keep[35] && keep[34] && !keep[33]);
    }

    void budgetIsExact_data() {
        QTest::addColumn<uint32_t>("budget");
        QTest::addColumn<uint32_t>("sinks");
        QTest::addColumn<uint32_t>("recent");
        QTest::newRow("all-recent") << 7u << 0u << 7u;
        QTest::newRow("sinks-exceed") << 3u << 4u << 2u;
        QTest::newRow("recent-exceeds") << 8u << 2u << 20u;
        QTest::newRow("budget-above-held") << 100u << 4u << 10u;
        QTest::newRow("zero") << 0u << 4u << 4u;
    }
    void budgetIsExact() {
        QFETCH(uint32_t, budget);
        QFETCH(uint32_t, sinks);
        QFETCH(uint32_t, recent);
        std::vector<int32_t> pos = iota_positions(50);
        for (size_t i = 0; i < pos.size(); i += 7) pos[i] = kInvalidPos;  // holes are never kept
        std::mt19937 rng(3);
        std::vector<float> score(pos.size());
        for (float & s : score) s = float(rng() % 1000);
        std::vector<uint8_t> keep;
        select_positions(pos, score, {.budget = budget, .sinks = sinks, .recent = recent}, keep);
        const auto held = std::count_if(pos.begin(), pos.end(), [](int32_t p) { return p != kInvalidPos; });
        QCOMPARE(std::count(keep.begin(), keep.end(), 1), std::min<long>(budget, long(held)));
        for (size_t i = 0; i < pos.size(); ++i) {
            if (pos[i] == kInvalidPos) QVERIFY(!keep[i]);
        }
    }

    // Selection is by position and score, whatever slot holds them: shuffled slots (the
    // sorting fallback) keep the same positions as slots in position order (the fast path),
    // with ties in the scores broken the same way.
    void selectionDoesNotDependOnSlotOrder() {
        std::mt19937 rng(11);
        std::vector<int32_t> pos = iota_positions(300);
        std::vector<float> score(pos.size());
        for (float & s : score) s = float(rng() % 50);  // many ties
        const SelectionParams params{.budget = 60, .sinks = 4, .recent = 20};
        std::vector<uint8_t> keep;
        select_positions(pos, score, params, keep);
        std::vector<size_t> order(pos.size());
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<int32_t> shuffled_pos;
        std::vector<float> shuffled_score;
        for (size_t i : order) {
            shuffled_pos.push_back(pos[i]);
            shuffled_score.push_back(score[i]);
        }
        std::vector<uint8_t> shuffled_keep;
        select_positions(shuffled_pos, shuffled_score, params, shuffled_keep);
        for (size_t k = 0; k < order.size(); ++k) QCOMPARE(shuffled_keep[k], keep[order[k]]);
        QCOMPARE(std::count(keep.begin(), keep.end(), 1), 60);
        // The kept scored part is the best of the rest: nothing dropped outscores it.
        float worst_kept = INFINITY, best_dropped = -INFINITY;
        for (size_t i = 4; i + 20 < pos.size(); ++i) {
            if (keep[i]) worst_kept = std::min(worst_kept, score[i]);
            else best_dropped = std::max(best_dropped, score[i]);
        }
        QVERIFY(worst_kept >= best_dropped);
    }

    void maxPoolingSpreadsAPeak() {
        std::vector<int32_t> pos = iota_positions(12);
        std::swap(pos[3], pos[8]);  // slot order is not position order
        std::vector<float> score(12, 0.0f);
        score[5] = 1.0f;  // position 5
        const std::vector<float> pooled = max_pool_scores(pos, score, 5);
        for (size_t i = 0; i < pos.size(); ++i) QCOMPARE(pooled[i], std::abs(pos[i] - 5) <= 2 ? 1.0f : 0.0f);
    }

    void h2oScoresAreMassPerQuery() {
        // Position 2 gathered 3.0 from 30 queries, position 20 gathered 2.0 from 12: the
        // younger one draws more attention per query and outranks the older.
        const std::vector<int32_t> pos{2, kInvalidPos, 20, 31};
        const std::vector<float> mass{3.0f, 0.0f, 2.0f, 0.5f};
        const std::vector<float> score = mean_attention_scores(pos, mass, 32);
        QCOMPARE(score[0], 0.1f);
        QCOMPARE(score[1], 0.0f);
        QCOMPARE(score[2], 2.0f / 12.0f);
        QCOMPARE(score[3], 0.5f);  // seen by the newest query only
        QVERIFY(score[2] > score[0]);
        // Mass collected from query 24 on (snapkv's observation window): positions before it
        // were seen by the same 8 queries.
        const std::vector<float> late = mean_attention_scores(pos, mass, 32, 24);
        QCOMPARE(late[0], 3.0f / 8.0f);
        QCOMPARE(late[2], 2.0f / 8.0f);
        QCOMPARE(late[3], 0.5f);
    }

    void randomScoresAreDeterministic() {
        QCOMPARE(random_scores(64, 7), random_scores(64, 7));
        QVERIFY(random_scores(64, 7) != random_scores(64, 8));
    }

    // ---- through the cache ----------------------------------------------------------------

    void h2oKeepsTheHeavyHittersAndNeverRevives() {
        KvSettings s;
        s.policy = KvPolicy::h2o;
        s.budget_tokens = 16;
        s.sink_tokens = 2;
        s.recent_ratio = 0.25;  // 4 recent
        SyntheticCache c(s);
        // Position 13 draws attention in head 0, position 29 in head 1.
        auto mass = [](int32_t p, uint32_t g) { return (g == 0 && p == 13) || (g == 1 && p == 29) ? 1.0f : 0.001f; };
        std::set<int32_t> ever_evicted;
        for (int step = 0; step < 12; ++step) {
            c.append(step == 0 ? 40 : 3, mass);
            const std::vector<float> r = c.retention();
            // Exactly the budget in each head (the retention, a share of the heads, sums to it).
            QCOMPARE(sum(r), 16.0f);
            QCOMPARE(r[0], 1.0f);  // sinks
            QCOMPARE(r[1], 1.0f);
            QCOMPARE(r.back(), 1.0f);  // the newest
            QVERIFY(r[13] >= 0.5f && r[29] >= 0.5f);
            for (size_t p = 0; p < r.size(); ++p) {
                if (r[p] == 0.0f) ever_evicted.insert(int32_t(p));
                if (ever_evicted.count(int32_t(p))) QCOMPARE(r[p], 0.0f);  // never revived
            }
            QCOMPARE(c.kv->n_kept(0), 16u);
        }
        QVERIFY(c.kv->stats().evicted_tokens > 0);
    }

    void snapkvSelectsFromTheObservationWindow() {
        KvSettings s;
        s.policy = KvPolicy::snapkv;
        s.budget_tokens = 24;
        s.sink_tokens = 2;
        s.obs_window = 8;
        s.pool_kernel = 3;
        SyntheticCache c(s);
        c.append(56, [](int32_t, uint32_t) { return 0.0f; });
        // The observation window votes for position 30 (head 0) and 40 (head 1).
        c.append(
            8, [](int32_t p, uint32_t g) { return (g == 0 && p == 30) || (g == 1 && p == 40) ? 1.0f : 0.001f; }, true);
        const std::vector<float> r = c.retention();
        QCOMPARE(sum(r), 24.0f);                                     // the budget, in each head
        for (int p = 56; p < 64; ++p) QCOMPARE(r[size_t(p)], 1.0f);  // the window itself
        QCOMPARE(r[0], 1.0f);
        // Pooling keeps the neighbours of the voted position.
        for (int p : {29, 30, 31}) QVERIFY(r[size_t(p)] >= 0.5f);
        for (int p : {39, 40, 41}) QVERIFY(r[size_t(p)] >= 0.5f);
        // With --then none, decoding keeps growing.
        c.append(1, [](int32_t, uint32_t) { return 0.0f; });
        QCOMPARE(sum(c.retention()), 25.0f);
    }

    void streamingKeepsSinksAndAWindow() {
        KvSettings s;
        s.policy = KvPolicy::streaming;
        s.budget_tokens = 12;
        s.sink_tokens = 4;
        SyntheticCache c(s);
        for (int step = 0; step < 5; ++step) c.append(10, [](int32_t, uint32_t) { return 0.0f; });
        const std::set<int32_t> held = c.held();
        QCOMPARE(held, (std::set<int32_t>{0, 1, 2, 3, 42, 43, 44, 45, 46, 47, 48, 49}));
    }

    void streamingRenumbersPastTheContext() {
        KvSettings s;
        s.policy = KvPolicy::streaming;
        s.budget_tokens = 12;
        s.sink_tokens = 4;
        SyntheticCache c(s, /*max_tokens=*/32);
        // A cache of 32 positions takes 200 tokens: positions are reassigned inside it.
        for (int step = 0; step < 40; ++step) c.append(5, [](int32_t, uint32_t) { return 0.0f; });
        QCOMPARE(c.kv->n_tokens(0), 200u);
        QVERIFY(c.kv->next_position(0) <= 32);
        const std::set<int32_t> held = c.held();
        QCOMPARE(held.size(), size_t(12));
        QVERIFY(held.count(0) && held.count(3));
    }

    void randomBaselineKeepsTheBudget() {
        KvSettings s;
        s.policy = KvPolicy::random;
        s.budget_tokens = 20;
        SyntheticCache c(s);
        c.append(100, [](int32_t, uint32_t) { return 0.0f; });
        QCOMPARE(sum(c.retention()), 20.0f);
        QCOMPARE(c.retention()[0], 1.0f);
    }

    // ---- codecs ---------------------------------------------------------------------------

    void codecRoundTripWithinBounds_data() {
        QTest::addColumn<int>("codec");
        QTest::addColumn<uint32_t>("head_dim");
        QTest::addColumn<double>("bound");
        QTest::newRow("f16-64") << int(KvCodec::f16) << 64u << 1e-3;
        QTest::newRow("q8-64") << int(KvCodec::q8) << 64u << 1.2e-2;
        QTest::newRow("q8-8") << int(KvCodec::q8) << 8u << 1.2e-2;
        QTest::newRow("q4-64") << int(KvCodec::q4) << 64u << 1.2e-1;
        QTest::newRow("q4-8") << int(KvCodec::q4) << 8u << 1.2e-1;
        QTest::newRow("q8-80") << int(KvCodec::q8) << 80u << 1.2e-2;  // groups of 16
    }
    void codecRoundTripWithinBounds() {
        QFETCH(int, codec);
        QFETCH(uint32_t, head_dim);
        QFETCH(double, bound);
        const KvCodec c = KvCodec(codec);
        std::mt19937 rng(11);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        double err = 0, norm = 0;
        std::vector<float> x(head_dim), y(head_dim);
        std::vector<uint8_t> bytes(kv_codec_row_bytes(c, head_dim));
        for (int trial = 0; trial < 200; ++trial) {
            for (float & v : x) v = normal(rng);
            kv_encode_row(c, x.data(), bytes.data(), head_dim);
            kv_decode_row(c, bytes.data(), y.data(), head_dim);
            for (uint32_t i = 0; i < head_dim; ++i) {
                err += double(x[i] - y[i]) * double(x[i] - y[i]);
                norm += double(x[i]) * double(x[i]);
            }
        }
        const double rel = std::sqrt(err / norm);
        qInfo("%s head %u: relative RMS error %.4g", std::string(kv_codec_name(c)).c_str(), head_dim, rel);
        QVERIFY(rel < bound);
        // A row encoded again after decoding is unchanged (compaction moves rows losslessly).
        kv_encode_row(c, x.data(), bytes.data(), head_dim);
        kv_decode_row(c, bytes.data(), y.data(), head_dim);
        std::vector<uint8_t> again(bytes.size());
        kv_encode_row(c, y.data(), again.data(), head_dim);
        QCOMPARE(again, bytes);
    }

    void quantizedCacheKeepsTheRecentWindowInFullPrecision() {
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared_path("models/tiny/tiny-llama-Q8_0.gguf").toStdString(), backend);
        QVERIFY(model.ok());
        const SessionConfig c = q8_q4_config(64, 128);
        auto session = Session::create(*model, c);
        QVERIFY(session.ok());
        const std::vector<int32_t> prompt = patterned_prompt();
        QVERIFY((*session)->append(prompt).ok());
        for (uint32_t il = 0; il < 2; ++il) {
            const auto codecs = (*session)->kv_cache().layer_codecs(0, il);
            QCOMPARE(codecs.size(), size_t(10));  // 300 tokens in blocks of 32
            // Blocks wholly older than the 128 most recent slots are re-encoded; the rest stay f16.
            for (size_t b = 0; b < codecs.size(); ++b) {
                const bool aged = (b + 1) * 32 + 128 <= 300;
                QCOMPARE(codecs[b].first, aged ? KvCodec::q8 : KvCodec::f16);
                QCOMPARE(codecs[b].second, aged ? KvCodec::q4 : KvCodec::f16);
            }
        }
        // And the cache is smaller than f16 would be.
        SessionConfig f16 = c;
        f16.kv.k_bits = f16.kv.v_bits = 16;
        auto full = Session::create(*model, f16);
        QVERIFY((*full)->append(prompt).ok());
        QVERIFY((*session)->kv_stats().tiers[0].used_bytes < (*full)->kv_stats().tiers[0].used_bytes * 4 / 5);
    }

    // An edit cuts the sequence inside a block that was already quantized: the block is back
    // in the full-precision window, so it is widened to f16 before new rows go in (they were
    // quantized on arrival before). The result matches a session that read the same tokens
    // straight through, up to the rounding of the widened rows: far closer than quantization
    // itself is to the f16 cache.
    void truncatingIntoAQuantizedBlockWidensIt() {
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared_path("models/tiny/tiny-llama-Q8_0.gguf").toStdString(), backend);
        QVERIFY(model.ok());
        // One token per ubatch and no full-precision window: every query of both runs sees
        // the same blocks quantized (those full before it).
        const SessionConfig c = q8_q4_config(1, 0);
        const std::vector<int32_t> prompt = patterned_prompt();
        auto straight = std::move(Session::create(*model, c)).value();
        QVERIFY(straight->append(prompt).ok());
        SessionConfig f16 = c;
        f16.kv.k_bits = f16.kv.v_bits = 16;
        auto exact = std::move(Session::create(*model, f16)).value();
        QVERIFY(exact->append(prompt).ok());

        auto edited = std::move(Session::create(*model, c)).value();
        std::vector<int32_t> other = prompt;
        for (size_t i = 150; i < other.size(); ++i) other[i] = int32_t(7 + (i * 11) % 400);
        QVERIFY(edited->append(other).ok());
        QCOMPARE(edited->kv_cache().layer_codecs(0, 0)[4].first, KvCodec::q8);  // slots 128-159, aged
        edited->truncate(150);
        QCOMPARE(edited->kv_cache().layer_codecs(0, 0)[4].first, KvCodec::f16);  // widened for the new rows
        QVERIFY(edited->append(std::span(prompt).subspan(150)).ok());

        auto max_diff = [](std::span<const float> a, std::span<const float> b) {
            float d = 0;
            for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
            return d;
        };
        const float edit_error = max_diff(straight->logits(), edited->logits());
        const float codec_error = max_diff(straight->logits(), exact->logits());
        qInfo("max |logit difference|: edited vs straight %.5f, quantized vs f16 %.5f", double(edit_error), double(codec_error));
        QVERIFY(edit_error < 0.25f * codec_error);
    }

    // Quest ranks pages per KV head and each head reads only its own: a head whose best
    // page scores low still reads it, and not the pages of the head with the large query.
    // The layer fetches the blocks some head reads.
    void questGivesEveryHeadItsBestPages() {
        KvSettings settings;
        settings.policy = KvPolicy::quest;
        settings.quest_page = 4;   // two pages per 8-token block
        settings.quest_pages = 3;  // the new token's page + 2 by their bounds, per head
        settings.sink_tokens = 0;
        settings.recent_ratio = 0;
        SyntheticCache c(settings);
        constexpr uint32_t kHeads = SyntheticCache::kHeads, kDim = SyntheticCache::kDim, n = 48;  // 12 pages of 4
        std::vector<float> k(size_t(n) * kHeads * kDim, 0.0f), v = k;
        auto key = [&](uint32_t token, uint32_t head, uint32_t channel) -> float & {
            return k[(size_t(token) * kHeads + head) * kDim + channel];
        };
        for (uint32_t t = 0; t < 4; ++t) {
            key(12 + t, 0, 0) = 10;  // head 0: pages 3, 7, 8 score 10, 9, 8
            key(28 + t, 0, 0) = 9;
            key(32 + t, 0, 0) = 8;
            key(20 + t, 1, 1) = 1;  // head 1: pages 5 and 10 at 1 and 0.5, page 2 below the rest
            key(40 + t, 1, 1) = 0.5f;
            key(8 + t, 1, 1) = -3;
        }
        const std::vector<int32_t> tokens(n, 5);
        auto prompt = c.kv->plan(0, {.tokens = tokens, .max_tokens = n, .prompt = true});
        QVERIFY(prompt.ok());
        auto prefill = c.kv->layer_view(*prompt, 0, nullptr);
        QVERIFY(prefill.ok());
        c.backend.kv_write(*prefill, k.data(), v.data(), prompt->positions().data(), n);
        c.kv->apply(*prompt);

        const int32_t next = 5;
        auto step = c.kv->plan(0, {.tokens = std::span(&next, 1), .max_tokens = 1});
        QVERIFY(step.ok());
        QVERIFY(step->reads_by_query());
        std::vector<float> q(size_t(kHeads) * kDim, 0.0f);
        q[0] = 1;         // head 0 looks along channel 0
        q[kDim + 1] = 1;  // head 1 along channel 1
        auto view = c.kv->layer_view(*step, 0, q.data());
        QVERIFY(view.ok());
        QCOMPARE(view->page_tokens, 4u);
        QCOMPARE(view->read_pages.size(), size_t(view->n_blocks()) * kHeads);
        // Per head, the pages read (as first positions), the new token's block aside.
        std::set<int32_t> pages_read[kHeads];
        for (uint32_t b = 0; b + 1 < view->n_blocks(); ++b) {
            const auto * pos = reinterpret_cast<const int32_t *>(view->blocks[b].data + view->layout(b).pos_offset());
            for (uint32_t g = 0; g < kHeads; ++g) {
                for (uint32_t s = 0; s < 8; s += 4) {
                    if (view->reads(b, g, s)) pages_read[g].insert(pos[g * 8 + s] / 4);
                }
            }
        }
        QCOMPARE(pages_read[0], (std::set<int32_t>{3, 7}));
        QCOMPARE(pages_read[1], (std::set<int32_t>{5, 10}));
        QCOMPARE(view->n_blocks(), 5u);                                                           // blocks 1, 2, 3, 5 and the new token's
        for (uint32_t g = 0; g < kHeads; ++g) QCOMPARE(view->read_pages[4 * kHeads + g], 0b11u);  // both pages
        c.kv->discard(*step);
    }

    // Pages must split the KV block into at most 32 (one bit each in the kernels' masks).
    // The page bound is a bound: no key within [min, max] scores above it; and the AVX2
    // kernel gives what its portable oracle gives.
    void pageBoundsBoundTheScores() {
        std::mt19937 rng(5);
        std::normal_distribution<float> normal;
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        for (uint32_t d : {8u, 64u, 72u, 128u}) {
            for (uint32_t group : {1u, 4u, 8u}) {
                std::vector<float> q(size_t(group) * d), q_pos(q.size()), q_neg(q.size());
                std::vector<uint16_t> min(d), max(d);
                for (size_t i = 0; i < q.size(); ++i) {
                    q[i] = normal(rng);
                    q_pos[i] = std::max(q[i], 0.0f);
                    q_neg[i] = std::min(q[i], 0.0f);
                }
                std::vector<float> lo(d), hi(d);
                for (uint32_t c = 0; c < d; ++c) {
                    const float a = normal(rng), b = normal(rng);
                    min[c] = fp16_round_down(std::min(a, b));
                    max[c] = fp16_round_up(std::max(a, b));
                    lo[c] = std::min(a, b);
                    hi[c] = std::max(a, b);
                }
                std::vector<float> portable(group), best(group);
                page_bounds_portable(q_pos.data(), q_neg.data(), group, min.data(), max.data(), d, portable.data());
                best_page_bounds()(q_pos.data(), q_neg.data(), group, min.data(), max.data(), d, best.data());
                for (uint32_t h = 0; h < group; ++h) {
                    QVERIFY(std::abs(best[h] - portable[h]) <= 1e-5f * (1.0f + std::abs(portable[h])));
                    for (int trial = 0; trial < 50; ++trial) {
                        float score = 0;
                        for (uint32_t c = 0; c < d; ++c) score += q[size_t(h) * d + c] * (lo[c] + unit(rng) * (hi[c] - lo[c]));
                        QVERIFY(score <= portable[h] + 1e-4f * (1.0f + std::abs(portable[h])));
                    }
                }
            }
        }
    }

    void questPageMustDivideTheBlock() {
        KvSettings s;
        s.policy = KvPolicy::quest;
        QVERIFY(validate(s).ok());  // the default page divides the default block
        s.quest_page = 16;
        QVERIFY(validate(s).ok());  // 16 of 32
        s.block_tokens = 8;
        QVERIFY(validate(s).ok());  // a page is at most the block
        QCOMPARE(s.quest_page_tokens(), 8u);
        s.block_tokens = 24;
        QVERIFY(!validate(s).ok());
        QVERIFY(QString::fromStdString(validate(s).message()).contains("Quest page"));
        s.block_tokens = 256;
        s.quest_page = 4;
        QVERIFY(!validate(s).ok());  // 64 pages
        s.policy = KvPolicy::h2o;
        QVERIFY(validate(s).ok());  // only quest has pages
    }

    // ---- end to end on a real model ---------------------------------------------------------

    // Teacher-forced (both runs are fed the full cache's greedy tokens, so that one early
    // divergence cannot decide the comparison).
    void questDropsNothingAndReadsFewerBlocks() {
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend);
        QVERIFY(model.ok());
        QFile text(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(text.open(QIODevice::ReadOnly));
        const std::vector<int32_t> prompt = (*model)->tokenizer().encode(text.read(4000).toStdString(), true, false);
        auto session = [&](KvSettings kv) {
            SessionConfig c{.n_ctx = 2048, .chunk_tokens = 128, .kv = kv};
            c.kv.prefix_cache = false;
            auto s = std::move(Session::create(*model, c)).value();
            (void)s->append(prompt);
            return s;
        };
        KvSettings quest;
        quest.policy = KvPolicy::quest;
        quest.quest_pages = 6;
        auto full = session({});
        auto sparse = session(quest);
        const uint64_t full_before = full->kv_stats().block_reads, quest_before = sparse->kv_stats().block_reads;
        const uint64_t full_rows_before = full->kv_stats().rows_read, quest_rows_before = sparse->kv_stats().rows_read;
        constexpr int kSteps = 24;
        int agree = 0;
        for (int i = 0; i < kSteps; ++i) {
            const int32_t next = argmax(full->logits(), full->logits().size());
            agree += argmax(sparse->logits(), sparse->logits().size()) == next;
            QVERIFY(full->append(std::span(&next, 1)).ok());
            QVERIFY(sparse->append(std::span(&next, 1)).ok());
        }
        const uint64_t full_reads = full->kv_stats().block_reads - full_before;
        const uint64_t quest_reads = sparse->kv_stats().block_reads - quest_before;
        const uint64_t full_rows = full->kv_stats().rows_read - full_rows_before;
        const uint64_t quest_rows = sparse->kv_stats().rows_read - quest_rows_before;
        qInfo(
            "prompt %zu tokens: per decode step %.1f blocks fetched and %.0f rows read (full) vs %.1f and %.0f (quest); same top-1 in "
            "%d of %d steps",
            prompt.size(), double(full_reads) / kSteps, double(full_rows) / kSteps, double(quest_reads) / kSteps,
            double(quest_rows) / kSteps, agree, kSteps);
        // Each KV head reads exactly quest_pages pages per layer and step, the sinks', the
        // recent and the new token's included; the layer fetches the blocks they are in.
        const auto & hp = (*model)->hparams();
        QCOMPARE(quest_rows, uint64_t(quest.quest_pages) * quest.quest_page_tokens() * hp.n_head_kv * hp.n_layer * kSteps);
        QVERIFY(quest_rows * 5 < full_rows);
        QVERIFY(quest_reads < full_reads);
        for (float r : sparse->retention()) QCOMPARE(r, 1.0f);  // nothing dropped
        // The RAM besides the tiers: positions for every block, and quest's key bounds (two
        // halves per channel, page and head).
        const uint64_t blocks = full->kv_stats().tiers[0].blocks, bt = quest.block_tokens;
        QCOMPARE(sparse->kv_stats().tiers[0].blocks, blocks);
        const uint64_t positions = hp.n_head_kv * bt * sizeof(int32_t);
        QCOMPARE(full->kv_stats().mirror_bytes, blocks * positions);
        QCOMPARE(sparse->kv_stats().mirror_bytes,
                 blocks * (positions + 2 * (bt / quest.quest_page_tokens()) * hp.n_head_kv * hp.head_dim * sizeof(uint16_t)));
        // ... as the memory planner predicts it.
        const auto tokens = uint32_t(prompt.size()) + kSteps;
        QCOMPARE(plan_memory(memory_shape(**model), tokens, 128, quest, {.device_bytes = 1ull << 30}).mirror_bytes,
                 sparse->kv_stats().mirror_bytes);
        QCOMPARE(plan_memory(memory_shape(**model), tokens, 128, {}, {.device_bytes = 1ull << 30}).mirror_bytes,
                 full->kv_stats().mirror_bytes);
        QVERIFY2(agree >= kSteps / 2, qPrintable(QString("quest agrees on %1 of %2 next tokens").arg(agree).arg(kSteps)));
    }

    // A model trained for 64 positions: other policies stop at its context with a clear
    // message, streaming runs on.
    void streamingRunsPastTheTrainedContext() {
        QTemporaryDir dir;
        RandomModelSpec spec{.preset = "tiny",
                             .output_path = (dir.path() + "/ctx64.gguf").toStdString(),
                             .vocab_from = shared_path("models/stories260K.gguf").toStdString()};
        ModelShape shape = find_model_preset("tiny")->shape;
        shape.n_ctx_train = 64;
        spec.shape = shape;
        QVERIFY(write_random_model(spec).ok());
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(spec.output_path, backend);
        QVERIFY(model.ok());
        const std::vector<int32_t> prompt{1, 403, 407, 261, 378};

        SessionConfig plain{.n_ctx = 64};
        auto s1 = std::move(Session::create(*model, plain)).value();
        QVERIFY(s1->append(prompt).ok());
        auto r1 = generate(*s1, {.max_tokens = 200, .sampler = {.temperature = 0}}, {});
        QCOMPARE(r1->reason, StopReason::context_full);
        QCOMPARE(s1->tokens().size(), size_t(64));

        SessionConfig streaming{.n_ctx = 64};
        streaming.kv.policy = KvPolicy::streaming;
        streaming.kv.budget_tokens = 32;
        streaming.kv.prefix_cache = false;
        auto s2 = std::move(Session::create(*model, streaming)).value();
        QVERIFY(s2->append(prompt).ok());
        auto r2 = generate(*s2, {.max_tokens = 200, .sampler = {.temperature = 0}}, {});
        QVERIFY(r2.ok());
        QCOMPARE(r2->reason, StopReason::max_tokens);
        QCOMPARE(s2->tokens().size(), size_t(205));
        QVERIFY(s2->kv_cache().next_position(0) <= 64);
        QCOMPARE(s2->kv_cache().n_kept(0), 32u);
    }
};

QTEST_GUILESS_MAIN(TestKvPolicies)
#include "test_kv_policies.moc"
