// The cache's ubatch protocol and its sequences, on the bundled model's real shape: a plan
// changes nothing until it is applied; pins are released on every path (applied, discarded,
// failed, lost); several sequences share one cache, and a common prefix is shared
// copy-on-write — each sequence gives exactly what a cache of its own gives; layer kinds
// the cache does not hold yet are refused with a message that names them.
#include <QtTest>

#include <random>

#include "engine/backend/cpu/cpu_backend.h"
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

    // Runs `tokens` through `seq` in ubatches of 64, returning the logits after the last one.
    std::vector<float> run(KvCache & kv, LlamaGraph & graph, SeqId seq, std::span<const int32_t> tokens) {
        std::vector<float> logits;
        for (size_t at = 0; at < tokens.size(); at += 64) {
            const Status s = graph.forward(kv, seq, tokens.subspan(at, std::min<size_t>(64, tokens.size() - at)), false, logits);
            if (!s.ok()) qWarning("%s", s.message().c_str());
        }
        return logits;
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

    void layerKindsItDoesNotHoldAreRefused() {
        KvModelShape shape = model_->kv_shape();
        shape.layers.assign(shape.n_layer, KvLayerSpec{});
        QVERIFY(KvCache::create(plain_config(), shape, backend_).ok());
        shape.layers[1] = {.kind = KvLayerKind::sliding_window, .window = 64};
        auto refused = KvCache::create(plain_config(), shape, backend_);
        QCOMPARE(refused.status().code(), StatusCode::invalid_argument);
        QVERIFY(refused.status().message().find("layer 1") != std::string::npos);
        QVERIFY(refused.status().message().find("sliding_window") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "test_kv_cache.moc"
