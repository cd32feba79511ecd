// The cache's ubatch protocol and its sequences, on the bundled model's real shape: a plan
// changes nothing until it is applied; pins are released on every path (applied, discarded,
// failed, lost); several sequences share one cache, and a common prefix is shared
// copy-on-write — each sequence gives exactly what a cache of its own gives; sliding and
// shared layers (each layer's blocks in its own shape); layer kinds with parameters that
// make no sense are refused by name; sliding windows stop growing, and recurrent layers keep
// a state per sequence that truncation rolls back to a snapshot of it.
#include <QtTest>

#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/fp16.h"
#include "engine/model/llama_graph.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

KvCacheConfig plain_config(uint32_t max_tokens = 512) {
    KvCacheConfig c{.max_tokens = max_tokens};
    c.settings.prefix_cache = false;
    return c;
}

}  // namespace

class TestKvCache : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::vector<int32_t> prompt_;

    // Runs `tokens` through `seq` in ubatches as large as the graph takes, returning the
    // logits after the last one.
    std::vector<float> run(KvCache & kv, LlamaGraph & graph, SeqId seq, std::span<const int32_t> tokens) {
        std::vector<float> logits;
        const size_t chunk = graph.max_tokens();
        for (size_t at = 0; at < tokens.size(); at += chunk) {
            const Status s = graph.forward(kv, seq, tokens.subspan(at, std::min(chunk, tokens.size() - at)), false, logits);
            if (!s.ok()) {
                qWarning("%s", s.message().c_str());
                return {};  // compared with a run that worked, it fails
            }
        }
        return logits;
    }

    // tiny-qwen35: layers 0-2 Gated DeltaNet (a state each), layer 3 full attention.
    std::shared_ptr<const Model> hybrid_model() {
        auto m = Model::load(shared_path("models/tiny-2026/tiny-qwen35-f32.gguf").toStdString(), backend_);
        if (!m.ok()) qFatal("%s", m.status().message().c_str());
        return *m;
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        model_ = *m;
        std::mt19937 rng(7);
        prompt_ = random_prompt(rng, 200, int32_t(model_->hparams().n_vocab));
    }

    // ---- The protocol -----------------------------------------------------------------------

    void aPlanChangesNothingUntilApplied() {
        auto kv = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        QVERIFY(kv.ok());
        auto graph = LlamaGraph::create(*model_, 64);
        QVERIFY(graph.ok());
        run(**kv, *graph, 0, std::span(prompt_).first(40));
        const KvStats before = (*kv)->stats();
        auto plan = (*kv)->plan(0, {.tokens = std::span(prompt_).subspan(40, 30), .max_tokens = 16});
        QVERIFY(plan.ok());
        QCOMPARE(plan->n_tokens(), 16u);  // a prefix of what is left, within the ubatch
        QCOMPARE(plan->positions().front(), 40);
        QCOMPARE(plan->positions().back(), 55);
        QCOMPARE((*kv)->n_tokens(0), 40u);
        QCOMPARE((*kv)->stats().tokens_seen, before.tokens_seen);
        QCOMPARE((*kv)->stats().tiers[0].blocks, before.tiers[0].blocks);
        QCOMPARE((*kv)->retention(0).size(), size_t(40));
        // Planning again gives the same plan: the first was not taken into account.
        auto again = (*kv)->plan(0, {.tokens = std::span(prompt_).subspan(40, 30), .max_tokens = 16});
        QCOMPARE(again->positions().front(), 40);
    }

    void aPlanThatDoesNotFitIsRefused() {
        auto kv = KvCache::create(plain_config(64), model_->kv_shape(), backend_);
        auto graph = LlamaGraph::create(*model_, 64);
        run(**kv, *graph, 0, std::span(prompt_).first(60));
        QCOMPARE((*kv)->room(0), 4u);
        auto plan = (*kv)->plan(0, {.tokens = std::span(prompt_).subspan(60, 8), .max_tokens = 64});
        QCOMPARE(plan.status().code(), StatusCode::context_full);
        QCOMPARE((*kv)->n_tokens(0), 60u);
    }

    void pinsAreReleasedOnEveryPath() {
        // Applied and discarded ubatches.
        auto kv = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        auto graph = LlamaGraph::create(*model_, 64);
        run(**kv, *graph, 0, std::span(prompt_).first(100));
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
        auto plan = (*kv)->plan(0, {.tokens = std::span(prompt_).subspan(100, 10), .max_tokens = 64});
        for (uint32_t il = 0; il < model_->hparams().n_layer; ++il) QVERIFY((*kv)->layer_view(*plan, il, nullptr).ok());
        QVERIFY((*kv)->pinned_blocks() > 0);  // the last view's
        (*kv)->discard(*plan);
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
        QCOMPARE((*kv)->n_tokens(0), 100u);
        QCOMPARE((*kv)->retention(0).size(), size_t(100));
        // A plan dropped half way (the graph failed after some views).
        auto half = (*kv)->plan(0, {.tokens = std::span(prompt_).subspan(100, 10), .max_tokens = 64});
        QVERIFY((*kv)->layer_view(*half, 0, nullptr).ok());
        (*kv)->discard(*half);
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
        // A view that cannot get room: a device tier of two blocks and no tier below it.
        KvCacheConfig tiny = plain_config();
        tiny.settings.block_tokens = 16;
        const KvBlockLayout layout{{16, model_->hparams().n_head_kv, model_->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        tiny.capacities.device_bytes = 2 * layout.block_bytes();
        auto small = KvCache::create(tiny, model_->kv_shape(), backend_);
        QVERIFY(small.ok());
        std::vector<float> logits;
        const Status s = graph->forward(**small, 0, std::span(prompt_).first(40), false, logits);
        QCOMPARE(s.code(), StatusCode::out_of_memory);
        QCOMPARE((*small)->pinned_blocks(), size_t(0));
        QCOMPARE((*small)->n_tokens(0), 0u);
    }

    void pinsAreReleasedWhenABlockIsLost() {
        // A restored block whose bytes are gone: the sequence is cut, nothing stays pinned.
        QTemporaryDir dir;
        SessionConfig config{.n_ctx = 512, .chunk_tokens = 64};
        config.kv.dir = dir.path().toStdString();
        config.kv.block_tokens = 16;
        {
            auto first = Session::create(model_, config);
            QVERIFY((*first)->append(prompt_).ok());
            (*first)->kv_cache().flush();
        }
        // The prefix store's data files lose their bytes.
        for (const QFileInfo & fi : QDir(dir.path()).entryInfoList({"*.dat", "*.bin", "*.kv"}, QDir::Files)) {
            QFile f(fi.filePath());
            QVERIFY(f.open(QIODevice::ReadWrite));
            f.resize(0);
        }
        auto second = Session::create(model_, config);
        QVERIFY(second.ok());
        const Status s = (*second)->append(prompt_);
        QVERIFY2(s.ok(), s.message().c_str());  // recomputed what was lost
        QVERIFY((*second)->kv_stats().faults > 0);
        QVERIFY((*second)->kv_stats().restored_tokens > 0);
        QCOMPARE((*second)->kv_cache().pinned_blocks(), size_t(0));
        QCOMPARE((*second)->tokens().size(), prompt_.size());
    }

    // ---- Sequences ----------------------------------------------------------------------------

    void sequencesShareACommonPrefixCopyOnWrite() {
        // Oracles: a cache for each sequence alone.
        const std::vector<int32_t> a = prompt_;
        std::vector<int32_t> b(prompt_.begin(), prompt_.begin() + 128);  // 4 blocks in common with a
        for (int i = 0; i < 40; ++i) b.push_back(int32_t(3 + (i * 13) % 200));
        auto graph = LlamaGraph::create(*model_, 64);
        auto alone_a = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        auto alone_b = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        const std::vector<float> want_a = run(**alone_a, *graph, 0, a);
        const std::vector<float> want_b = run(**alone_b, *graph, 0, b);

        auto kv = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        QCOMPARE(run(**kv, *graph, 1, a), want_a);
        const uint32_t shared = (*kv)->restore_prefix(2, b, 1);
        QCOMPARE(shared, 128u);
        const KvStats s = (*kv)->stats();
        QCOMPARE(s.shared_blocks, uint64_t(4 * model_->hparams().n_layer));
        QCOMPARE(s.n_sequences, 2u);
        QCOMPARE(s.tiers[0].blocks, uint64_t(((200 + 31) / 32) * model_->hparams().n_layer));  // nothing copied yet
        QCOMPARE(run(**kv, *graph, 2, std::span(b).subspan(shared)), want_b);

        // Truncating into the shared blocks copies them first: sequence 1 is untouched, and
        // sequence 2 continues as a cache of its own truncated the same way.
        (*kv)->truncate(2, 100);
        (*alone_b)->truncate(0, 100);
        const int32_t edit = 7, next = 9;
        std::vector<float> got, want;
        QVERIFY(graph->forward(**kv, 2, std::span(&edit, 1), false, got).ok());
        QVERIFY(graph->forward(**alone_b, 0, std::span(&edit, 1), false, want).ok());
        QCOMPARE(got, want);
        QVERIFY(graph->forward(**kv, 1, std::span(&next, 1), false, got).ok());
        QVERIFY(graph->forward(**alone_a, 0, std::span(&next, 1), false, want).ok());
        QCOMPARE(got, want);
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    void eachSequenceKeepsItsOwnPolicy() {
        // Sequence 1 keeps everything; sequence 2 evicts with H2O; they share a prefix.
        auto graph = LlamaGraph::create(*model_, 64);
        auto kv = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        KvSettings h2o;
        h2o.policy = KvPolicy::h2o;
        h2o.budget_tokens = 48;
        h2o.prefix_cache = false;
        QVERIFY((*kv)->open_sequence(2, h2o).ok());
        KvSettings other_blocks = h2o;
        other_blocks.block_tokens = 16;
        QCOMPARE((*kv)->open_sequence(3, other_blocks).code(), StatusCode::invalid_argument);
        const std::vector<float> full = run(**kv, *graph, 1, prompt_);
        (*kv)->restore_prefix(2, prompt_, 1);
        run(**kv, *graph, 2, std::span(prompt_).subspan((*kv)->n_tokens(2)));
        QCOMPARE((*kv)->n_kept(1), uint32_t(prompt_.size()));
        QVERIFY((*kv)->n_kept(2) <= 48u + 32u);  // the budget, and at most a block of holes
        // Sequence 1 still gives what a cache of its own gives.
        auto alone = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        QCOMPARE(run(**alone, *graph, 0, prompt_), full);
        const int32_t next = 11;
        std::vector<float> got, want;
        QVERIFY(graph->forward(**kv, 1, std::span(&next, 1), false, got).ok());
        QVERIFY(graph->forward(**alone, 0, std::span(&next, 1), false, want).ok());
        QCOMPARE(got, want);
        QCOMPARE((*kv)->open_sequence(1, h2o).code(), StatusCode::invalid_argument);  // it holds tokens
    }

    void sequencesShareTheTierBudgets() {
        // Two sequences under one small device tier: blocks of the idle one go down first,
        // and both still give exact results.
        auto graph = LlamaGraph::create(*model_, 64);
        KvCacheConfig c = plain_config();
        const KvBlockLayout layout{{32, model_->hparams().n_head_kv, model_->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        c.capacities = {.device_bytes = 12 * layout.block_bytes(), .host_bytes = 1u << 30, .disk_bytes = 0};
        auto kv = KvCache::create(c, model_->kv_shape(), backend_);
        std::vector<int32_t> other(prompt_.rbegin(), prompt_.rend());
        const std::vector<float> got_a = run(**kv, *graph, 1, prompt_);
        const std::vector<float> got_b = run(**kv, *graph, 2, other);
        auto alone = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        auto alone2 = KvCache::create(plain_config(), model_->kv_shape(), backend_);
        QCOMPARE(got_a, run(**alone, *graph, 0, prompt_));
        QCOMPARE(got_b, run(**alone2, *graph, 0, other));
        const KvStats s = (*kv)->stats();
        QVERIFY(s.tiers[0].used_bytes <= c.capacities.device_bytes);
        QVERIFY(s.demotions > 0);
        QCOMPARE(s.layer_kinds.size(), size_t(1));
        QCOMPARE(s.layer_kinds[0].kind, KvLayerKind::full);
        QCOMPARE(s.layer_kinds[0].n_layers, model_->hparams().n_layer);
    }

    // ---- Layer kinds ----------------------------------------------------------------------------

    // Every kind is held now; a kind whose parameters make no sense is refused by name.
    void invalidLayerKindsAreRefused() {
        KvModelShape shape = model_->kv_shape();
        shape.layers.assign(shape.n_layer, KvLayerSpec{});
        QVERIFY(KvCache::create(plain_config(), shape, backend_).ok());
        shape.layers[1] = {.kind = KvLayerKind::shared, .source = 2};  // a later layer
        auto refused = KvCache::create(plain_config(), shape, backend_);
        QCOMPARE(refused.status().code(), StatusCode::invalid_argument);
        QVERIFY(refused.status().message().find("layer 1 shares the KV of layer 2") != std::string::npos);
        shape.layers[1] = {.kind = KvLayerKind::recurrent, .state_bytes = 0};
        QCOMPARE(KvCache::create(plain_config(), shape, backend_).status().code(), StatusCode::invalid_argument);
        shape.layers[1] = {.kind = KvLayerKind::sliding_window, .window = 0};
        QCOMPARE(KvCache::create(plain_config(), shape, backend_).status().code(), StatusCode::invalid_argument);
        // Streaming renumbers positions, which sliding windows cannot follow.
        shape.layers[1] = {.kind = KvLayerKind::sliding_window, .window = 32};
        KvCacheConfig streaming = plain_config();
        streaming.settings.policy = KvPolicy::streaming;
        streaming.rope = {.n_rot = 8, .head_dim = 8};
        auto no_streaming = KvCache::create(streaming, shape, backend_);
        QCOMPARE(no_streaming.status().code(), StatusCode::invalid_argument);
        QVERIFY(no_streaming.status().message().find("sliding") != std::string::npos);
    }

    // ---- Sliding-window layers ------------------------------------------------------------

    // Layers 0, 1 and 3 of the bundled model's shape as windows of 32 positions.
    KvModelShape sliding_shape() const {
        KvModelShape shape = model_->kv_shape();
        shape.layers.assign(shape.n_layer, KvLayerSpec{});
        for (uint32_t il : {0u, 1u, 3u}) shape.layers[il] = {.kind = KvLayerKind::sliding_window, .window = 32};
        return shape;
    }

    void slidingLayersStopGrowingAtTheWindow() {
        auto graph = LlamaGraph::create(*model_, 16);
        auto kv = KvCache::create(plain_config(), sliding_shape(), backend_);
        QVERIFY(kv.ok());
        const KvBlockLayout layout{{32, model_->hparams().n_head_kv, model_->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        const uint64_t ring = 3 * 2 * layout.block_bytes();  // 3 layers: the window's block and the next
        run(**kv, *graph, 0, std::span(prompt_).first(64));
        const KvStats at64 = (*kv)->stats();
        run(**kv, *graph, 0, std::span(prompt_).subspan(64, 72));
        const KvStats at136 = (*kv)->stats();
        run(**kv, *graph, 0, std::span(prompt_).subspan(136));
        const KvStats at200 = (*kv)->stats();
        const KvLayerKindStats & sliding = kind_row(at200, KvLayerKind::sliding_window);
        QCOMPARE(sliding.n_layers, 3u);
        QCOMPARE(kind_row(at200, KvLayerKind::full).n_layers, 2u);
        // The windows hold the 32 positions the next query sees, in at most two blocks: as
        // much at 136 as at 200 tokens; the full layers grow.
        for (const KvStats * s : {&at64, &at136, &at200}) QVERIFY(kind_row(*s, KvLayerKind::sliding_window).bytes <= ring);
        QCOMPARE(sliding.bytes, kind_row(at136, KvLayerKind::sliding_window).bytes);
        QVERIFY(sliding.tokens_kept <= 32u + 32u);
        QVERIFY(kind_row(at200, KvLayerKind::full).bytes > 3 * kind_row(at64, KvLayerKind::full).bytes);
        QCOMPARE(kind_row(at200, KvLayerKind::full).tokens_kept, 200u);
        // The retention view speaks of the full-attention layers: every position kept.
        for (float r : (*kv)->retention(0)) QCOMPARE(r, 1.0f);
    }

    void slidingLayersKeepTheirWindowUnderTiersAndPolicies() {
        // A device tier of a few blocks with RAM behind it, and H2O on the full layers: the
        // same logits as the all-in-RAM cache with H2O, and the windows are never evicted.
        auto graph = LlamaGraph::create(*model_, 16);
        KvCacheConfig h2o = plain_config();
        h2o.settings.policy = KvPolicy::h2o;
        h2o.settings.budget_tokens = 96;
        KvCacheConfig tiered = h2o;
        const KvBlockLayout layout{{32, model_->hparams().n_head_kv, model_->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        // The windows' rings (3 layers x 2 blocks) and a full layer's budget and slack.
        tiered.capacities = {.device_bytes = 13 * layout.block_bytes(), .host_bytes = 1u << 30, .disk_bytes = 0};
        auto all_ram = KvCache::create(h2o, sliding_shape(), backend_);
        auto small = KvCache::create(tiered, sliding_shape(), backend_);
        const std::vector<float> want = run(**all_ram, *graph, 0, prompt_);
        QVERIFY(!want.empty());
        QCOMPARE(run(**small, *graph, 0, prompt_), want);
        const KvStats s = (*small)->stats();
        QVERIFY(s.demotions > 0);
        QVERIFY(s.evicted_tokens > 0);
        QCOMPARE((*small)->pinned_blocks(), size_t(0));
        // Every head of a window holds its last positions, consecutive (nothing evicted there).
        QVERIFY(kind_row(s, KvLayerKind::sliding_window).tokens_kept >= 32u);
        QVERIFY(kind_row(s, KvLayerKind::full).tokens_kept <= 96u + 32u);
    }

    void truncatingBehindAWindowStartsOver() {
        auto graph = LlamaGraph::create(*model_, 16);
        auto kv = KvCache::create(plain_config(), sliding_shape(), backend_);
        run(**kv, *graph, 0, prompt_);            // 200 tokens: the windows hold positions 160 on
        QCOMPARE((*kv)->truncate(0, 195), 195u);  // the windows still hold 164..194
        QCOMPARE((*kv)->n_tokens(0), 195u);
        QCOMPARE((*kv)->truncate(0, 150), 0u);  // they no longer hold 119..149: start over
        QCOMPARE((*kv)->n_tokens(0), 0u);
        // And starting over gives what a fresh cache gives.
        auto fresh = KvCache::create(plain_config(), sliding_shape(), backend_);
        QCOMPARE(run(**kv, *graph, 0, std::span(prompt_).first(150)), run(**fresh, *graph, 0, std::span(prompt_).first(150)));
    }

    void slidingLayersAreRestoredFromThePrefixCache() {
        QTemporaryDir dir;
        KvCacheConfig c = plain_config();
        c.settings.prefix_cache = true;
        c.settings.block_tokens = 32;
        c.dir = dir.path().toStdString();
        c.model_identity = 0x5eed;
        c.capacities = {.device_bytes = 0, .host_bytes = 0, .disk_bytes = 64u << 20};
        auto graph = LlamaGraph::create(*model_, 16);
        const int32_t next = 13;
        std::vector<float> want, got;
        {
            auto first = KvCache::create(c, sliding_shape(), backend_);
            run(**first, *graph, 0, std::span(prompt_).first(192));
            QVERIFY(graph->forward(**first, 0, std::span(&next, 1), false, want).ok());
            (*first)->flush();
        }
        auto second = KvCache::create(c, sliding_shape(), backend_);
        QCOMPARE((*second)->restore_prefix(0, std::span(prompt_).first(193), 1), 192u);
        // The windows took only the blocks the next query can see.
        QVERIFY(kind_row((*second)->stats(), KvLayerKind::sliding_window).tokens_kept <= 64u);
        QVERIFY(graph->forward(**second, 0, std::span(&next, 1), false, got).ok());
        QCOMPARE(got, want);
    }

    // ---- Recurrent layers -------------------------------------------------------------------

    void recurrentStatesAreHeldPerSequence() {
        const std::shared_ptr<const Model> model = hybrid_model();
        const KvModelShape shape = model->kv_shape();
        QCOMPARE(shape.kind(0), KvLayerKind::recurrent);
        QCOMPARE(shape.kind(3), KvLayerKind::full);
        // The convolution's 3 earlier inputs of 256 channels and four 32 x 32 matrices, in f32.
        const uint64_t state_bytes = 4 * (3 * 256 + 4 * 32 * 32);
        QCOMPARE(shape.layers[0].state_bytes, state_bytes);
        auto graph = LlamaGraph::create(*model, 16);
        auto kv = KvCache::create(plain_config(), shape, backend_);
        QVERIFY(kv.ok());
        // Two sequences interleaved ubatch by ubatch give what caches of their own give.
        const std::vector<int32_t> a(prompt_.begin(), prompt_.begin() + 100), b(prompt_.begin() + 50, prompt_.begin() + 150);
        std::vector<float> got_a, got_b;
        for (size_t at = 0; at < 100; at += 16) {
            const size_t n = std::min<size_t>(16, 100 - at);
            QVERIFY(graph->forward(**kv, 0, std::span(a).subspan(at, n), false, got_a).ok());
            QVERIFY(graph->forward(**kv, 1, std::span(b).subspan(at, n), false, got_b).ok());
        }
        auto alone_a = KvCache::create(plain_config(), shape, backend_);
        auto alone_b = KvCache::create(plain_config(), shape, backend_);
        QCOMPARE(got_a, run(**alone_a, *graph, 0, a));
        QCOMPARE(got_b, run(**alone_b, *graph, 0, b));
        // The states are the recurrent row: fixed, whatever the length; no positions kept.
        const KvStats s = (*kv)->stats();
        const KvLayerKindStats & recurrent = kind_row(s, KvLayerKind::recurrent);
        QCOMPARE(recurrent.n_layers, 3u);
        QCOMPARE(recurrent.bytes, 2 * 3 * state_bytes);
        QCOMPARE(recurrent.tokens_kept, 0u);
        QCOMPARE(kind_row(s, KvLayerKind::full).n_layers, 1u);
        QCOMPARE(kind_row(s, KvLayerKind::full).tokens_kept, 100u);
        // Past 128 tokens sequence 0 holds one snapshot of its states as well.
        run(**kv, *graph, 0, std::span(prompt_).subspan(100, 50));
        QCOMPARE(kind_row((*kv)->stats(), KvLayerKind::recurrent).bytes, 3 * 3 * state_bytes);
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    void truncatingARecurrentSequenceRollsBackToASnapshot() {
        // tiny-qwen35: three states of 19456 bytes against 512 bytes of f16 KV per token in
        // the one full-attention layer: a snapshot every 128 tokens (its 57 KiB against the
        // interval's 64 KiB of KV).
        const std::shared_ptr<const Model> model = hybrid_model();
        auto graph = LlamaGraph::create(*model, 16);
        std::mt19937 rng(11);
        const std::vector<int32_t> tokens = random_prompt(rng, 600, int32_t(model->hparams().n_vocab));
        auto kv = KvCache::create(plain_config(1024), model->kv_shape(), backend_);
        const uint32_t interval = (*kv)->snapshot_interval();
        QCOMPARE(interval, 128u);
        const uint64_t snapshot_bytes = 3 * 19456;
        for (uint32_t n = 100; n <= 600; n += 100) {
            run(**kv, *graph, 0, std::span(tokens).subspan(n - 100, 100));
            // Snapshot memory grows by one snapshot per interval, no more.
            const KvLayerKindStats recurrent = kind_row((*kv)->stats(), KvLayerKind::recurrent);
            QCOMPARE(recurrent.snapshots, uint64_t(n / interval));
            QCOMPARE(recurrent.snapshot_bytes, n / interval * snapshot_bytes);
            QCOMPARE(recurrent.bytes, (n / interval + 1) * snapshot_bytes);
        }
        QCOMPARE((*kv)->truncate(0, 600), 600u);  // nothing to cut
        // Random cuts: back to the snapshot at or before the cut, and continuing from there
        // gives a fresh run's logits bit for bit (its ubatches split where the fresh run's do).
        for (int trial = 0; trial < 6; ++trial) {
            const uint32_t n_keep = 1 + uint32_t(rng() % 598);
            const uint32_t kept = (*kv)->truncate(0, n_keep);
            QCOMPARE(kept, n_keep / interval * interval);
            QCOMPARE((*kv)->n_tokens(0), kept);
            QCOMPARE(kind_row((*kv)->stats(), KvLayerKind::recurrent).snapshots, uint64_t(kept / interval));
            std::vector<int32_t> edited(tokens.begin(), tokens.begin() + n_keep);
            edited.insert(edited.end(), {5, 6, 7});
            const std::vector<float> got = run(**kv, *graph, 0, std::span(edited).subspan(kept));
            auto fresh = KvCache::create(plain_config(1024), model->kv_shape(), backend_);
            const std::vector<float> want = run(**fresh, *graph, 0, edited);
            QVERIFY(!want.empty());
            QCOMPARE(got, want);
            // Back to the whole prompt for the next cut.
            QCOMPARE((*kv)->truncate(0, n_keep), kept);
            run(**kv, *graph, 0, std::span(tokens).subspan(kept));
        }
        QCOMPARE((*kv)->truncate(0, 0), 0u);
        QCOMPARE(kind_row((*kv)->stats(), KvLayerKind::recurrent).bytes, uint64_t(0));
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    void aFailedUbatchRollsBackToTheLatestSnapshot() {
        const std::shared_ptr<const Model> model = hybrid_model();
        auto graph = LlamaGraph::create(*model, 16);
        std::mt19937 rng(12);
        const std::vector<int32_t> tokens = random_prompt(rng, 300, int32_t(model->hparams().n_vocab));
        auto kv = KvCache::create(plain_config(), model->kv_shape(), backend_);
        run(**kv, *graph, 0, std::span(tokens).first(200));
        auto plan = (*kv)->plan(0, {.tokens = std::span(tokens).subspan(200, 8), .max_tokens = 8});
        QVERIFY(plan.ok());
        QVERIFY((*kv)->recurrent_state(*plan, 0).ok());
        (*kv)->discard(*plan);
        QCOMPARE((*kv)->n_tokens(0), 128u);
        QCOMPARE((*kv)->take_lost_position(0), std::optional<uint32_t>(128));
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
        const std::vector<float> got = run(**kv, *graph, 0, std::span(tokens).subspan(128, 112));
        auto fresh = KvCache::create(plain_config(), model->kv_shape(), backend_);
        const std::vector<float> want = run(**fresh, *graph, 0, std::span(tokens).first(240));
        QVERIFY(!want.empty());
        QCOMPARE(got, want);
    }

    void aSessionRecomputesAfterAnEdit() {
        // Session::sync to an edited prompt: the cache starts over, the session follows, and
        // the logits are a fresh session's.
        const std::shared_ptr<const Model> model = hybrid_model();
        SessionConfig config{.n_ctx = 512, .chunk_tokens = 32};
        config.kv.prefix_cache = false;
        auto session = Session::create(model, config);
        QVERIFY(session.ok());
        QVERIFY((*session)->sync(std::span(prompt_).first(90)).ok());
        std::vector<int32_t> edited(prompt_.begin(), prompt_.begin() + 60);
        edited.insert(edited.end(), prompt_.begin() + 120, prompt_.begin() + 150);
        QVERIFY((*session)->sync(edited).ok());
        auto fresh = Session::create(model, config);
        QVERIFY((*fresh)->sync(edited).ok());
        auto logits = [](const Session & x) { return std::vector<float>(x.logits().begin(), x.logits().end()); };
        QVERIFY(!logits(**session).empty());
        QCOMPARE(logits(**session), logits(**fresh));
    }

    void aFailedUbatchStartsARecurrentSequenceOver() {
        // A device tier of two blocks and nothing behind it: the third ubatch's block cannot
        // be placed after layers 0-2 advanced their states. The sequence is lost from 0
        // and starts over from zero states.
        const std::shared_ptr<const Model> model = hybrid_model();
        KvCacheConfig c = plain_config();
        c.settings.block_tokens = 16;
        const KvBlockLayout layout{{16, model->hparams().n_head_kv, model->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        c.capacities = {.device_bytes = 2 * layout.block_bytes(), .host_bytes = 0, .disk_bytes = 0};
        auto graph = LlamaGraph::create(*model, 16);
        auto kv = KvCache::create(c, model->kv_shape(), backend_);
        QVERIFY(kv.ok());
        std::vector<float> logits;
        QVERIFY(graph->forward(**kv, 0, std::span(prompt_).first(16), false, logits).ok());
        QVERIFY(graph->forward(**kv, 0, std::span(prompt_).subspan(16, 16), false, logits).ok());
        QVERIFY(!graph->forward(**kv, 0, std::span(prompt_).subspan(32, 16), false, logits).ok());
        QCOMPARE((*kv)->n_tokens(0), 0u);
        QCOMPARE((*kv)->take_lost_position(0), std::optional<uint32_t>(0));
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
        auto fresh = KvCache::create(plain_config(), model->kv_shape(), backend_);
        const std::vector<float> want = run(**fresh, *graph, 0, std::span(prompt_).first(32));
        QVERIFY(!want.empty());
        QCOMPARE(run(**kv, *graph, 0, std::span(prompt_).first(32)), want);
    }

    void aSessionFollowsALostRecurrentSequence() {
        // The cache rolled the sequence back (a plan discarded after a state was handed out,
        // as a failed forward does) to the prompt's end, where the session's prompt left a
        // snapshot: the next sync recomputes from there.
        const std::shared_ptr<const Model> model = hybrid_model();
        SessionConfig config{.n_ctx = 512, .chunk_tokens = 32};
        config.kv.prefix_cache = false;
        auto session = Session::create(model, config);
        QVERIFY((*session)->sync(std::span(prompt_).first(40)).ok());
        KvCache & kv = (*session)->kv_cache();
        auto plan = kv.plan(0, {.tokens = std::span(prompt_).subspan(40, 8), .max_tokens = 8});
        QVERIFY(plan.ok());
        QVERIFY(kv.recurrent_state(*plan, 0).ok());
        kv.discard(*plan);
        QCOMPARE(kv.n_tokens(0), 40u);
        QVERIFY((*session)->sync(std::span(prompt_).first(60)).ok());
        QCOMPARE((*session)->tokens().size(), size_t(60));
        auto fresh = Session::create(model, config);
        QVERIFY((*fresh)->sync(std::span(prompt_).first(60)).ok());
        // Its ubatches split at 40 where the fresh run's do not: the delta rule's chunks
        // round differently (measured max |d| 5.4e-7).
        const std::vector<float> want((*fresh)->logits().begin(), (*fresh)->logits().end());
        QVERIFY(max_abs_diff((*session)->logits().data(), want) < 1e-5f);
    }

    void aLiveRecurrentPrefixIsSharedWithItsStates() {
        // A second sequence with the same beginning takes the first one's blocks up to its
        // deepest snapshot at a block boundary, and that snapshot's states: it continues
        // exactly as the first one did (their ubatches split at the same places).
        const std::shared_ptr<const Model> model = hybrid_model();
        KvCacheConfig c = plain_config(1024);
        c.settings.block_tokens = 16;
        auto graph = LlamaGraph::create(*model, 16);
        auto kv = KvCache::create(c, model->kv_shape(), backend_);
        QCOMPARE((*kv)->snapshot_interval(), 128u);
        std::mt19937 rng(13);
        const std::vector<int32_t> tokens = random_prompt(rng, 300, int32_t(model->hparams().n_vocab));
        const std::vector<float> want = run(**kv, *graph, 0, tokens);
        QVERIFY(!want.empty());
        QCOMPARE((*kv)->restore_prefix(1, tokens, 1), 256u);  // snapshots at 128 and 256
        QCOMPARE((*kv)->stats().restored_states, uint64_t(1));
        QCOMPARE((*kv)->stats().shared_blocks, uint64_t(256 / 16));
        QCOMPARE(run(**kv, *graph, 1, std::span(tokens).subspan(256)), want);
        // One that parts from it after 200 tokens goes back to the snapshot at 128.
        std::vector<int32_t> parted(tokens.begin(), tokens.begin() + 200);
        parted.insert(parted.end(), {5, 6, 7});
        QCOMPARE((*kv)->restore_prefix(2, parted, 1), 128u);
        auto fresh = KvCache::create(c, model->kv_shape(), backend_);
        const std::vector<float> fresh_parted = run(**fresh, *graph, 0, parted);
        QVERIFY(!fresh_parted.empty());
        QCOMPARE(run(**kv, *graph, 2, std::span(parted).subspan(128)), fresh_parted);
        // The restored sequence can be cut back to where it was restored.
        QCOMPARE((*kv)->truncate(2, 150), 128u);
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    void thePlannerCountsTheStates() {
        ModelMemoryShape shape{.n_layer = 8, .n_head_kv = 2, .head_dim = 64, .n_ctx_train = 32768, .weight_bytes = 1 << 20};
        shape.layers.assign(8, KvLayerSpec{});
        for (uint32_t il = 0; il < 8; ++il) {
            if ((il + 1) % 4 != 0) shape.layers[il] = {.kind = KvLayerKind::recurrent, .state_bytes = 19456};
        }
        KvSettings kv;
        const KvTierCapacities big{.device_bytes = 1ull << 32, .host_bytes = 0, .disk_bytes = 0};
        const MemoryPlan at4k = plan_memory(shape, 4096, 256, kv, big);
        const MemoryPlan at32k = plan_memory(shape, 32768, 256, kv, big);
        QCOMPARE(at4k.layer_kinds.size(), size_t(2));
        QCOMPARE(at4k.layer_kinds[0].n_layers, 2u);
        QCOMPARE(at4k.layer_kinds[1].kind, KvLayerKind::recurrent);
        QCOMPARE(at4k.layer_kinds[1].n_layers, 6u);
        // One state and its snapshots: 114 KiB against 1 KiB of KV per token, one every 128
        // tokens and one at the latest turn's end.
        QCOMPARE(snapshot_interval(shape.layers, 2, 64, 32), 128u);
        QCOMPARE(at4k.layer_kinds[1].kv_bytes, uint64_t(6 * 19456) * (1 + 4096 / 128 + 1));
        QCOMPARE(at32k.layer_kinds[1].kv_bytes - at4k.layer_kinds[1].kv_bytes, uint64_t(6 * 19456) * (32768 - 4096) / 128);
        QCOMPARE(at32k.layer_kinds[0].kv_bytes, 8 * at4k.layer_kinds[0].kv_bytes);  // the attention layers grow
        QCOMPARE(at4k.kv_bytes, at4k.layer_kinds[0].kv_bytes + at4k.layer_kinds[1].kv_bytes);
        QCOMPARE(at4k.kv_bytes_per_token, kv_bytes_for_tokens(ModelMemoryShape{.n_layer = 2, .n_head_kv = 2, .head_dim = 64}, kv, 1));
    }

    void thePlannerBoundsTheWindows() {
        ModelMemoryShape shape{.n_layer = 5, .n_head_kv = 4, .head_dim = 8, .n_ctx_train = 32768, .weight_bytes = 1 << 20};
        shape.layers.assign(5, KvLayerSpec{});
        for (uint32_t il : {0u, 1u, 3u}) shape.layers[il] = {.kind = KvLayerKind::sliding_window, .window = 512};
        KvSettings kv;
        const KvTierCapacities big{.device_bytes = 1ull << 32, .host_bytes = 0, .disk_bytes = 0};
        const MemoryPlan at4k = plan_memory(shape, 4096, 256, kv, big);
        const MemoryPlan at32k = plan_memory(shape, 32768, 256, kv, big);
        QCOMPARE(at4k.layer_kinds.size(), size_t(2));
        QCOMPARE(at4k.layer_kinds[1].kind, KvLayerKind::sliding_window);
        QCOMPARE(at4k.layer_kinds[1].n_layers, 3u);
        QCOMPARE(at32k.layer_kinds[1].kv_bytes, at4k.layer_kinds[1].kv_bytes);      // flat past the window
        QCOMPARE(at32k.layer_kinds[0].kv_bytes, 8 * at4k.layer_kinds[0].kv_bytes);  // the two full layers grow
        QCOMPARE(at4k.kv_bytes, at4k.layer_kinds[0].kv_bytes + at4k.layer_kinds[1].kv_bytes);
    }

    // ---- Shared layers and per-layer shapes (Gemma 4) -------------------------------------

    // A sliding layer of 2 heads of 32 values, a full layer of 1 head of 64, and two layers
    // that read them.
    static KvModelShape mixed_shape() {
        KvModelShape shape{.n_layer = 4, .n_head_kv = 1, .head_dim = 64, .n_head = 4};
        shape.layers = {
            {.kind = KvLayerKind::sliding_window, .window = 32, .n_head_kv = 2, .head_dim = 32},
            {.kind = KvLayerKind::full},
            {.kind = KvLayerKind::shared, .source = 0, .n_head_kv = 2, .head_dim = 32},
            {.kind = KvLayerKind::shared, .source = 1},
        };
        return shape;
    }

    void sharedLayersReadExactlyTheirSourcesKv() {
        const KvModelShape shape = mixed_shape();
        auto kv = KvCache::create(plain_config(), shape, backend_);
        QVERIFY(kv.ok());
        std::mt19937 rng(3);
        std::normal_distribution<float> normal;
        const uint32_t n = 20;
        const std::vector<int32_t> tokens(n, 1);
        std::vector<float> written_k0;  // layer 0's keys of head 1, as f16 keeps them
        for (int ubatch = 0; ubatch < 3; ++ubatch) {
            auto plan = (*kv)->plan(0, {.tokens = tokens, .max_tokens = n});
            QVERIFY(plan.ok());
            std::vector<std::vector<uint8_t *>> blocks(shape.n_layer);
            for (uint32_t il = 0; il < shape.n_layer; ++il) {
                auto view = (*kv)->layer_view(*plan, il, nullptr);
                QVERIFY(view.ok());
                QCOMPARE(view->shape.n_head_kv, shape.n_head_kv_of(il));
                QCOMPARE(view->shape.head_dim, shape.head_dim_of(il));
                for (const KvBlockRef & b : view->blocks) blocks[il].push_back(b.data);
                if (shape.stores(il)) {
                    QCOMPARE(view->write_slots.size(), size_t(n));
                    std::vector<float> k(size_t(n) * shape.n_head_kv_of(il) * shape.head_dim_of(il)), v(k.size());
                    for (float & x : k) x = normal(rng);
                    for (float & x : v) x = normal(rng);
                    backend_.kv_write(*view, k.data(), v.data(), plan->positions().data(), n);
                    const uint32_t d = shape.head_dim_of(il), heads = shape.n_head_kv_of(il);
                    for (uint32_t t = 0; t < n && il == 0; ++t) {
                        for (uint32_t c = 0; c < d; ++c) written_k0.push_back(fp16_to_fp32(fp32_to_fp16(k[(t * heads + 1) * d + c])));
                    }
                } else {
                    // Nothing to write: the very blocks of its source, this ubatch's included.
                    QVERIFY(view->write_slots.empty());
                    QCOMPARE(blocks[il], blocks[shape.source(il)]);
                }
            }
            (*kv)->apply(*plan);
        }
        // What layer 2 reads is what layer 0 wrote.
        auto rows = (*kv)->layer_rows(0, 2, 1, true);
        QVERIFY(rows.ok());
        QCOMPARE(*rows, written_k0);
        // Each layer's blocks in its own shape; a shared layer holds no bytes of its own.
        const KvStats s = (*kv)->stats();
        const uint64_t sliding_block = KvBlockLayout{{32, 2, 32}, KvCodec::f16, KvCodec::f16}.block_bytes();
        const uint64_t full_block = KvBlockLayout{{32, 1, 64}, KvCodec::f16, KvCodec::f16}.block_bytes();
        QCOMPARE(kind_row(s, KvLayerKind::sliding_window).bytes, 2 * sliding_block);  // 60 positions, window 32
        QCOMPARE(kind_row(s, KvLayerKind::full).bytes, 2 * full_block);
        QCOMPARE(kind_row(s, KvLayerKind::shared).n_layers, 2u);
        QCOMPARE(kind_row(s, KvLayerKind::shared).bytes, uint64_t(0));
        QCOMPARE(kind_row(s, KvLayerKind::shared).tokens_kept, uint64_t(60));  // what their sources keep
        QCOMPARE((*kv)->pinned_blocks(), size_t(0));
    }

    void sharedLayersNeedAnEarlierSourceOfTheirShape() {
        KvModelShape shape = mixed_shape();
        shape.layers[2].source = 1;  // the full layer's heads are not the sliding layer's
        QCOMPARE(KvCache::create(plain_config(), shape, backend_).status().code(), StatusCode::invalid_argument);
        shape = mixed_shape();
        shape.layers[0] = {.kind = KvLayerKind::shared, .source = 1, .n_head_kv = 1, .head_dim = 64};
        QCOMPARE(KvCache::create(plain_config(), shape, backend_).status().code(), StatusCode::invalid_argument);
    }

    // The tiny Gemma 4 (llama.cpp's reference model): its layer kinds and shapes, and with
    // its shared layers the same logits over tiers, under a policy, and from the prefix cache.
    void gemma4KeepsItsResultsOverTiersPoliciesAndPrefixes() {
        auto m = Model::load(shared_path("models/tiny-2026/tiny-gemma4-f32.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.ok() ? "" : m.status().message().c_str());
        const KvModelShape shape = (*m)->kv_shape();
        QCOMPARE(shape.kind(0), KvLayerKind::sliding_window);
        QCOMPARE(shape.kind(2), KvLayerKind::full);
        QCOMPARE(shape.kind(3), KvLayerKind::shared);
        QCOMPARE(shape.source(3), 1u);
        QCOMPARE(shape.source(4), 2u);
        QCOMPARE(shape.n_head_kv_of(0), 2u);
        QCOMPARE(shape.head_dim_of(0), 32u);
        QCOMPARE(shape.n_head_kv_of(2), 1u);
        QCOMPARE(shape.head_dim_of(2), 64u);
        std::mt19937 rng(11);
        const std::vector<int32_t> prompt = random_prompt(rng, 150, int32_t((*m)->hparams().n_vocab));
        auto graph = LlamaGraph::create(**m, 16);
        QVERIFY(graph.ok());

        // Two sequences on a device tier that holds the windows' rings and one sequence's full
        // layer: the other's full-layer blocks go to RAM and come back for its next ubatch.
        KvCacheConfig h2o = plain_config();
        h2o.settings.policy = KvPolicy::h2o;
        h2o.settings.budget_tokens = 64;
        h2o.settings.warmup_tokens = 0;  // the device tier is sized for 64 tokens from the start
        KvCacheConfig tiered = h2o;
        const uint64_t block = KvBlockLayout{{32, 2, 32}, KvCodec::f16, KvCodec::f16}.block_bytes();
        tiered.capacities = {.device_bytes = 15 * block, .host_bytes = 1u << 30, .disk_bytes = 0};
        const std::vector<int32_t> other = random_prompt(rng, 100, int32_t((*m)->hparams().n_vocab));
        auto two_sequences = [&](KvCache & kv) {
            run(kv, *graph, 0, std::span(prompt).first(100));
            run(kv, *graph, 1, other);
            return run(kv, *graph, 0, std::span(prompt).subspan(100));
        };
        auto all_ram = KvCache::create(h2o, shape, backend_);
        auto small = KvCache::create(tiered, shape, backend_);
        QVERIFY(all_ram.ok() && small.ok());
        const std::vector<float> want = two_sequences(**all_ram);
        QVERIFY(!want.empty());
        QCOMPARE(two_sequences(**small), want);
        QVERIFY((*small)->stats().demotions > 0);
        QVERIFY((*small)->stats().evicted_tokens > 0);

        QTemporaryDir dir;
        KvCacheConfig c = plain_config();
        c.settings.prefix_cache = true;
        c.dir = dir.path().toStdString();
        c.model_identity = (*m)->identity();
        c.capacities = {.device_bytes = 0, .host_bytes = 0, .disk_bytes = 64u << 20};
        const int32_t next = 13;
        std::vector<float> fresh, restored;
        {
            auto first = KvCache::create(c, shape, backend_);
            run(**first, *graph, 0, std::span(prompt).first(128));
            QVERIFY(graph->forward(**first, 0, std::span(&next, 1), false, fresh).ok());
            (*first)->flush();
        }
        auto second = KvCache::create(c, shape, backend_);
        QCOMPARE((*second)->restore_prefix(0, std::span(prompt).first(129), 1), 128u);
        QVERIFY(graph->forward(**second, 0, std::span(&next, 1), false, restored).ok());
        QCOMPARE(restored, fresh);
    }

    void thePlannerCountsEachLayersShape() {
        ModelMemoryShape shape{.n_layer = 5, .n_head_kv = 1, .head_dim = 64, .n_ctx_train = 32768, .weight_bytes = 1 << 20};
        const KvLayerSpec sliding{.kind = KvLayerKind::sliding_window, .window = 512, .n_head_kv = 2, .head_dim = 32};
        shape.layers = {sliding,
                        sliding,
                        {.kind = KvLayerKind::full},
                        {.kind = KvLayerKind::shared, .source = 1, .n_head_kv = 2, .head_dim = 32},
                        {.kind = KvLayerKind::shared, .source = 2}};
        KvSettings kv;
        const MemoryPlan plan = plan_memory(shape, 4096, 256, kv, {.device_bytes = 1ull << 32, .host_bytes = 0, .disk_bytes = 0});
        QCOMPARE(plan.layer_kinds.size(), size_t(3));
        // One full layer: a head of 64 values (K, V in f16) and a position per token.
        QCOMPARE(plan.layer_kinds[0].n_layers, 1u);
        QCOMPARE(plan.layer_kinds[0].kv_bytes, uint64_t(4096) * (2 * 64 * 2 + 4));
        // Two windows of 512 + a chunk + a block: 25 blocks of 32 positions, 2 heads of 32 values.
        QCOMPARE(plan.layer_kinds[1].kv_bytes, uint64_t(2) * 25 * 32 * 2 * (2 * 32 * 2 + 4));
        QCOMPARE(plan.layer_kinds[2].kind, KvLayerKind::shared);
        QCOMPARE(plan.layer_kinds[2].n_layers, 2u);
        QCOMPARE(plan.layer_kinds[2].kv_bytes, uint64_t(0));
        QCOMPARE(plan.kv_bytes, plan.layer_kinds[0].kv_bytes + plan.layer_kinds[1].kv_bytes);
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "test_kv_cache.moc"
