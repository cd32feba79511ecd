#pragma once
// The mixer of a Gated DeltaNet layer (qwen35, qwen35moe), as llama.cpp's
// build_layer_attn_linear computes it, for one ubatch of one sequence:
//
//   [q | k | v] = attn_qkv xn  -> causal conv (ssm_conv1d, the state's last K - 1 inputs) -> SiLU
//   q, k l2-normalized per head; beta = sigmoid(ssm_beta xn); g = ssm_a softplus(ssm_alpha xn + dt_bias)
//   o = gated delta rule (q, k, v, g, beta; the state's matrices)       chunked for prefill, recurrent for decode
//   out = ssm_out (rms_norm(o) per head, ssm_norm) * silu(attn_gate xn)
//
// The state (KvCache::recurrent_state) is [channels][K - 1] convolution inputs followed by
// [n_v_heads][head_v_dim][head_k_dim] delta-rule matrices, f32; the KV cache only holds it.
// beta and g are computed on the host (a few values per token), as the router's choices are.

#include <cstdint>
#include <vector>

#include "engine/model/model.h"

namespace lr {

class DeltaNetBlock {
public:
    // llama.cpp's chunk size for the chunked form.
    static constexpr int32_t kChunkTokens = 64;

    // Scratch for ubatches of up to max_tokens tokens.
    static Result<DeltaNetBlock> create(const Model & model, uint32_t max_tokens);
    // The activations one ubatch token takes (the buffers below).
    static uint64_t scratch_bytes_per_token(const ModelHParams & hp);

    // out = the mixer of layer il over xn, advancing `state` by the ubatch's n tokens.
    // out may be xn.                                                    xn, out: [n][n_embd]
    void run(uint32_t il, const float * xn, int64_t n, void * state, float * out);

private:
    explicit DeltaNetBlock(const Model & model) : model_(&model) {}

    const Model * model_;
    DeltaRuleParams rule_;
    DeviceBuffer qkv_;                         // [n][channels] the projection, then the convolution's output
    DeviceBuffer conv_;                        // [n][channels]
    DeviceBuffer q_, k_;                       // [n][n_k_heads][head_k_dim]
    DeviceBuffer v_;                           // [n][n_v_heads][head_v_dim]
    DeviceBuffer z_;                           // [n][inner] the output gate
    DeviceBuffer o_;                           // [n][inner] the delta rule's output
    DeviceBuffer gates_;                       // [2][n][n_v_heads] beta and alpha before their activations
    std::vector<float> gates_host_;            // [2][n][n_v_heads]: beta, then g
    std::vector<std::vector<float>> dt_bias_;  // [layer][n_v_heads] (host; recurrent layers only)
    std::vector<std::vector<float>> decay_a_;  // [layer][n_v_heads] ssm_a (host)
};

}  // namespace lr
