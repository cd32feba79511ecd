#pragma once
// Gemma 4's per-layer inputs (llama.cpp's build_inp_per_layer and project_per_layer_inputs,
// and the block after each layer's FFN). Besides its embedding, a token brings an input of
// n_embd_per_layer values for every layer:
//   input[il] = (per_layer_token_embd row (token, il) * sqrt(n_embd_per_layer)
//                + rms_norm(rows il of per_layer_model_proj . x * 1/sqrt(n_embd)) * proj_norm)
//               * 1/sqrt(2)
// with x the scaled token embedding, and after layer il's FFN the residual stream gains
//   post_norm(proj(gelu(inp_gate . x) * input[il])).

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model_hparams.h"

namespace lr {

// The model's tensors.
struct PerLayerInputWeights {
    WeightView token_embd;  // [n_vocab * n_layer][n_embd_per_layer]: one row per (token, layer)
    WeightView model_proj;  // [n_layer * n_embd_per_layer][n_embd]
    WeightView proj_norm;   // [n_embd_per_layer]
};

// One layer's tensors.
struct PerLayerInputLayerWeights {
    WeightView gate;       // [n_embd_per_layer][n_embd] inp_gate
    WeightView proj;       // [n_embd][n_embd_per_layer]
    WeightView post_norm;  // [n_embd]
};

class PerLayerInputs {
public:
    // Buffers for ubatches of up to max_tokens tokens.
    static Result<PerLayerInputs> create(const ModelHParams & hp, Backend & backend, uint32_t max_tokens);
    // The activations one ubatch token takes (every layer's input and the gate).
    static uint64_t scratch_bytes_per_token(const ModelHParams & hp);

    // Every layer's input for the ubatch's tokens, from their scaled embeddings x [n][n_embd].
    void compute(const PerLayerInputWeights & w, const int32_t * tokens_host, const float * x, int64_t n);
    // x += post_norm(proj(gelu(gate . x) * input[il])); out is scratch [n][n_embd].
    void add_to_layer(const PerLayerInputLayerWeights & L, uint32_t il, float * x, float * out, int64_t n);

private:
    PerLayerInputs(Backend & backend, const ModelHParams & hp)
        : backend_(&backend), n_layer_(hp.n_layer), n_embd_(hp.n_embd), width_(hp.n_embd_per_layer), eps_(hp.rms_eps) {}

    Backend * backend_;
    uint32_t n_layer_, n_embd_, width_;
    float eps_;
    int64_t n_ = 0;              // tokens of the ubatch computed last
    DeviceBuffer inputs_;        // [n_layer][n][width]
    DeviceBuffer gate_;          // [n][width]
    std::vector<int32_t> rows_;  // [n] rows of token_embd for one layer (host)
};

}  // namespace lr
