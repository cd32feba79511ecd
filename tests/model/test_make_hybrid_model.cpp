// Random-weight hybrids (make-model): qwen35 and qwen35moe with their Gated DeltaNet layers.
// The tiny presets lay out exactly the tensors and keys of llama.cpp's tiny-2026 files, load
// with three recurrent layers of four, keep their decay in (0, 1) and run; the Qwen3.6
// presets have the parameter counts their descriptions state and scale down by layers.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <map>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_graph.h"
#include "engine/model/random_model_writer.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

Q_DECLARE_METATYPE(lr::DType)

namespace {

const PlannedTensor * find_planned(const RandomModelPlan & plan, const std::string & name) {
    for (const PlannedTensor & t : plan.tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

// What llama-quantize keeps in F32: vectors, routers and the convolution.
bool stays_f32(const PlannedTensor & t) {
    return t.is_vector() || t.name.find("ffn_gate_inp") != std::string::npos || t.name.ends_with("ssm_conv1d.weight");
}

// A tensor's values as floats (the file must hold it in F32).
std::vector<float> f32_values(const gguf::GgufFile & file, const std::string & name) {
    const gguf::TensorInfo * t = file.find_tensor(name);
    if (!t || t->type != DType::F32) return {};
    std::vector<float> values(t->n_bytes / sizeof(float));
    std::memcpy(values.data(), t->data, t->n_bytes);
    return values;
}

// Whether key `key` holds the same value in both files (numbers compared as read).
bool same_value(const gguf::GgufFile & a, const gguf::GgufFile & b, std::string_view key) {
    const gguf::MetaValue *x = a.find(key), *y = b.find(key);
    if (!x || !y || x->type != y->type) return false;
    if (x->type == gguf::ValueType::string) return x->str == y->str;
    if (x->type == gguf::ValueType::array) {
        auto xs = a.get_int_array(key), ys = b.get_int_array(key);
        return xs.ok() && ys.ok() && *xs == *ys;
    }
    return x->u == y->u && x->i == y->i && x->f == y->f;
}

// The logits of every step: a prompt in one ubatch, then n_decode greedy tokens one by one.
std::vector<std::vector<float>> run_model(const std::string & path, const std::vector<int32_t> & prompt, int n_decode, QString & failure) {
    CpuBackend backend({.n_threads = 2});
    auto model = Model::load(path, backend);
    if (!model.ok()) {
        failure = QString::fromStdString(model.status().message());
        return {};
    }
    auto graph = LlamaGraph::create(**model, 512);
    auto kv = KvCache::create(KvCacheConfig{.max_tokens = 1024}, (*model)->kv_shape(), backend);
    if (!graph.ok() || !kv.ok()) {
        failure = "cannot create the graph or the KV cache";
        return {};
    }
    std::vector<std::vector<float>> steps(1);
    if (Status s = graph->forward(**kv, 0, prompt, false, steps[0]); !s.ok()) {
        failure = QString::fromStdString(s.message());
        return {};
    }
    for (int i = 0; i < n_decode; ++i) {
        const std::vector<float> & last = steps.back();
        const int32_t token = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        steps.emplace_back();
        if (Status s = graph->forward(**kv, 0, std::span(&token, 1), false, steps.back()); !s.ok()) {
            failure = QString::fromStdString(s.message());
            return {};
        }
    }
    return steps;
}

}  // namespace

class TestMakeHybridModel : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    std::string write_preset(const QString & preset, DType type) {
        const std::string file = dir_.filePath(preset + "-" + QString(dtype_name(type).data()) + ".gguf").toStdString();
        const Status s = write_random_model({.preset = preset.toStdString(), .weights = {type}, .output_path = file, .n_threads = 2});
        return s.ok() ? file : std::string();
    }

private slots:
    // Counted by hand from the published configs (Qwen/Qwen3.6-27B, Qwen/Qwen3.6-35B-A3B, the
    // language model without vision encoder and MTP layer), and from the tiny-2026 files.
    void presetShapes_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<qulonglong>("n_params");
        QTest::addColumn<int>("n_tensors");
        QTest::addColumn<QString>("stated");  // what the description says
        // 3 + 3 x (2 norms, 9 delta-net tensors, 3 FFN matrices) + (2 norms, q, k, v, o, q/k norms, 3 FFN matrices).
        QTest::newRow("tiny-qwen35") << "tiny-qwen35" << qulonglong(859'512) << 3 + 3 * 14 + 11 << "";
        // The FFN: a router, 3 expert stacks, the shared expert's gate and 3 matrices.
        QTest::newRow("tiny-qwen35moe") << "tiny-qwen35moe" << qulonglong(962'424) << 3 + 3 * 19 + 16 << "";
        QTest::newRow("qwen3.6-27b") << "qwen3.6-27b" << qulonglong(26'895'998'464) << 3 + 48 * 14 + 16 * 11 << "26.90B parameters";
        QTest::newRow("qwen3.6-35b-a3b") << "qwen3.6-35b-a3b" << qulonglong(34'660'610'688) << 3 + 30 * 19 + 10 * 16
                                         << "34.66B parameters (3.45B per token)";
    }
    void presetShapes() {
        QFETCH(QString, preset);
        QFETCH(qulonglong, n_params);
        QFETCH(int, n_tensors);
        QFETCH(QString, stated);
        const ModelPreset * p = find_model_preset(preset.toStdString());
        QVERIFY(p);
        QVERIFY(validate(p->shape).ok());
        QVERIFY(QString::fromUtf8(p->description.data(), qsizetype(p->description.size())).contains(stated));
        auto plan = plan_random_model({.preset = preset.toStdString(), .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        QCOMPARE(plan->n_params, n_params);
        QCOMPARE(int(plan->tensors.size()), n_tensors);
        QVERIFY(plan->notes.empty());
        for (const PlannedTensor & t : plan->tensors) QVERIFY2(t.type == (stays_f32(t) ? DType::F32 : DType::Q8_0), t.name.c_str());
        const ModelShape & s = plan->shape;
        const std::string last = "blk." + std::to_string(s.n_layer - 1) + ".";
        QVERIFY(!s.is_recurrent(s.n_layer - 1));
        QVERIFY(find_planned(*plan, "blk.0.attn_qkv.weight") && !find_planned(*plan, "blk.0.attn_q.weight"));
        const PlannedTensor * q = find_planned(*plan, last + "attn_q.weight");  // q and its gate
        QVERIFY(q && q->ne1 == 2ull * s.n_head * s.head_dim());
        const PlannedTensor * conv = find_planned(*plan, "blk.0.ssm_conv1d.weight");
        QVERIFY(conv && conv->ne0 == s.ssm_conv_kernel && conv->ne1 == s.delta_net_channels());
        if (s.is_moe()) {
            const uint64_t n_used = uint64_t(s.n_layer) * s.n_expert_used * 3 * s.n_embd * s.n_ff_exp;
            const uint64_t n_all = uint64_t(s.n_layer) * s.n_expert * 3 * s.n_embd * s.n_ff_exp;
            qInfo("%s: %.4gB parameters, %.4gB per token", qPrintable(preset), double(n_params) / 1e9,
                  double(n_params - n_all + n_used) / 1e9);
            if (!stated.isEmpty()) QVERIFY(std::abs(double(n_params - n_all + n_used) / 1e9 - 3.45) < 0.01);
        }
    }

    // The tiny presets are the tiny-2026 files' shapes: the same tensors with the same
    // shapes, and every hyper-parameter key with the same value.
    void tinyPresetsMatchTheReferenceFiles_data() {
        QTest::addColumn<QString>("preset");
        QTest::newRow("qwen35") << "tiny-qwen35";
        QTest::newRow("qwen35moe") << "tiny-qwen35moe";
    }
    void tinyPresetsMatchTheReferenceFiles() {
        QFETCH(QString, preset);
        const std::string file = write_preset(preset, DType::F32);
        QVERIFY(!file.empty());
        auto ours = gguf::GgufFile::open(file);
        auto theirs = gguf::GgufFile::open(shared_path("models/tiny-2026/" + preset + "-f32.gguf").toStdString());
        QVERIFY(ours.ok() && theirs.ok());
        std::map<std::string, std::vector<uint64_t>> our_tensors, their_tensors;
        for (const gguf::TensorInfo & t : ours->tensors()) our_tensors[t.name] = {t.ne.begin(), t.ne.begin() + t.n_dims};
        for (const gguf::TensorInfo & t : theirs->tensors()) their_tensors[t.name] = {t.ne.begin(), t.ne.begin() + t.n_dims};
        QVERIFY(our_tensors == their_tensors);
        const std::string arch = preset == "tiny-qwen35" ? "qwen35." : "qwen35moe.";
        int n_keys = 0;
        for (const gguf::MetaEntry & e : theirs->metadata()) {
            if (!e.key.starts_with(arch)) continue;
            QVERIFY2(same_value(*ours, *theirs, e.key), std::string(e.key).c_str());
            ++n_keys;
        }
        QVERIFY(n_keys >= 17);
    }

    // Written, loaded with three recurrent layers of four, the delta-net decay in (0, 1);
    // the prompt in one ubatch (the chunked delta rule) and then greedy decoding (the
    // recurrent one) give finite logits of a sane size, over more than a chunk of tokens.
    void tinyPresetsLoadAndGenerate_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<DType>("type");
        QTest::newRow("qwen35-F32") << "tiny-qwen35" << DType::F32;
        QTest::newRow("qwen35-Q8_0") << "tiny-qwen35" << DType::Q8_0;
        QTest::newRow("qwen35moe-F16") << "tiny-qwen35moe" << DType::F16;
    }
    void tinyPresetsLoadAndGenerate() {
        QFETCH(QString, preset);
        QFETCH(DType, type);
        const std::string file = write_preset(preset, type);
        QVERIFY(!file.empty());
        const ModelShape & shape = find_model_preset(preset.toStdString())->shape;
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(file, backend);
        QVERIFY2(model.ok(), model.status().message().c_str());
        const ModelHParams & hp = (*model)->hparams();
        QCOMPARE(hp.arch, shape.arch);
        QCOMPARE(hp.full_attention_interval, 4u);
        QCOMPARE(hp.ssm_conv_kernel, shape.ssm_conv_kernel);
        QCOMPARE(hp.ssm_state_size, shape.ssm_state_size);
        QCOMPARE(hp.ssm_group_count, shape.ssm_group_count);
        QCOMPARE(hp.ssm_time_step_rank, shape.ssm_time_step_rank);
        QCOMPARE(hp.n_rot, 16u);
        QCOMPARE(hp.head_dim, 64u);
        QCOMPARE(hp.n_ff_shexp, shape.n_ff_shexp);
        const std::vector<LayerWeights> & layers = (*model)->weights().layers;
        for (uint32_t il = 0; il < 4; ++il) {
            QCOMPARE(hp.is_recurrent(il), il != 3);
            QCOMPARE(layers[il].delta_net.has_value(), il != 3);
            QCOMPARE(layers[il].moe.has_value(), shape.is_moe());
        }
        QVERIFY(layers[3].q_norm.has_value());
        if (shape.is_moe()) QVERIFY(layers[0].moe->shexp_gate_inp.has_value());

        for (uint32_t il = 0; il < 3; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            const std::vector<float> a = f32_values((*model)->file(), b + "ssm_a");
            const std::vector<float> dt_bias = f32_values((*model)->file(), b + "ssm_dt.bias");
            QCOMPARE(a.size(), size_t(shape.ssm_time_step_rank));
            QCOMPARE(dt_bias.size(), a.size());
            for (size_t h = 0; h < a.size(); ++h) {
                QVERIFY(a[h] <= -1.0f && a[h] >= -16.0f);
                const double dt = std::log1p(std::exp(double(dt_bias[h])));  // softplus
                QVERIFY2(dt > 0.99e-3 && dt < 1.01e-1, qPrintable(QString::number(dt)));
                const double decay = std::exp(double(a[h]) * dt);
                QVERIFY(decay > 0.0 && decay < 1.0);
            }
        }

        std::vector<int32_t> prompt(200);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + (i * 37) % 500);
        prompt[0] = 1;
        QString failure;
        const std::vector<std::vector<float>> steps = run_model(file, prompt, 8, failure);
        QVERIFY2(!steps.empty(), qPrintable(failure));
        for (const std::vector<float> & logits : steps) {
            QCOMPARE(logits.size(), size_t(shape.n_vocab));
            float lo = logits[0], hi = logits[0];
            for (float x : logits) {
                QVERIFY(std::isfinite(x));
                lo = std::min(lo, x), hi = std::max(hi, x);
            }
            QVERIFY2(hi - lo > 1e-3f && hi - lo < 50.0f, qPrintable(QString("logits span %1 to %2").arg(lo).arg(hi)));
        }
        const auto [lo, hi] = std::minmax_element(steps.back().begin(), steps.back().end());
        qInfo("logits after 200 + 8 tokens span %.3f to %.3f", double(*lo), double(*hi));
    }

    // --layers keeps the width and the period; fewer layers than the period leave no
    // attention layer and are refused.
    void fewerLayers() {
        ModelShape s = find_model_preset("qwen3.6-27b")->shape;
        s.n_layer = 8;
        auto plan = plan_random_model({.shape = s, .weights = {DType::Q4_0}, .output_path = "x.gguf"});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        // 6 delta-net and 2 attention layers of 383.27M and 372.26M, and the 2 x 1.27B embeddings.
        QCOMPARE(plan->n_params, qulonglong(5'586'951'488));
        QCOMPARE(int(plan->tensors.size()), 3 + 6 * 14 + 2 * 11);
        s.n_layer = 3;
        const Status st = validate(s);
        QVERIFY(!st.ok());
        QVERIFY2(QString::fromStdString(st.message()).contains("at least full_attention_interval (4) layers"), st.message().c_str());
    }

    // qwen3.6-35b-a3b's dense counterpart is a qwen35 whose FFN is as wide as the 8 experts
    // and the shared one; its routers, other experts and shared-expert gates are gone.
    void denseCounterpart() {
        const ModelShape moe = find_model_preset("qwen3.6-35b-a3b")->shape;
        const ModelShape dense = dense_counterpart(moe);
        QCOMPARE(dense.arch, ModelArch::qwen35);
        QCOMPARE(dense.n_ff, 8u * 512u + 512u);
        QVERIFY(!dense.is_moe());
        QVERIFY(validate(dense).ok());
        auto plan = plan_random_model({.shape = dense, .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        QVERIFY(plan.ok());
        const uint64_t dropped = 40ull * ((256 - 8) * 3ull * 2048 * 512 + 2048 * 256 + 2048);
        QCOMPARE(plan->n_params, qulonglong(34'660'610'688 - dropped));

        const std::string file = dir_.filePath("tiny-qwen35moe-dense.gguf").toStdString();
        const ModelShape tiny = dense_counterpart(find_model_preset("tiny-qwen35moe")->shape);
        QCOMPARE(tiny.arch, ModelArch::qwen35);
        QCOMPARE(tiny.n_ff, 2u * 32u + 64u);
        QVERIFY(validate(tiny).ok());
        QVERIFY(write_random_model({.shape = tiny, .weights = {DType::F32}, .output_path = file, .n_threads = 2}).ok());
        QString failure;
        const std::vector<std::vector<float>> steps = run_model(file, {1, 300, 301, 302}, 2, failure);
        QVERIFY2(!steps.empty(), qPrintable(failure));
        for (float x : steps.back()) QVERIFY(std::isfinite(x));
    }

    void invalidShapes_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("no-delta-net") << "no-delta-net"
                                      << "qwen35 needs Gated DeltaNet layers";
        QTest::newRow("delta-net-in-qwen3") << "qwen3"
                                            << "only qwen35 and qwen35moe models have Gated DeltaNet layers";
        QTest::newRow("v-heads") << "v-heads"
                                 << "is not a multiple of ssm_group_count";
        QTest::newRow("conv") << "conv"
                              << "ssm_conv_kernel 2 to 64";
        QTest::newRow("odd-rope") << "odd-rope"
                                  << "n_rot 15 must be even";
    }
    void invalidShapes() {
        QFETCH(QString, what);
        QFETCH(QString, message);
        ModelShape s = find_model_preset("tiny-qwen35")->shape;
        if (what == "no-delta-net") s.full_attention_interval = 0;
        if (what == "qwen3") s.arch = ModelArch::qwen3;
        if (what == "v-heads") s.ssm_time_step_rank = 3;
        if (what == "conv") s.ssm_conv_kernel = 1;
        if (what == "odd-rope") s.n_rot = 15;
        const Status st = validate(s);
        QVERIFY(!st.ok());
        QVERIFY2(QString::fromStdString(st.message()).contains(message), st.message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestMakeHybridModel)
#include "test_make_hybrid_model.moc"
