// Random-weight mixtures of experts (make-model): the qwen3-30b-a3b and gpt-oss-20b presets
// at their published parameter counts and layouts (expert stacks, F32 routers and expert
// biases, MXFP4_MOE's types), and the tiny presets (the shapes of the tiny-2026 reference
// models) written, loaded with every hyper-parameter as set, and run; a shared expert too.
#include <QtTest>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/llama_graph.h"
#include "engine/model/random_model_writer.h"

using namespace lr;

namespace {

const PlannedTensor * find_planned(const RandomModelPlan & plan, const std::string & name) {
    for (const PlannedTensor & t : plan.tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

// Routers and expert biases stay F32 in every format, as llama-quantize keeps them.
bool stays_f32(const PlannedTensor & t) {
    return t.is_vector() || t.name.find("ffn_gate_inp") != std::string::npos || t.name.ends_with("_exps.bias");
}

// The last-token logits of a short prompt.
std::vector<float> logits_of(const std::string & path, QString & failure) {
    CpuBackend backend({.n_threads = 2});
    auto model = Model::load(path, backend);
    if (!model.ok()) {
        failure = QString::fromStdString(model.status().message());
        return {};
    }
    auto graph = LlamaGraph::create(**model, 16);
    auto kv = KvCache::create(KvCacheConfig{.max_tokens = 64}, (*model)->kv_shape(), backend);
    std::vector<float> logits;
    const std::vector<int32_t> prompt = {1, 300, 301, 302, 303, 304, 305};
    if (Status s = graph->forward(**kv, 0, prompt, false, logits); !s.ok()) failure = QString::fromStdString(s.message());
    return logits;
}

}  // namespace

class TestMakeMoeModel : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

private slots:
    // Published totals: Qwen3-30B-A3B 30.5B, gpt-oss-20b 20.9B.
    void presetShapes_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<qulonglong>("n_params");
        QTest::addColumn<int>("n_tensors");
        // 3 + 48 x (4 attention matrices, 2 q/k norms, 2 norms, router, 3 expert stacks).
        QTest::newRow("qwen3-30b-a3b") << "qwen3-30b-a3b" << qulonglong(30'532'122'624) << 3 + 48 * 12;
        // 3 + 24 x (4 attention matrices and their biases, sinks, 2 norms, router and bias,
        // 3 expert stacks and their biases).
        QTest::newRow("gpt-oss-20b") << "gpt-oss-20b" << qulonglong(20'914'757'184) << 3 + 24 * 19;
    }
    void presetShapes() {
        QFETCH(QString, preset);
        QFETCH(qulonglong, n_params);
        QFETCH(int, n_tensors);
        const ModelPreset * p = find_model_preset(preset.toStdString());
        QVERIFY(p);
        QVERIFY(validate(p->shape).ok());
        auto plan = plan_random_model({.preset = preset.toStdString(), .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        qInfo("%s: %llu parameters, %zu tensors", qPrintable(preset), (unsigned long long)plan->n_params, plan->tensors.size());
        QCOMPARE(plan->n_params, n_params);
        QCOMPARE(int(plan->tensors.size()), n_tensors);
        const ModelShape & s = plan->shape;
        for (const PlannedTensor & t : plan->tensors) QCOMPARE(t.type, stays_f32(t) ? DType::F32 : DType::Q8_0);
        const PlannedTensor * gate = find_planned(*plan, "blk.0.ffn_gate_exps.weight");
        QVERIFY(gate && gate->ne0 == s.n_embd && gate->ne1 == s.n_ff_exp && gate->ne2 == s.n_expert);
        QCOMPARE(gate->dims(), (std::vector<uint64_t>{s.n_embd, s.n_ff_exp, s.n_expert}));
        const PlannedTensor * down = find_planned(*plan, "blk.0.ffn_down_exps.weight");
        QVERIFY(down && down->ne0 == s.n_ff_exp && down->ne1 == s.n_embd &&
                down->n_bytes == uint64_t(s.n_expert) * s.n_embd * (s.n_ff_exp / 32 * 34));
        const PlannedTensor * router = find_planned(*plan, "blk.0.ffn_gate_inp.weight");
        QVERIFY(router && router->ne0 == s.n_embd && router->ne1 == s.n_expert);
        QVERIFY(find_planned(*plan, "blk.0.ffn_gate.weight") == nullptr);
        const PlannedTensor * q = find_planned(*plan, "blk.0.attn_q.weight");
        QVERIFY(q && q->ne1 == uint64_t(s.n_head) * s.head_dim());
    }

    // gpt-oss-20b's published layout: MXFP4 experts, the other matrices Q8_0 (llama-quantize's
    // MXFP4_MOE), 11.3 GiB of tensors; the preset's default type.
    void gptOssMxfp4Moe() {
        const ModelPreset * p = find_model_preset("gpt-oss-20b");
        QVERIFY(p);
        QCOMPARE(weight_format_name(p->weights), std::string("MXFP4_MOE"));
        auto plan = plan_random_model({.preset = "gpt-oss-20b", .weights = p->weights, .output_path = "x.gguf"});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        QCOMPARE(plan->file_type, 38u);
        QVERIFY(plan->notes.empty());
        for (const PlannedTensor & t : plan->tensors) {
            const DType want = stays_f32(t) ? DType::F32 : t.ne2 > 1 ? DType::MXFP4 : DType::Q8_0;
            QVERIFY2(t.type == want, t.name.c_str());
        }
        const double gib = double(plan->n_tensor_bytes) / double(1ull << 30);
        qInfo("gpt-oss-20b MXFP4_MOE: %.2f GiB of tensors", gib);
        QVERIFY(std::abs(gib - 11.27) < 0.01);
        QCOMPARE(weight_format_name(find_model_preset("qwen3-30b-a3b")->weights), std::string("F16"));
    }

    // The tiny presets written (in their default and another type), loaded with every
    // hyper-parameter as set, and run.
    void tinyPresetsWriteAndLoad_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::newRow("tiny-qwen3moe-Q8_0") << "tiny-qwen3moe"
                                            << "Q8_0";
        QTest::newRow("tiny-qwen3moe-Q4_K_M") << "tiny-qwen3moe"
                                              << "Q4_K_M";
        QTest::newRow("tiny-gpt-oss-MXFP4_MOE") << "tiny-gpt-oss"
                                                << "MXFP4_MOE";
        QTest::newRow("tiny-gpt-oss-F32") << "tiny-gpt-oss"
                                          << "F32";
    }
    void tinyPresetsWriteAndLoad() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        const std::string file = dir_.filePath(preset + "-" + type + ".gguf").toStdString();
        const Status s = write_random_model(
            {.preset = preset.toStdString(), .weights = *weight_format_from_name(type.toStdString()), .output_path = file, .n_threads = 2});
        QVERIFY2(s.ok(), s.message().c_str());
        const ModelShape & shape = find_model_preset(preset.toStdString())->shape;
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(file, backend);
        QVERIFY2(model.ok(), model.status().message().c_str());
        const ModelHParams & hp = (*model)->hparams();
        QCOMPARE(hp.arch, shape.arch);
        QCOMPARE(hp.n_embd, shape.n_embd);
        QCOMPARE(hp.head_dim, shape.head_dim());
        QCOMPARE(hp.n_expert, shape.n_expert);
        QCOMPARE(hp.n_expert_used, shape.n_expert_used);
        QCOMPARE(hp.n_ff_exp, shape.n_ff_exp);
        QCOMPARE(hp.n_ctx_train, shape.n_ctx_train);
        QCOMPARE(hp.n_swa, shape.sliding_window);
        QCOMPARE(hp.rope_scaling, shape.rope_yarn_factor > 0 ? RopeScaling::yarn : RopeScaling::none);
        QCOMPARE(hp.n_ctx_orig, shape.rope_yarn_factor > 0 ? shape.n_ctx_orig_yarn : shape.n_ctx_train);
        const LayerWeights & L = (*model)->weights().layers[1];
        QVERIFY(L.moe.has_value());
        QCOMPARE(L.moe->experts.n_expert, int32_t(shape.n_expert));
        QCOMPARE(L.attn_sinks.has_value(), shape.arch == ModelArch::gpt_oss);
        QCOMPARE(L.moe->router_bias.has_value(), shape.arch == ModelArch::gpt_oss);
        QCOMPARE(L.q_norm.has_value(), shape.arch == ModelArch::qwen3moe);
        QString failure;
        const std::vector<float> logits = logits_of(file, failure);
        QVERIFY2(!logits.empty(), qPrintable(failure));
        for (float x : logits) QVERIFY(std::isfinite(x));
    }

    // A shared expert (qwen2moe / qwen35moe style) is written, loaded and added: with the
    // same seed every other tensor is the same, so the logits move by its part alone.
    void sharedExpertWritesLoadsAndAdds() {
        ModelShape shape = find_model_preset("tiny-qwen3moe")->shape;
        const std::string plain = dir_.filePath("plain.gguf").toStdString(), shared = dir_.filePath("shared.gguf").toStdString();
        QVERIFY(write_random_model({.shape = shape, .weights = {DType::F32}, .output_path = plain, .seed = 3, .n_threads = 2}).ok());
        shape.n_ff_shexp = 64;
        QVERIFY(write_random_model({.shape = shape, .weights = {DType::F32}, .output_path = shared, .seed = 3, .n_threads = 2}).ok());
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared, backend);
        QVERIFY2(model.ok(), model.status().message().c_str());
        QCOMPARE((*model)->hparams().n_ff_shexp, 64u);
        QCOMPARE((*model)->hparams().n_expert_shared, 1u);
        const MoeWeights & m = *(*model)->weights().layers[0].moe;
        QVERIFY(m.shexp_gate && m.shexp_up && m.shexp_down && m.shexp_gate_inp);
        QCOMPARE(m.shexp_down->n_cols, int64_t(64));
        QString failure;
        const std::vector<float> a = logits_of(plain, failure), b = logits_of(shared, failure);
        QVERIFY2(!a.empty() && !b.empty(), qPrintable(failure));
        float diff = 0;
        for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
        qInfo("the shared expert moves the logits by up to %.3g", double(diff));
        QVERIFY(diff > 1e-4f);
    }

    // The dense counterparts benchmarks compare with: qwen3-30b-a3b's is a qwen3 of its 3.34B
    // active parameters (published: 3.3B), every expert but the chosen 8 and the router gone;
    // tiny-gpt-oss's keeps its layout with one expert 4 x as wide, and runs.
    void denseCounterparts() {
        const ModelShape moe = find_model_preset("qwen3-30b-a3b")->shape;
        const ModelShape dense = dense_counterpart(moe);
        QCOMPARE(dense.arch, ModelArch::qwen3);
        QCOMPARE(dense.n_ff, 8u * 768u);
        QVERIFY(!dense.is_moe());
        QVERIFY(validate(dense).ok());
        auto moe_plan = plan_random_model({.shape = moe, .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        auto dense_plan = plan_random_model({.shape = dense, .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        QVERIFY(moe_plan.ok() && dense_plan.ok());
        const uint64_t dropped = uint64_t(moe.n_layer) * ((moe.n_expert - moe.n_expert_used) * 3ull * moe.n_embd * moe.n_ff_exp +
                                                          uint64_t(moe.n_embd) * moe.n_expert);
        QCOMPARE(dense_plan->n_params, moe_plan->n_params - dropped);
        QCOMPARE(dense_plan->n_params, qulonglong(3'340'449'792));

        const ModelShape oss = dense_counterpart(find_model_preset("tiny-gpt-oss")->shape);
        QCOMPARE(oss.arch, ModelArch::gpt_oss);
        QCOMPARE(oss.n_expert, 1u);
        QCOMPARE(oss.n_ff_exp, 4u * 64u);
        const std::string file = dir_.filePath("tiny-gpt-oss-dense.gguf").toStdString();
        const Status s = write_random_model({.shape = oss, .weights = {DType::F32}, .output_path = file, .n_threads = 2});
        QVERIFY2(s.ok(), s.message().c_str());
        QString failure;
        const std::vector<float> logits = logits_of(file, failure);
        QVERIFY2(!logits.empty(), qPrintable(failure));
        QVERIFY(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
        QCOMPARE(dense_counterpart(dense).n_ff, dense.n_ff);
    }

    void invalidShapes_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("moe-without-experts") << "no-experts"
                                             << "qwen3moe needs experts";
        QTest::newRow("dense-with-experts") << "dense-experts"
                                            << "only qwen3moe, qwen35moe and gpt-oss models have experts";
        QTest::newRow("too-many-used") << "too-many-used"
                                       << "n_expert_used 1 to n_expert";
        QTest::newRow("gpt-oss-without-window") << "no-window"
                                                << "gpt-oss needs a sliding window";
    }
    void invalidShapes() {
        QFETCH(QString, what);
        QFETCH(QString, message);
        ModelShape s = find_model_preset(what == "no-window" ? "tiny-gpt-oss" : "tiny-qwen3moe")->shape;
        if (what == "no-experts") s.n_expert = 0;
        if (what == "dense-experts") s.arch = ModelArch::qwen3;
        if (what == "too-many-used") s.n_expert_used = 9;
        if (what == "no-window") s.sliding_window = 0;
        const Status st = validate(s);
        QVERIFY(!st.ok());
        QVERIFY2(QString::fromStdString(st.message()).contains(message), st.message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestMakeMoeModel)
#include "test_make_moe_model.moc"
