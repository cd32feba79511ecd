#include "model_weights.h"

#include <array>
#include <cstring>

#include "engine/quant/quant.h"

namespace lr {
namespace {

// "[4096, 128]", "[2880, 2880, 32]": dimensions up to the last one that is not 1 (at least two).
std::string shape_text(std::array<uint64_t, 4> ne) {
    size_t n_dims = 4;
    while (n_dims > 2 && ne[n_dims - 1] == 1) --n_dims;
    std::string s = "[";
    for (size_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

class WeightLoader {
public:
    WeightLoader(const gguf::GgufFile & file, Backend & backend, ModelWeights & out) : file_(file), backend_(backend), out_(out) {}

    // A tensor of shape ne0 x ne1 (ne1 = 1 for vectors).
    Result<WeightView> get(const std::string & name, uint64_t ne0, uint64_t ne1) { return get_stack(name, ne0, ne1, 1, false); }

    // A stack of n matrices ne0 x ne1 (GGUF ne = [ne0, ne1, n]: the experts of a layer), as
    // one view of n * ne1 rows. per_expert: counted as expert bytes (also the expert biases,
    // one row per expert).
    Result<WeightView> get_stack(const std::string & name, uint64_t ne0, uint64_t ne1, uint64_t n, bool per_expert) {
        const gguf::TensorInfo * t = file_.find_tensor(name);
        if (!t) return error(StatusCode::corrupt_data, file_.path() + ": tensor '" + name + "' is missing");
        if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != n || t->ne[3] != 1) {
            return error(StatusCode::corrupt_data, file_.path() + ": tensor '" + name + "' has shape " +
                                                       shape_text({t->ne[0], t->ne[1], t->ne[2], t->ne[3]}) + ", expected " +
                                                       shape_text({ne0, ne1, n, 1}));
        }
        if (!quant::can_dequantize(t->type)) {
            return error(StatusCode::unsupported,
                         file_.path() + ": tensor '" + name + "' has type " + std::string(dtype_name(t->type)) +
                             ", which Longread does not support (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                             "Q2_K..Q6_K, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M, TQ2_0, MXFP4)");
        }
        if (ne1 == 1 && t->type != DType::F32) {
            return error(StatusCode::unsupported, file_.path() + ": vector tensor '" + name + "' must be F32");
        }
        WeightView host{t->type, static_cast<int64_t>(ne0), static_cast<int64_t>(ne1 * n), t->data};
        out_.n_params += t->n_elements();
        out_.n_bytes += t->n_bytes;
        if (per_expert) out_.n_expert_bytes += t->n_bytes;
        return backend_.prepare_weight(host);
    }

    // A one-value F32 tensor read on the host (a scale the graph passes as a number).
    Result<std::optional<float>> get_scalar(const std::string & name) {
        const gguf::TensorInfo * t = file_.find_tensor(name);
        if (!t) return std::optional<float>{};
        if (t->type != DType::F32 || t->n_elements() != 1) {
            return error(StatusCode::corrupt_data, file_.path() + ": tensor '" + name + "' must be one F32 value");
        }
        out_.n_params += 1;
        out_.n_bytes += t->n_bytes;
        float value = 0.0f;
        std::memcpy(&value, t->data, sizeof value);
        return std::optional<float>(value);
    }

    Result<std::optional<WeightView>> get_optional(const std::string & name, uint64_t ne0, uint64_t ne1) {
        if (!file_.find_tensor(name)) return std::optional<WeightView>{};
        LR_ASSIGN_OR_RETURN(WeightView w, get(name, ne0, ne1));
        return std::optional<WeightView>(w);
    }

private:
    const gguf::GgufFile & file_;
    Backend & backend_;
    ModelWeights & out_;
};

}  // namespace

WeightView weight_rows(const WeightView & w, int64_t r0, int64_t r1) {
    return {.type = w.type,
            .n_cols = w.n_cols,
            .n_rows = r1 - r0,
            .data = static_cast<const uint8_t *>(w.data) + size_t(r0) * w.row_bytes()};
}

namespace {

// q, k and v: three tensors, or the rows of a fused attn_qkv. A layer that reads an earlier
// layer's KV has q only; with v_optional a missing attn_v leaves wv empty.
Status load_qkv(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp, const ModelFeatures & f, uint32_t il,
                const std::string & p, LayerWeights & L) {
    const uint64_t n_q = hp.n_embd_q_of(il) * (f.attn_output_gate ? 2 : 1), n_kv = hp.n_embd_kv_of(il);
    if (file.find_tensor(p + "attn_qkv.weight")) {
        LR_ASSIGN_OR_RETURN(const WeightView qkv, load.get(p + "attn_qkv.weight", hp.n_embd, n_q + 2 * n_kv));
        L.wq = weight_rows(qkv, 0, int64_t(n_q));
        L.wk = weight_rows(qkv, int64_t(n_q), int64_t(n_q + n_kv));
        L.wv = weight_rows(qkv, int64_t(n_q + n_kv), int64_t(n_q + 2 * n_kv));
        return {};
    }
    LR_ASSIGN_OR_RETURN(L.wq, load.get(p + "attn_q.weight", hp.n_embd, n_q));
    if (!hp.has_kv(il)) return {};
    LR_ASSIGN_OR_RETURN(L.wk, load.get(p + "attn_k.weight", hp.n_embd, n_kv));
    if (f.v_optional) {
        LR_ASSIGN_OR_RETURN(std::optional<WeightView> wv, load.get_optional(p + "attn_v.weight", hp.n_embd, n_kv));
        if (wv) L.wv = *wv;
        return {};
    }
    LR_ASSIGN_OR_RETURN(L.wv, load.get(p + "attn_v.weight", hp.n_embd, n_kv));
    return {};
}

// gate and up: two tensors, or the halves of a fused ffn_up.
Status load_gate_up(WeightLoader & load, uint32_t n_embd, uint32_t n_ff, const ModelFeatures & f, const std::string & p, LayerWeights & L) {
    if (f.fused_gate_up) {
        LR_ASSIGN_OR_RETURN(const WeightView gate_up, load.get(p + "ffn_up.weight", n_embd, 2 * uint64_t(n_ff)));
        L.ffn_gate = weight_rows(gate_up, 0, n_ff);
        L.ffn_up = weight_rows(gate_up, n_ff, 2 * int64_t(n_ff));
        return {};
    }
    LR_ASSIGN_OR_RETURN(L.ffn_gate, load.get(p + "ffn_gate.weight", n_embd, n_ff));
    LR_ASSIGN_OR_RETURN(L.ffn_up, load.get(p + "ffn_up.weight", n_embd, n_ff));
    return {};
}

// Gemma 4's per-layer inputs: the model's tensors, per_layer_token_embd seen as one row per
// (token, layer), which its type allows when a layer's part of a row is whole blocks.
Result<PerLayerInputWeights> load_per_layer_inputs(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp) {
    const uint64_t width = hp.n_embd_per_layer, n_layer = hp.n_layer;
    PerLayerInputWeights w;
    LR_ASSIGN_OR_RETURN(const WeightView embd, load.get("per_layer_token_embd.weight", width * n_layer, hp.n_vocab));
    w.token_embd = {.type = embd.type, .n_cols = int64_t(width), .n_rows = int64_t(hp.n_vocab * n_layer), .data = embd.data};
    if (w.token_embd.row_bytes() * n_layer != embd.row_bytes()) {
        return error(StatusCode::unsupported, file.path() + ": per_layer_token_embd in " + std::string(dtype_name(embd.type)) +
                                                  " does not split into layers of " + std::to_string(width) + " values");
    }
    LR_ASSIGN_OR_RETURN(w.model_proj, load.get("per_layer_model_proj.weight", hp.n_embd, width * n_layer));
    LR_ASSIGN_OR_RETURN(w.proj_norm, load.get("per_layer_proj_norm.weight", width, 1));
    return w;
}

// One layer's part of them.
Result<PerLayerInputLayerWeights> load_per_layer_input(WeightLoader & load, const ModelHParams & hp, const std::string & p) {
    PerLayerInputLayerWeights w;
    LR_ASSIGN_OR_RETURN(w.gate, load.get(p + "inp_gate.weight", hp.n_embd, hp.n_embd_per_layer));
    LR_ASSIGN_OR_RETURN(w.proj, load.get(p + "proj.weight", hp.n_embd_per_layer, hp.n_embd));
    LR_ASSIGN_OR_RETURN(w.post_norm, load.get(p + "post_norm.weight", hp.n_embd, 1));
    return w;
}

// A tensor the family requires (`required`), or may carry.
Result<std::optional<WeightView>> get_if(WeightLoader & load, bool required, const std::string & name, uint64_t ne0) {
    if (required) {
        LR_ASSIGN_OR_RETURN(WeightView w, load.get(name, ne0, 1));
        return std::optional<WeightView>(w);
    }
    return load.get_optional(name, ne0, 1);
}

// An F32 matrix [n_expert][n] of per-expert biases, or absent.
Result<WeightView> expert_bias(WeightLoader & load, const gguf::GgufFile & file, const std::string & name, uint64_t n, uint64_t n_expert) {
    LR_ASSIGN_OR_RETURN(WeightView b, load.get_stack(name, n, n_expert, 1, true));
    if (b.type != DType::F32) return error(StatusCode::unsupported, file.path() + ": expert bias '" + name + "' must be F32");
    return b;
}

// The router, the experts and the shared expert of layer prefix p.
Result<MoeWeights> load_moe(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp, const ModelFeatures & f,
                            const std::string & p) {
    MoeWeights m;
    const uint64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
    LR_ASSIGN_OR_RETURN(m.router, load.get(p + "ffn_gate_inp.weight", n_embd, n_expert));
    LR_ASSIGN_OR_RETURN(m.router_bias, get_if(load, f.expert_biases, p + "ffn_gate_inp.bias", n_expert));
    ExpertWeights & e = m.experts;
    e.n_expert = int32_t(n_expert);
    e.act = f.expert_act;
    LR_ASSIGN_OR_RETURN(e.gate, load.get_stack(p + "ffn_gate_exps.weight", n_embd, n_ff, n_expert, true));
    LR_ASSIGN_OR_RETURN(e.up, load.get_stack(p + "ffn_up_exps.weight", n_embd, n_ff, n_expert, true));
    LR_ASSIGN_OR_RETURN(e.down, load.get_stack(p + "ffn_down_exps.weight", n_ff, n_embd, n_expert, true));
    if (f.expert_biases) {
        LR_ASSIGN_OR_RETURN(e.gate_bias, expert_bias(load, file, p + "ffn_gate_exps.bias", n_ff, n_expert));
        LR_ASSIGN_OR_RETURN(e.up_bias, expert_bias(load, file, p + "ffn_up_exps.bias", n_ff, n_expert));
        LR_ASSIGN_OR_RETURN(e.down_bias, expert_bias(load, file, p + "ffn_down_exps.bias", n_embd, n_expert));
    }
    if (hp.n_ff_shexp > 0) {
        const uint64_t n_sh = hp.n_ff_shexp;
        LR_ASSIGN_OR_RETURN(m.shexp_gate, load.get(p + "ffn_gate_shexp.weight", n_embd, n_sh));
        LR_ASSIGN_OR_RETURN(m.shexp_up, load.get(p + "ffn_up_shexp.weight", n_embd, n_sh));
        LR_ASSIGN_OR_RETURN(m.shexp_down, load.get(p + "ffn_down_shexp.weight", n_sh, n_embd));
        LR_ASSIGN_OR_RETURN(m.shexp_gate_inp, load.get_optional(p + "ffn_gate_inp_shexp.weight", n_embd, 1));
    }
    return m;
}

// A Gated DeltaNet layer's mixer.
Result<DeltaNetWeights> load_delta_net(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp, const std::string & p) {
    DeltaNetWeights d;
    const uint64_t n_embd = hp.n_embd, channels = hp.delta_net_channels(), inner = hp.ssm_inner_size, n_v = hp.ssm_time_step_rank;
    LR_ASSIGN_OR_RETURN(d.qkv, load.get(p + "attn_qkv.weight", n_embd, channels));
    LR_ASSIGN_OR_RETURN(d.gate, load.get(p + "attn_gate.weight", n_embd, inner));
    LR_ASSIGN_OR_RETURN(d.conv, load.get(p + "ssm_conv1d.weight", hp.ssm_conv_kernel, channels));
    if (d.conv.type != DType::F32) return error(StatusCode::unsupported, file.path() + ": tensor '" + p + "ssm_conv1d.weight' must be F32");
    LR_ASSIGN_OR_RETURN(d.beta, load.get(p + "ssm_beta.weight", n_embd, n_v));
    LR_ASSIGN_OR_RETURN(d.alpha, load.get(p + "ssm_alpha.weight", n_embd, n_v));
    LR_ASSIGN_OR_RETURN(d.dt_bias, load.get(p + "ssm_dt.bias", n_v, 1));
    LR_ASSIGN_OR_RETURN(d.a, load.get(p + "ssm_a", n_v, 1));  // no .weight in its name
    LR_ASSIGN_OR_RETURN(d.norm, load.get(p + "ssm_norm.weight", hp.ssm_state_size, 1));
    LR_ASSIGN_OR_RETURN(d.out, load.get(p + "ssm_out.weight", inner, n_embd));
    return d;
}

// The attention of layer il (prefix p).
Status load_attention(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp, const ModelFeatures & f, uint32_t il,
                      const std::string & p, LayerWeights & L) {
    const bool has_kv = hp.has_kv(il);
    LR_RETURN_IF_ERROR(load_qkv(load, file, hp, f, il, p, L));
    LR_ASSIGN_OR_RETURN(L.bq, get_if(load, f.qkv_biases, p + "attn_q.bias", hp.n_embd_q_of(il)));
    LR_ASSIGN_OR_RETURN(L.bk, get_if(load, f.qkv_biases && has_kv, p + "attn_k.bias", hp.n_embd_kv_of(il)));
    LR_ASSIGN_OR_RETURN(L.bv, get_if(load, f.qkv_biases && has_kv, p + "attn_v.bias", hp.n_embd_kv_of(il)));
    LR_ASSIGN_OR_RETURN(L.q_norm, get_if(load, f.qk_norm, p + "attn_q_norm.weight", hp.head_dim_of(il)));
    LR_ASSIGN_OR_RETURN(L.k_norm, get_if(load, f.qk_norm && has_kv, p + "attn_k_norm.weight", hp.head_dim_of(il)));
    LR_ASSIGN_OR_RETURN(L.wo, load.get(p + "attn_output.weight", hp.n_embd_q_of(il), hp.n_embd));
    LR_ASSIGN_OR_RETURN(L.bo, load.get_optional(p + "attn_output.bias", hp.n_embd, 1));
    // gpt-oss's and qwen35's post_attention_norm is their FFN's input norm (below), not a gemma post-norm.
    if (!f.ffn_norm_named_post_attention) {
        LR_ASSIGN_OR_RETURN(L.attn_post_norm, get_if(load, f.post_norms, p + "post_attention_norm.weight", hp.n_embd));
    }
    LR_ASSIGN_OR_RETURN(L.attn_sinks, get_if(load, f.attn_sinks, p + "attn_sinks.weight", hp.n_head));
    return {};
}

Status load_layer(WeightLoader & load, const gguf::GgufFile & file, const ModelHParams & hp, const ModelFeatures & f, uint32_t il,
                  LayerWeights & L) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LR_ASSIGN_OR_RETURN(L.attn_norm, load.get(p + "attn_norm.weight", hp.n_embd, 1));
    if (hp.is_recurrent(il)) {
        LR_ASSIGN_OR_RETURN(L.delta_net, load_delta_net(load, file, hp, p));
    } else {
        LR_RETURN_IF_ERROR(load_attention(load, file, hp, f, il, p, L));
    }
    const char * ffn_norm = f.ffn_norm_named_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight";
    LR_ASSIGN_OR_RETURN(L.ffn_norm, load.get(p + ffn_norm, hp.n_embd, 1));
    if (hp.is_moe()) {
        LR_ASSIGN_OR_RETURN(L.moe, load_moe(load, file, hp, f, p));
    } else {
        LR_RETURN_IF_ERROR(load_gate_up(load, hp.n_embd, hp.n_ff_of(il), f, p, L));
        LR_ASSIGN_OR_RETURN(L.ffn_down, load.get(p + "ffn_down.weight", hp.n_ff_of(il), hp.n_embd));
    }
    LR_ASSIGN_OR_RETURN(L.ffn_post_norm, get_if(load, f.post_norms, p + "post_ffw_norm.weight", hp.n_embd));
    if (hp.n_embd_per_layer > 0) {
        LR_ASSIGN_OR_RETURN(L.per_layer_input, load_per_layer_input(load, hp, p));
    }
    if (f.layer_output_scale) {
        LR_ASSIGN_OR_RETURN(std::optional<float> scale, load.get_scalar(p + "layer_output_scale.weight"));
        L.output_scale = scale.value_or(1.0f);
    }
    if (!f.qk_norm && (L.q_norm || L.k_norm)) {
        return error(StatusCode::unsupported,
                     file.path() + ": layer " + std::to_string(il) + " has q/k norms, which " + hp.arch_name + " models do not use");
    }
    return {};
}

}  // namespace

Result<ModelWeights> load_weights(const gguf::GgufFile & file, const ModelHParams & hp, Backend & backend) {
    ModelWeights w;
    WeightLoader load(file, backend, w);
    const ModelFeatures f = model_features(hp);
    LR_ASSIGN_OR_RETURN(w.token_embd, load.get("token_embd.weight", hp.n_embd, hp.n_vocab));
    LR_ASSIGN_OR_RETURN(w.output_norm, load.get("output_norm.weight", hp.n_embd, 1));
    LR_ASSIGN_OR_RETURN(std::optional<WeightView> output, load.get_optional("output.weight", hp.n_embd, hp.n_vocab));
    w.tied_output = !output.has_value();
    w.output = output ? *output : w.token_embd;
    LR_ASSIGN_OR_RETURN(w.rope_freqs, load.get_optional("rope_freqs.weight", hp.n_rot / 2, 1));
    if (f.long_short_rope) {
        LR_ASSIGN_OR_RETURN(w.rope_long, load.get_optional("rope_factors_long.weight", hp.n_rot / 2, 1));
        LR_ASSIGN_OR_RETURN(w.rope_short, load.get_optional("rope_factors_short.weight", hp.n_rot / 2, 1));
    }

    if (hp.n_embd_per_layer > 0) {
        LR_ASSIGN_OR_RETURN(w.per_layer_inputs, load_per_layer_inputs(load, file, hp));
    }

    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) LR_RETURN_IF_ERROR(load_layer(load, file, hp, f, il, w.layers[il]));
    return w;
}

}  // namespace lr
