#pragma once
// What sets one family's forward pass apart from another's, derived once from the
// hyper-parameters: the graph (llama_graph.cpp) and the weight loader read these flags
// and values, never the architecture's name.
//
//   llama     SwiGLU, normal rope (rope_freqs: llama 3 scaling)
//   qwen2     + q/k/v biases, neox rope
//   qwen3     + per-head q/k RMS norm before rope, neox rope
//   mistral3  normal rope with YaRN, Llama 4 attention temperature on q
//   phi3      fused QKV and [gate | up], LongRoPE (long/short factors, attn_factor), q
//             scaled by 1/sqrt(head_dim) before attention
//   gemma3    embeddings x sqrt(n_embd), q/k norms, post-attention and post-FFN norms,
//             GELU-tanh, q scaled before attention, sliding layers with their own rope
//   gemma4    gemma3's norms and GELU; V RMS-normed too, and the raw K where a layer has no
//             attn_v; scale 1 on q.k; sliding layers with their own head size and rope,
//             rope_freqs on the global layers only; KV shared by the last layers; per-layer
//             inputs and a scale on each layer's output
//   qwen3moe  qwen3's attention; a mixture of SwiGLU experts for the FFN
//   gpt-oss   q/k/v/o biases, attention sinks, YaRN on every layer, every other layer
//             sliding; experts with biases, a router with a bias, the clamped SwiGLU
//   qwen35    three Gated DeltaNet layers to one attention layer (ModelHParams::
//             is_recurrent, delta_net_block.h); attention with q/k norms, an output gate
//             and neox rope over the first n_rot dimensions; the FFN's norm stored as
//             post_attention_norm. qwen35moe: the same with qwen3moe's experts and a
//             shared expert
//
// Whether the FFN is a mixture of experts, and how its router chooses, is in the
// hyper-parameters (ModelHParams::is_moe, router()).

#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/model/model_hparams.h"

namespace lr {

enum class FfnActivation { silu, gelu_tanh };  // the gate's activation, times up

struct ModelFeatures {
    // Tensors
    bool qk_norm = false;          // attn_q_norm / attn_k_norm [head_dim]: RMS norm of each head before rope
    bool post_norms = false;       // post_attention_norm / post_ffw_norm: on each block's output, before its residual add
    bool qkv_biases = false;       // attn_q/k/v.bias required (qwen2; optional elsewhere)
    bool fused_gate_up = false;    // ffn_up holds [gate | up] rows, no ffn_gate (phi3)
    bool long_short_rope = false;  // rope_factors_long / _short (phi3's LongRoPE), chosen by the context size
    bool attn_sinks = false;       // attn_sinks [n_head]: a learned logit per head joins each softmax (gpt-oss)
    bool expert_biases = false;    // ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias (gpt-oss)
    // attn_q holds [q_h | gate_h] per head; the attention output is multiplied by
    // sigmoid(gate) before attn_output (qwen35).
    bool attn_output_gate = false;
    // The FFN's input norm is stored as post_attention_norm, not ffn_norm (gpt-oss, qwen35).
    bool ffn_norm_named_post_attention = false;
    bool v_optional = false;          // a layer without attn_v uses its raw K projection as V (gemma4)
    bool layer_output_scale = false;  // layer_output_scale [1]: each layer's output times it (gemma4)

    // Computation
    float embd_scale = 0.0f;  // token embeddings times this (0: as they are) [gemma: sqrt(n_embd)]
    FfnActivation ffn_act = FfnActivation::silu;
    ExpertActivation expert_act = ExpertActivation::swiglu;
    float q_scale = 1.0f;          // q times this after rope, before attention (rounded there to f16 as llama.cpp)
    float kq_scale = 1.0f;         // AttentionParams::scale
    float attn_temp_scale = 0.0f;  // q times 1 + s ln(floor(pos / floor) + 1) after rope (0: off)
    uint32_t attn_temp_floor = 0;
    float final_softcap = 0.0f;  // logits = cap tanh(logits / cap) (0: off)
    bool v_norm = false;         // each head of V RMS-normed without a weight (gemma4)

    // Rope of the full-attention and of the sliding layers (freq_factors left for the
    // graph to point at the weights).
    RopeParams rope_full;
    RopeParams rope_sliding;
    bool rope_freqs_full_only = false;  // rope_freqs divides the global layers' frequencies only (gemma4)
};

// The features of the model `hp` describes.
ModelFeatures model_features(const ModelHParams & hp);

// Whether one rotation per pair at freq_scale / rope_freqs (the KV cache's rope shift,
// kvcache/rope_shift.h) moves this model's cached keys exactly: not with YaRN's blended
// frequencies, phi3's long/short factors, or sliding layers with a rope of their own.
bool keys_shift_by_rotation(const ModelHParams & hp);

// The factor llama.cpp multiplies q by for the attention temperature (one token).
float attention_temperature(const ModelFeatures & f, int32_t pos);

}  // namespace lr
