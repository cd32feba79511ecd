#pragma once
// The weights of a model as backend views, checked against the hyper-parameters: a
// missing tensor or a wrong shape is an error naming the tensor. Fused tensors (phi3's
// attn_qkv and [gate | up] ffn_up) are views of row ranges of the one tensor, so every
// attention layer has wq, wk, wv, and every dense FFN ffn_gate and ffn_up, whatever the
// file's layout. A recurrent layer (Gated DeltaNet) has its own mixer instead of attention.

#include <array>
#include <optional>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_features.h"
#include "engine/model/model_hparams.h"
#include "engine/model/per_layer_inputs.h"

namespace lr {

// A mixture-of-experts FFN: the router, the routed experts, and an optional shared expert
// that every token runs (its output gated by sigmoid(shexp_gate_inp . x) when that is present).
struct MoeWeights {
    WeightView router;                         // [n_expert][n_embd] ffn_gate_inp
    std::optional<WeightView> router_bias;     // [n_expert] (gpt-oss)
    ExpertWeights experts;                     // ffn_{gate,up,down}_exps (+ .bias)
    std::optional<WeightView> shexp_gate;      // [n_ff_shexp][n_embd]
    std::optional<WeightView> shexp_up;        // [n_ff_shexp][n_embd]
    std::optional<WeightView> shexp_down;      // [n_embd][n_ff_shexp]
    std::optional<WeightView> shexp_gate_inp;  // [n_embd] the shared expert's gate
};

// A Gated DeltaNet layer's mixer (qwen35), in place of attention's projections.
struct DeltaNetWeights {
    WeightView qkv;      // [channels][n_embd] attn_qkv: [q | k | v] of every head
    WeightView gate;     // [inner][n_embd] attn_gate: z, the output's gate
    WeightView conv;     // [channels][conv_kernel] ssm_conv1d (F32)
    WeightView beta;     // [n_v_heads][n_embd] ssm_beta
    WeightView alpha;    // [n_v_heads][n_embd] ssm_alpha
    WeightView dt_bias;  // [n_v_heads] ssm_dt.bias
    WeightView a;        // [n_v_heads] ssm_a: -exp(A_log), the decay rate
    WeightView norm;     // [head_v_dim] ssm_norm: RMS norm of each output head
    WeightView out;      // [n_embd][inner] ssm_out

    // Every tensor (byte counts).
    std::array<const WeightView *, 9> all() const { return {&qkv, &gate, &conv, &beta, &alpha, &dt_bias, &a, &norm, &out}; }
};

// Widths are the layer's own (ModelHParams::n_embd_q_of, n_embd_kv_of, n_ff_of).
struct LayerWeights {
    WeightView attn_norm;                                      // [n_embd]
    std::optional<DeltaNetWeights> delta_net;                  // a recurrent layer's mixer; then no q/k/v/o
    WeightView wq, wk, wv;                                     // [n_embd_q | n_embd_kv][n_embd] (rows of attn_qkv when fused;
                                                               // with an output gate wq is [2 n_embd_q]: [q_h | gate_h] per head);
                                                               // wk, wv empty in a layer reading an earlier layer's KV,
                                                               // wv empty where V is the raw K (gemma4)
    std::optional<WeightView> bq, bk, bv;                      // [n_embd_q | n_embd_kv] biases (qwen2)
    std::optional<WeightView> q_norm;                          // [head_dim] per-head RMS norm of q (qwen3, gemma3)
    std::optional<WeightView> k_norm;                          // [head_dim]
    WeightView wo;                                             // [n_embd][n_embd_q]
    std::optional<WeightView> bo;                              // [n_embd]
    std::optional<WeightView> attn_post_norm;                  // [n_embd] on the attention output (gemma3)
    std::optional<WeightView> attn_sinks;                      // [n_head] a logit per head joining the softmax (gpt-oss)
    WeightView ffn_norm;                                       // [n_embd] (gpt-oss: post_attention_norm)
    WeightView ffn_gate, ffn_up;                               // [n_ff][n_embd] (halves of ffn_up when fused); empty with moe
    WeightView ffn_down;                                       // [n_embd][n_ff]; empty with moe
    std::optional<MoeWeights> moe;                             // the FFN of a mixture-of-experts layer
    std::optional<WeightView> ffn_post_norm;                   // [n_embd] on the FFN output (gemma3)
    std::optional<PerLayerInputLayerWeights> per_layer_input;  // gemma4
    float output_scale = 1.0f;                                 // layer_output_scale (gemma4)
};

struct ModelWeights {
    WeightView token_embd;   // [n_vocab][n_embd]
    WeightView output_norm;  // [n_embd]
    WeightView output;       // [n_vocab][n_embd]; token_embd when tied
    bool tied_output = false;
    std::optional<WeightView> rope_freqs;                  // [n_rot / 2] (llama 3)
    std::optional<WeightView> rope_long;                   // [n_rot / 2] phi3's LongRoPE factors past the original context
    std::optional<WeightView> rope_short;                  // [n_rot / 2] and within it
    std::optional<PerLayerInputWeights> per_layer_inputs;  // gemma4
    std::vector<LayerWeights> layers;
    uint64_t n_params = 0;
    uint64_t n_bytes = 0;
    uint64_t n_expert_bytes = 0;  // of n_bytes: the routed experts (ffn_*_exps and their biases)
};

// Resolves every tensor of the model in `file` and prepares it for `backend`.
Result<ModelWeights> load_weights(const gguf::GgufFile & file, const ModelHParams & hp, Backend & backend);

// Rows [r0, r1) of a matrix: a view into the same memory.
WeightView weight_rows(const WeightView & w, int64_t r0, int64_t r1);

}  // namespace lr
