// Hyper-parameters and features of the 2025-2026 families as llama.cpp's loader sets them:
// the tiny-2026 files (../shared/reference/tiny-2026/README.md lists their keys), the
// defaults when a key is absent, fused tensors and expert stacks as views, and the errors
// that name what is not supported or inconsistent.
#include <QtTest>

#include <cmath>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

Result<gguf::GgufFile> open_tiny(const QString & name) {
    return gguf::GgufFile::open(shared_path("models/tiny-2026/" + name + ".gguf").toStdString());
}

// A metadata-only file of `arch` with the common keys; `extra` adds or changes keys.
Result<ModelHParams> hparams_of(const std::string & arch, const std::function<void(gguf::GgufWriter &)> & extra = {}) {
    gguf::GgufWriter w;
    w.set_string("general.architecture", arch);
    w.set_uint32(arch + ".vocab_size", 512);
    w.set_uint32(arch + ".embedding_length", 128);
    w.set_uint32(arch + ".block_count", 4);
    w.set_uint32(arch + ".feed_forward_length", 256);
    w.set_uint32(arch + ".attention.head_count", 4);
    w.set_uint32(arch + ".attention.head_count_kv", 2);
    w.set_float32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
    if (extra) extra(w);
    static std::vector<uint8_t> bytes;  // the parsed file points into them
    auto written = w.write_bytes([](size_t, uint64_t, std::span<uint8_t>) { return Status{}; });
    if (!written.ok()) return written.status();
    bytes = std::move(written).value();
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::parse(bytes, arch + ".gguf"));
    return read_hparams(file);
}

std::vector<uint8_t> sliding_of(const ModelHParams & hp) {
    std::vector<uint8_t> s;
    for (uint32_t il = 0; il < hp.n_layer; ++il) s.push_back(hp.is_sliding(il));
    return s;
}

}  // namespace

