#include "model_features.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lr {
namespace {

// ggml_rope_yarn_corr_dim: the dimension whose wavelength fits n_rot_turns turns in the
// original context.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot_turns, float base) {
    return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot_turns * 2.0f * std::numbers::pi_v<float>)) / (2.0f * std::log(base));
}

// HF's get_mscale, as llama.cpp's context computes it.
float yarn_mscale(float scale, float mscale) { return scale <= 1.0f ? 1.0f : 0.1f * mscale * std::log(scale) + 1.0f; }

// The rope of one kind of layer, with the YaRN parameters llama.cpp's context derives
// (llama_context's constructor: ext_factor 1 for yarn; the magnitude from the factor, the
// log multiplier and rope.scaling.attn_factor; the kernel's own 1 + 0.1 ln(factor) cancelled).
RopeParams layer_rope(const ModelHParams & hp, float freq_base, float freq_scale, uint32_t n_rot, uint32_t head_dim) {
    RopeParams r{
        .mode = hp.rope_mode,
        .n_rot = int32_t(n_rot),
        .head_dim = int32_t(head_dim),
        .freq_base = freq_base,
        .freq_scale = freq_scale,
    };
    float attn_factor = 1.0f;
    if (hp.rope_scaling == RopeScaling::yarn) {
        r.ext_factor = 1.0f;
        const float factor = 1.0f / hp.rope_freq_scale;
        attn_factor = hp.yarn_log_mul != 0.0f ? yarn_mscale(factor, 1.0f) / yarn_mscale(factor, hp.yarn_log_mul)
                                              : yarn_mscale(factor, 1.0f);
        attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
        const float start = std::floor(yarn_corr_dim(r.n_rot, int(hp.n_ctx_orig), hp.yarn_beta_fast, freq_base));
        const float end = std::ceil(yarn_corr_dim(r.n_rot, int(hp.n_ctx_orig), hp.yarn_beta_slow, freq_base));
        r.corr_low = std::max(0.0f, start);
        r.corr_high = std::min(float(r.n_rot - 1), end);
    }
    r.attn_factor = attn_factor * hp.rope_attn_factor;
    return r;
}

// What Gemma 3 and 4 share: q/k norms, post-norms, scaled embeddings, GELU, q.k unscaled.
void set_gemma_features(const ModelHParams & hp, ModelFeatures & f) {
    f.qk_norm = true;
    f.post_norms = true;
    f.embd_scale = std::sqrt(float(hp.n_embd));
    f.ffn_act = FfnActivation::gelu_tanh;
    f.kq_scale = 1.0f;
}

}  // namespace

ModelFeatures model_features(const ModelHParams & hp) {
    ModelFeatures f;
    const float inv_sqrt_head = 1.0f / std::sqrt(float(hp.head_dim));
    f.kq_scale = hp.attention_scale != 0.0f ? hp.attention_scale : inv_sqrt_head;
    f.rope_full = layer_rope(hp, hp.rope_freq_base, hp.rope_freq_scale, hp.n_rot, hp.head_dim);
    f.rope_sliding = layer_rope(hp, hp.rope_freq_base_swa, hp.rope_freq_scale_swa, hp.n_rot_swa ? hp.n_rot_swa : hp.n_rot,
                                hp.head_dim_swa ? hp.head_dim_swa : hp.head_dim);
    f.final_softcap = hp.final_logit_softcap;
    f.attn_temp_scale = hp.attn_temp_scale;
    f.attn_temp_floor = hp.attn_temp_floor;
    switch (hp.arch) {
        case ModelArch::llama:
        case ModelArch::mistral3: break;
        case ModelArch::qwen2: f.qkv_biases = true; break;
        case ModelArch::qwen3:
        case ModelArch::qwen3moe: f.qk_norm = true; break;
        case ModelArch::phi3:
            // q scaled before attention (where llama.cpp rounds it to f16), q.k unscaled.
            f.q_scale = inv_sqrt_head;
            f.kq_scale = 1.0f;
            f.fused_gate_up = true;
            f.long_short_rope = true;
            break;
        case ModelArch::gemma3:
            set_gemma_features(hp, f);
            f.q_scale = hp.attention_scale;
            break;
        case ModelArch::gemma4:
            set_gemma_features(hp, f);  // with q.k at scale 1 (hp.attention_scale), q as it is
            f.v_optional = true;
            f.v_norm = true;
            f.layer_output_scale = true;
            f.rope_freqs_full_only = true;
            break;
        case ModelArch::qwen35:
        case ModelArch::qwen35moe:
            f.qk_norm = true;
            f.attn_output_gate = true;
            f.ffn_norm_named_post_attention = true;
            break;
        case ModelArch::gpt_oss:
            f.qkv_biases = true;
            f.attn_sinks = true;
            f.expert_biases = true;
            f.ffn_norm_named_post_attention = true;
            f.expert_act = ExpertActivation::swiglu_oai;
            break;
    }
    return f;
}

bool keys_shift_by_rotation(const ModelHParams & hp) {
    const ModelFeatures f = model_features(hp);
    const bool own_sliding_rope = hp.n_swa > 0 &&
                                  (hp.rope_freq_base_swa != hp.rope_freq_base || hp.rope_freq_scale_swa != hp.rope_freq_scale);
    return hp.rope_scaling != RopeScaling::yarn && !f.long_short_rope && !own_sliding_rope;
}

float attention_temperature(const ModelFeatures & f, int32_t pos) {
    // llama.cpp's llm_graph_input_attn_temp, in its float and double steps.
    const float period = std::floor((float(pos) + 0.0f) / float(f.attn_temp_floor));
    return float(std::log(double(period) + 1.0) * double(f.attn_temp_scale) + 1.0);
}

}  // namespace lr
