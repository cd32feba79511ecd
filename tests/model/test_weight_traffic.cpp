// The weight bytes a forward pass reads (LlamaGraph::weight_bytes_read, what `bench` reports
// per decoded token) and what the memory planner expects a token to read: a dense model
// reads every weight once per ubatch and one embedding row per token; a mixture of experts
// reads, of its experts, only those its tokens chose.
#include <QtTest>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/layer_weight_bytes.h"
#include "engine/model/llama_graph.h"
#include "engine/runtime/session.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

uint64_t tensor_bytes(const gguf::GgufFile & f, const std::string & name) { return f.find_tensor(name)->n_bytes; }

uint64_t all_tensor_bytes(const gguf::GgufFile & f) {
    uint64_t n = 0;
    for (const gguf::TensorInfo & t : f.tensors()) n += t.n_bytes;
    return n;
}

}  // namespace

class TestWeightTraffic : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};

    // The bytes one ubatch of `tokens` reads.
    uint64_t bytes_of_ubatch(const Model & model, const std::vector<int32_t> & tokens) {
        auto graph = LlamaGraph::create(model, 64);
        auto kv = KvCache::create(KvCacheConfig{.max_tokens = 128}, model.kv_shape(), backend_);
        if (!graph.ok() || !kv.ok()) qFatal("cannot create the graph or the cache");
        std::vector<float> logits;
        if (Status s = graph->forward(**kv, 0, tokens, false, logits); !s.ok()) qFatal("%s", s.message().c_str());
        return graph->weight_bytes_read();
    }

private slots:
    // Every tensor but the embedding table, and one row of it.
    void denseModelReadsEveryWeight() {
        auto m = Model::load(shared_path("models/tiny-2026/tiny-qwen3-f32.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        const gguf::GgufFile & f = (*m)->file();
        const uint64_t row = 256 * sizeof(float);
        QCOMPARE(bytes_of_ubatch(**m, {1}), all_tensor_bytes(f) - tensor_bytes(f, "token_embd.weight") + row);
        QCOMPARE(bytes_of_ubatch(**m, {1, 2, 3}), all_tensor_bytes(f) - tensor_bytes(f, "token_embd.weight") + 3 * row);
        const ModelMemoryShape shape = memory_shape(**m);
        QCOMPARE(shape.expert_weight_bytes, uint64_t(0));
        QCOMPARE(shape.active_weight_bytes_per_token, shape.weight_bytes);
    }

    // Decode reads n_used experts per layer (gate, up and down rows of each); a prefill of
    // many tokens reads each chosen expert once, at most all of them.
    void mixtureReadsTheChosenExperts() {
        auto m = Model::load(shared_path("models/tiny-2026/tiny-qwen3moe-f32.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        const gguf::GgufFile & f = (*m)->file();
        const ModelHParams & hp = (*m)->hparams();
        const uint64_t experts = expert_weight_bytes(f);
        QCOMPARE(experts, (*m)->weights().n_expert_bytes);
        const uint64_t one_expert = experts / (uint64_t(hp.n_layer) * hp.n_expert);  // 3 x 32 x 128 floats
        QCOMPARE(one_expert, uint64_t(3 * 32 * 128 * 4));
        const uint64_t fixed = all_tensor_bytes(f) - experts - tensor_bytes(f, "token_embd.weight");
        const uint64_t row = 128 * sizeof(float);
        QCOMPARE(bytes_of_ubatch(**m, {1}), fixed + row + hp.n_layer * hp.n_expert_used * one_expert);

        std::vector<int32_t> prompt(40);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(1 + 11 * i % 500);
        const uint64_t prefill = bytes_of_ubatch(**m, prompt) - fixed - prompt.size() * row;
        QCOMPARE(prefill % one_expert, uint64_t(0));
        const uint64_t n_read = prefill / one_expert;
        qInfo("a 40-token prefill read %llu of the %u experts", (unsigned long long)n_read, hp.n_layer * hp.n_expert);
        QVERIFY(n_read > hp.n_layer * hp.n_expert_used && n_read <= hp.n_layer * hp.n_expert);

        // The planner's figure: every other weight (the whole embedding table) and 2 of 8 experts.
        const ModelMemoryShape shape = memory_shape(**m);
        QCOMPARE(shape.expert_weight_bytes, experts);
        QCOMPARE(shape.active_weight_bytes_per_token, shape.weight_bytes - experts + experts / 4);
    }
};

QTEST_GUILESS_MAIN(TestWeightTraffic)
#include "test_weight_traffic.moc"