class TestModelHParams : public QObject {
    Q_OBJECT
private slots:
    void qwen3() {
        auto f = open_tiny("tiny-qwen3-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->arch, ModelArch::qwen3);
        QCOMPARE(hp->head_dim, 64u);
        QCOMPARE(hp->n_embd_q(), 512u);  // head count x head size != n_embd
        QCOMPARE(hp->rope_mode, RopeMode::neox);
        QCOMPARE(hp->rope_freq_base, 1e6f);
        QCOMPARE(sliding_of(*hp), std::vector<uint8_t>(2, 0));
        const ModelFeatures ft = model_features(*hp);
        QVERIFY(ft.qk_norm && !ft.post_norms && !ft.fused_gate_up);
        QCOMPARE(ft.kq_scale, 0.125f);
        QCOMPARE(ft.q_scale, 1.0f);
        QCOMPARE(ft.rope_full.ext_factor, 0.0f);
        QCOMPARE(ft.rope_full.attn_factor, 1.0f);
        QVERIFY(keys_shift_by_rotation(*hp));
    }

    // Layers 0, 1, 3 slide (period 3: il % 3 < 2), base 1e4 unscaled; layer 2 is global with
    // base 1e6 and the linear factor 8.
    void gemma3() {
        auto f = open_tiny("tiny-gemma3-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->arch, ModelArch::gemma3);
        QCOMPARE(sliding_of(*hp), (std::vector<uint8_t>{1, 1, 0, 1}));
        QCOMPARE(hp->window(0), 32u);
        QCOMPARE(hp->window(2), 0u);
        const ModelFeatures ft = model_features(*hp);
        QVERIFY(ft.qk_norm && ft.post_norms);
        QCOMPARE(ft.ffn_act, FfnActivation::gelu_tanh);
        QCOMPARE(ft.embd_scale, std::sqrt(128.0f));
        QCOMPARE(ft.q_scale, 0.125f);
        QCOMPARE(ft.kq_scale, 1.0f);
        QCOMPARE(ft.rope_full.freq_base, 1e6f);
        QCOMPARE(ft.rope_full.freq_scale, 0.125f);
        QCOMPARE(ft.rope_sliding.freq_base, 1e4f);
        QCOMPARE(ft.rope_sliding.freq_scale, 1.0f);
        QCOMPARE(ft.final_softcap, 0.0f);
        QVERIFY(!keys_shift_by_rotation(*hp));
    }

    // Gemma 4: heads and FFN widths per layer, sliding layers with a head size and rope of
    // their own, the last layers reading the KV of llama.cpp's sources, per-layer inputs.
    void gemma4() {
        auto f = open_tiny("tiny-gemma4-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->arch, ModelArch::gemma4);
        QCOMPARE(sliding_of(*hp), (std::vector<uint8_t>{1, 1, 0, 1, 0}));
        QCOMPARE(hp->n_head_kv_of(0), 2u);
        QCOMPARE(hp->n_head_kv_of(2), 1u);
        QCOMPARE(hp->n_ff_of(2), 128u);
        QCOMPARE(hp->n_ff_of(3), 256u);
        QCOMPARE(hp->head_dim_of(0), 32u);
        QCOMPARE(hp->head_dim_of(2), 64u);
        QCOMPARE(hp->n_rot_of(1), 32u);
        QCOMPARE(hp->n_rot_of(4), 64u);
        QCOMPARE(hp->n_layer_kv, 3u);
        QVERIFY(hp->has_kv(2) && !hp->has_kv(3));
        QCOMPARE(hp->kv_source(3), 1u);
        QCOMPARE(hp->kv_source(4), 2u);
        QCOMPARE(hp->n_embd_per_layer, 32u);
        QCOMPARE(hp->final_logit_softcap, 30.0f);
        const ModelFeatures ft = model_features(*hp);
        QCOMPARE(ft.kq_scale, 1.0f);
        QCOMPARE(ft.q_scale, 1.0f);
        QVERIFY(ft.v_norm && ft.v_optional && ft.layer_output_scale && ft.rope_freqs_full_only);
        QCOMPARE(ft.rope_sliding.n_rot, 32);
        QCOMPARE(ft.rope_sliding.head_dim, 32);
        QCOMPARE(ft.rope_sliding.freq_base, 1e4f);
        QCOMPARE(ft.rope_full.n_rot, 64);
        QCOMPARE(ft.rope_full.freq_base, 1e6f);
        const std::vector<KvLayerSpec> specs = kv_layer_specs(*hp);
        QCOMPARE(specs[3].kind, KvLayerKind::shared);
        QCOMPARE(specs[3].source, 1u);
        QCOMPARE(specs[3].head_dim, 32u);
        QCOMPARE(specs[4].n_head_kv, 1u);
    }

    void gemma4KeysAreChecked() {
        auto gemma4_with = [](const std::function<void(gguf::GgufWriter &)> & more) {
            return hparams_of("gemma4", [&](gguf::GgufWriter & w) {
                w.set_uint32("gemma4.attention.sliding_window", 32);
                w.set_int32_array("gemma4.attention.sliding_window_pattern", {1, 1, 0, 0});
                w.set_uint32("gemma4.attention.key_length_swa", 16);
                w.set_uint32("gemma4.attention.value_length_swa", 16);
                w.set_uint32("gemma4.embedding_length_per_layer_input", 8);
                if (more) more(w);
            });
        };
        QVERIFY(gemma4_with({}).ok());
        auto one_shared = gemma4_with([](gguf::GgufWriter & w) { w.set_uint32("gemma4.attention.shared_kv_layers", 1); });
        QVERIFY(one_shared.ok());
        QCOMPARE(one_shared->kv_source(3), 2u);
        // Two shared layers would read layers 0 and 1, both sliding: llama.cpp's rule fails.
        auto two_shared = gemma4_with([](gguf::GgufWriter & w) { w.set_uint32("gemma4.attention.shared_kv_layers", 2); });
        QCOMPARE(two_shared.status().code(), StatusCode::unsupported);
        auto short_pattern = gemma4_with([](gguf::GgufWriter & w) {
            w.set_int32_array("gemma4.attention.sliding_window_pattern", {1, 0});
        });
        QCOMPARE(short_pattern.status().code(), StatusCode::corrupt_data);
        auto short_heads = gemma4_with([](gguf::GgufWriter & w) { w.set_int32_array("gemma4.attention.head_count_kv", {2, 2, 1}); });
        QCOMPARE(short_heads.status().code(), StatusCode::corrupt_data);
        auto no_swa_head = hparams_of("gemma4", [](gguf::GgufWriter & w) {
            w.set_uint32("gemma4.attention.sliding_window", 32);
            w.set_int32_array("gemma4.attention.sliding_window_pattern", {1, 1, 0, 0});
        });
        QCOMPARE(no_swa_head.status().code(), StatusCode::corrupt_data);
    }

    // llama.cpp's defaults: period 6 without the pattern key (every layer of a 4-layer model
    // slides), no sliding layer without a window, the 27B model's query scale.
    void gemma3Defaults() {
        auto no_pattern = hparams_of("gemma3", [](gguf::GgufWriter & w) { w.set_uint32("gemma3.attention.sliding_window", 512); });
        QVERIFY2(no_pattern.ok(), no_pattern.status().message().c_str());
        QCOMPARE(sliding_of(*no_pattern), std::vector<uint8_t>(4, 1));
        QCOMPARE(no_pattern->rope_freq_base_swa, 10000.0f);
        auto no_window = hparams_of("gemma3");
        QVERIFY(no_window.ok());
        QCOMPARE(sliding_of(*no_window), std::vector<uint8_t>(4, 0));
        auto big = hparams_of("gemma3", [](gguf::GgufWriter & w) {
            w.set_uint32("gemma3.block_count", 62);
            w.set_uint32("gemma3.attention.key_length", 16);
            w.set_uint32("gemma3.attention.value_length", 16);
        });
        QVERIFY(big.ok());
        QCOMPARE(big->attention_scale, 1.0f / std::sqrt(32.0f));  // n_embd / n_head, not the head size
        auto period2 = hparams_of("gemma3", [](gguf::GgufWriter & w) {
            w.set_uint32("gemma3.attention.sliding_window", 64);
            w.set_uint32("gemma3.attention.sliding_window_pattern", 2);
            w.set_float32("gemma3.final_logit_softcapping", 30.0f);
        });
        QVERIFY(period2.ok());
        QCOMPARE(sliding_of(*period2), (std::vector<uint8_t>{1, 0, 1, 0}));
        QCOMPARE(model_features(*period2).final_softcap, 30.0f);
    }

    // YaRN: ext_factor 1, correction dims from beta 32 / 1 and the original context 64; the
    // magnitude the context passes (1 / (1 + 0.1 ln 16)) cancels the kernel's gain. The
    // Llama 4 temperature has the original context as its period.
    void mistral3() {
        auto f = open_tiny("tiny-mistral3-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->rope_mode, RopeMode::normal);
        QCOMPARE(hp->rope_scaling, RopeScaling::yarn);
        QCOMPARE(hp->n_ctx_orig, 64u);
        const ModelFeatures ft = model_features(*hp);
        const RopeParams & r = ft.rope_full;
        QCOMPARE(r.freq_scale, 1.0f / 16.0f);
        QCOMPARE(r.ext_factor, 1.0f);
        const double corr = [](double beta) { return 32 * std::log(64 / (beta * 2 * M_PI)) / (2 * std::log(1e6)); }(32);
        QCOMPARE(r.corr_low, float(std::max(0.0, std::floor(corr))));
        QCOMPARE(r.corr_high, float(std::min(31.0, std::ceil(32 * std::log(64 / (2 * M_PI)) / (2 * std::log(1e6))))));
        QVERIFY(std::fabs(r.attn_factor * (1.0f + 0.1f * std::log(16.0f)) - 1.0f) < 1e-6f);
        QCOMPARE(ft.kq_scale, 1.0f / std::sqrt(32.0f));
        QCOMPARE(attention_temperature(ft, 0), 1.0f);
        QCOMPARE(attention_temperature(ft, 63), 1.0f);
        QCOMPARE(attention_temperature(ft, 64), float(1.0 + 0.1 * std::log(2.0)));
        QCOMPARE(attention_temperature(ft, 206), float(1.0 + 0.1 * std::log(4.0)));
        QVERIFY(!keys_shift_by_rotation(*hp));
    }

    // LongRoPE: the attn_factor key scales cos and sin; the window key is ignored (llama.cpp:
    // "Phi SWA is currently disabled"); q is scaled before attention.
    void phi3() {
        auto f = open_tiny("tiny-phi3-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->n_ctx_orig, 256u);
        QCOMPARE(hp->rope_attn_factor, 1.118034f);
        QCOMPARE(sliding_of(*hp), std::vector<uint8_t>(2, 0));
        const ModelFeatures ft = model_features(*hp);
        QCOMPARE(ft.rope_full.attn_factor, 1.118034f);
        QCOMPARE(ft.rope_full.ext_factor, 0.0f);
        QCOMPARE(ft.q_scale, 1.0f / std::sqrt(32.0f));
        QCOMPARE(ft.kq_scale, 1.0f);
        QVERIFY(ft.fused_gate_up && ft.long_short_rope);
    }

    // Fused attn_qkv and [gate | up] ffn_up become row views of the one tensor.
    void phi3FusedWeightsAreRowViews() {
        CpuBackend backend({.n_threads = 1});
        auto m = Model::load(shared_path("models/tiny-2026/tiny-phi3-f32.gguf").toStdString(), backend);
        QVERIFY2(m.ok(), m.status().message().c_str());
        const gguf::GgufFile & f = (*m)->file();
        const LayerWeights & L = (*m)->weights().layers[1];
        const auto * qkv = static_cast<const uint8_t *>(f.find_tensor("blk.1.attn_qkv.weight")->data);
        const size_t row = 128 * sizeof(float);
        QCOMPARE(static_cast<const uint8_t *>(L.wq.data), qkv);
        QCOMPARE(static_cast<const uint8_t *>(L.wk.data), qkv + 128 * row);
        QCOMPARE(static_cast<const uint8_t *>(L.wv.data), qkv + 192 * row);
        QCOMPARE(L.wq.n_rows, int64_t(128));
        QCOMPARE(L.wv.n_rows, int64_t(64));
        const auto * up = static_cast<const uint8_t *>(f.find_tensor("blk.1.ffn_up.weight")->data);
        QCOMPARE(static_cast<const uint8_t *>(L.ffn_gate.data), up);
        QCOMPARE(static_cast<const uint8_t *>(L.ffn_up.data), up + 256 * row);
        QVERIFY((*m)->weights().rope_long && (*m)->weights().rope_short);
        QVERIFY(!(*m)->weights().tied_output);
        // The KV cache keeps every layer full attention for now.
        QVERIFY((*m)->kv_shape().layers.empty());
    }

    void errorsNameWhatIsMissing_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<bool>("drop_eps");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown") << "rwkv7" << false << "model architecture 'rwkv7' is not supported";
        QTest::newRow("gemma4-without-window") << "gemma4" << false << "required key 'gemma4.attention.sliding_window' is missing";
        QTest::newRow("moe-without-experts") << "qwen3moe" << false << "qwen3moe needs experts, but expert_count is missing or 0";
        QTest::newRow("eps-required") << "qwen3" << true << "'qwen3.attention.layer_norm_rms_epsilon' is missing";
    }
    void errorsNameWhatIsMissing() {
        QFETCH(QString, arch);
        QFETCH(bool, drop_eps);
        QFETCH(QString, message);
        gguf::GgufWriter w;
        const std::string a = arch.toStdString();
        w.set_string("general.architecture", a);
        for (const char * key : {".embedding_length", ".block_count", ".feed_forward_length"}) w.set_uint32(a + key, 64);
        w.set_uint32(a + ".attention.head_count", 4);
        if (!drop_eps) w.set_float32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
        auto bytes = w.write_bytes([](size_t, uint64_t, std::span<uint8_t>) { return Status{}; });
        QVERIFY(bytes.ok());
        auto file = gguf::GgufFile::parse(*bytes, "x.gguf");
        QVERIFY(file.ok());
        auto hp = read_hparams(*file);
        QVERIFY(!hp.ok());
        qInfo("%s", hp.status().message().c_str());
        QVERIFY2(QString::fromStdString(hp.status().message()).contains(message), hp.status().message().c_str());
    }

    // qwen3moe: qwen3's attention, 8 experts of width 32, 2 used, softmax over all with the
    // chosen weights renormalized (llama.cpp's qwen3moe defaults; the file has no such keys).
    void qwen3moe() {
        auto f = open_tiny("tiny-qwen3moe-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->arch, ModelArch::qwen3moe);
        QVERIFY(hp->is_moe());
        QCOMPARE(hp->n_expert, 8u);
        QCOMPARE(hp->n_expert_used, 2u);
        QCOMPARE(hp->n_ff_exp, 32u);
        QCOMPARE(hp->n_ff_shexp, 0u);
        QCOMPARE(hp->expert_gating, ExpertGating::softmax);
        QVERIFY(hp->expert_weights_norm);
        QCOMPARE(hp->expert_weights_scale, 0.0f);
        QCOMPARE(hp->rope_mode, RopeMode::neox);
        const ModelFeatures ft = model_features(*hp);
        QVERIFY(ft.qk_norm && !ft.expert_biases && !ft.attn_sinks);
        QCOMPARE(ft.expert_act, ExpertActivation::swiglu);
    }

    // gpt-oss: every other layer slides from layer 0 (no pattern key), YaRN factor 32 on both
    // kinds with the kernel's own 1 + 0.1 ln 32 as the only magnitude, softmax over the
    // chosen experts' logits, no renormalization.
    void gptOss() {
        auto f = open_tiny("tiny-gpt-oss-f32");
        QVERIFY(f.ok());
        auto hp = read_hparams(*f);
        QVERIFY2(hp.ok(), hp.status().message().c_str());
        QCOMPARE(hp->arch, ModelArch::gpt_oss);
        QCOMPARE(hp->n_expert, 8u);
        QCOMPARE(hp->n_expert_used, 4u);
        QCOMPARE(hp->n_ff_exp, 64u);
        QCOMPARE(hp->expert_gating, ExpertGating::softmax_weight);
        QVERIFY(!hp->expert_weights_norm);
        QCOMPARE(sliding_of(*hp), (std::vector<uint8_t>{1, 0}));
        QCOMPARE(hp->window(0), 32u);
        QCOMPARE(hp->n_ctx_orig, 4096u);
        const ModelFeatures ft = model_features(*hp);
        QVERIFY(ft.qkv_biases && ft.attn_sinks && ft.expert_biases && ft.ffn_norm_named_post_attention);
        QCOMPARE(ft.expert_act, ExpertActivation::swiglu_oai);
        QCOMPARE(ft.kq_scale, 0.125f);
        for (const RopeParams * r : {&ft.rope_full, &ft.rope_sliding}) {
            QCOMPARE(r->mode, RopeMode::neox);
            QCOMPARE(r->freq_base, 150000.0f);
            QCOMPARE(r->freq_scale, 1.0f / 32.0f);
            QCOMPARE(r->ext_factor, 1.0f);
            QVERIFY(std::fabs(r->attn_factor - 1.0f) < 1e-6f);
        }
        QVERIFY(!keys_shift_by_rotation(*hp));
    }

    // Expert stacks are views of n_expert * rows rows; gpt-oss's biases, sinks, and its
    // post_attention_norm as the FFN's norm.
    void expertWeightsAreStacks() {
        CpuBackend backend({.n_threads = 1});
        auto m = Model::load(shared_path("models/tiny-2026/tiny-gpt-oss-MXFP4_MOE.gguf").toStdString(), backend);
        QVERIFY2(m.ok(), m.status().message().c_str());
        const gguf::GgufFile & f = (*m)->file();
        const LayerWeights & L = (*m)->weights().layers[1];
        QVERIFY(L.moe && L.attn_sinks && L.bq && L.bo && !L.attn_post_norm);
        QCOMPARE(L.attn_sinks->n_cols, int64_t(4));
        QCOMPARE(L.ffn_norm.data, static_cast<const void *>(f.find_tensor("blk.1.post_attention_norm.weight")->data));
        const ExpertWeights & e = L.moe->experts;
        QCOMPARE(e.n_expert, 8);
        QCOMPARE(e.act, ExpertActivation::swiglu_oai);
        QCOMPARE(e.gate.type, DType::MXFP4);
        QCOMPARE(e.gate.n_rows, int64_t(8 * 64));
        QCOMPARE(e.down.n_cols, int64_t(64));
        QCOMPARE(e.down.n_rows, int64_t(8 * 128));
        QCOMPARE(e.n_ff(), int64_t(64));
        const auto * down = static_cast<const uint8_t *>(f.find_tensor("blk.1.ffn_down_exps.weight")->data);
        QCOMPARE(static_cast<const uint8_t *>(e.rows_of(e.down, 3).data), down + 3 * 128 * e.down.row_bytes());
        QCOMPARE(e.down_bias.n_rows, int64_t(8));
        QCOMPARE(e.down_bias.n_cols, int64_t(128));
        QVERIFY(L.moe->router_bias && !L.moe->shexp_gate);
        QCOMPARE(L.moe->router.n_rows, int64_t(8));
        uint64_t expert_bytes = 0;
        for (const gguf::TensorInfo & t : f.tensors()) {
            if (t.name.find("_exps") != std::string::npos) expert_bytes += t.n_bytes;
        }
        QCOMPARE((*m)->weights().n_expert_bytes, expert_bytes);
    }

    // llama.cpp's checks of the expert keys, with the key and the values in the message.
    void expertKeysAreChecked_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<uint32_t>("n_expert");
        QTest::addColumn<uint32_t>("n_used");
        QTest::addColumn<int>("gating");  // -1: no key
        QTest::addColumn<QString>("message");
        QTest::newRow("no-experts") << "qwen3moe" << 0u << 0u << -1 << "expert_count is missing or 0";
        QTest::newRow("none-used") << "qwen3moe" << 8u << 0u << -1 << "expert_used_count 0 must be 1 to expert_count 8";
        QTest::newRow("more-used") << "qwen3moe" << 8u << 9u << -1 << "expert_used_count 9 must be 1 to expert_count 8";
        QTest::newRow("too-many") << "qwen3moe" << 513u << 8u << -1 << "expert_count 513 exceeds 512";
        QTest::newRow("sigmoid") << "qwen3moe" << 8u << 2u << 2 << "expert_gating_func 2 is not supported";
        QTest::newRow("dense-family") << "llama" << 8u << 2u << -1 << "llama files with experts (expert_count 8) are not supported";
        QTest::newRow("gpt-oss-width") << "gpt-oss" << 8u << 2u << -1 << "'gpt-oss.expert_feed_forward_length' is missing";
    }
    void expertKeysAreChecked() {
        QFETCH(QString, arch);
        QFETCH(uint32_t, n_expert);
        QFETCH(uint32_t, n_used);
        QFETCH(int, gating);
        QFETCH(QString, message);
        const std::string a = arch.toStdString();
        auto hp = hparams_of(a, [&](gguf::GgufWriter & w) {
            if (n_expert) w.set_uint32(a + ".expert_count", n_expert);
            if (n_used) w.set_uint32(a + ".expert_used_count", n_used);
            if (gating >= 0) w.set_uint32(a + ".expert_gating_func", uint32_t(gating));
            w.set_uint32(a + ".attention.sliding_window", 128);
        });
        QVERIFY(!hp.ok());
        qInfo("%s", hp.status().message().c_str());
        QVERIFY2(QString::fromStdString(hp.status().message()).contains(message), hp.status().message().c_str());
    }

    // The keys real files may carry: the expert width defaults to the dense width over the
    // used experts (llama.cpp's qwen3moe), gating and weight keys override the family's
    // defaults, a shared expert's width implies one shared expert.
    void expertKeyDefaultsAndOverrides() {
        auto defaults = hparams_of("qwen3moe", [](gguf::GgufWriter & w) {
            w.set_uint32("qwen3moe.expert_count", 16);
            w.set_uint32("qwen3moe.expert_used_count", 4);
        });
        QVERIFY2(defaults.ok(), defaults.status().message().c_str());
        QCOMPARE(defaults->n_ff_exp, 64u);  // 256 / 4
        QCOMPARE(defaults->n_expert_shared, 0u);
        auto set = hparams_of("qwen3moe", [](gguf::GgufWriter & w) {
            w.set_uint32("qwen3moe.expert_count", 16);
            w.set_uint32("qwen3moe.expert_used_count", 4);
            w.set_uint32("qwen3moe.expert_feed_forward_length", 48);
            w.set_uint32("qwen3moe.expert_shared_feed_forward_length", 96);
            w.set_uint32("qwen3moe.expert_gating_func", 3);
            w.set_bool("qwen3moe.expert_weights_norm", false);
            w.set_float32("qwen3moe.expert_weights_scale", 2.5f);
        });
        QVERIFY2(set.ok(), set.status().message().c_str());
        QCOMPARE(set->n_ff_exp, 48u);
        QCOMPARE(set->n_ff_shexp, 96u);
        QCOMPARE(set->n_expert_shared, 1u);
        const RouterParams r = set->router();
        QCOMPARE(r.gating, ExpertGating::softmax_weight);
        QVERIFY(!r.norm_weights);
        QCOMPARE(r.weights_scale, 2.5f);
        QCOMPARE(r.n_used, 4u);
    }

    // Qwen3.5's hybrid: the ssm keys, every fourth layer attention, the others Gated DeltaNet
    // with a fixed-size state; qwen35moe adds the experts and a shared expert.
    void qwen35KeysAndLayerKinds() {
        CpuBackend backend({.n_threads = 1});
        for (const char * name : {"tiny-qwen35-f32", "tiny-qwen35moe-f32"}) {
            auto m = Model::load(shared_path(QString("models/tiny-2026/%1.gguf").arg(name)).toStdString(), backend);
            QVERIFY2(m.ok(), m.status().message().c_str());
            const ModelHParams & hp = (*m)->hparams();
            QCOMPARE(hp.full_attention_interval, 4u);
            QCOMPARE(hp.ssm_conv_kernel, 4u);
            QCOMPARE(hp.ssm_state_size, 32u);
            QCOMPARE(hp.ssm_group_count, 2u);
            QCOMPARE(hp.ssm_time_step_rank, 4u);
            QCOMPARE(hp.delta_net_channels(), 256u);
            QCOMPARE(hp.n_rot, 16u);
            QCOMPARE(hp.rope_mode, RopeMode::neox);
            const std::vector<KvLayerSpec> kinds = kv_layer_specs(hp);
            QCOMPARE(kinds.size(), size_t(4));
            for (uint32_t il = 0; il < 4; ++il) {
                QCOMPARE(kinds[il].kind, il == 3 ? KvLayerKind::full : KvLayerKind::recurrent);
                QCOMPARE((*m)->weights().layers[il].delta_net.has_value(), il != 3);
            }
            QCOMPARE(kinds[0].state_bytes, uint64_t(4 * (3 * 256 + 4 * 32 * 32)));
            QCOMPARE(hp.is_moe(), QString(name).contains("moe"));
            if (hp.is_moe()) QCOMPARE(hp.n_ff_shexp, 64u);
        }
    }
};

QTEST_GUILESS_MAIN(TestModelHParams)
#include "test_model_hparams.moc"
