#pragma once
// The weights of a llama-family model as backend views, checked against the
// hyper-parameters: a missing tensor or a wrong shape is an error naming the tensor.

#include <optional>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_hparams.h"

namespace lr {

struct LayerWeights {
    WeightView attn_norm;                  // [n_embd]
    WeightView wq, wk, wv;                 // [n_embd_q | n_embd_kv][n_embd]
    std::optional<WeightView> bq, bk, bv;  // qwen2 biases
    WeightView wo;                         // [n_embd][n_embd_q]
    WeightView ffn_norm;                   // [n_embd]
    WeightView ffn_gate, ffn_up;           // [n_ff][n_embd]
    WeightView ffn_down;                   // [n_embd][n_ff]
};

struct ModelWeights {
    WeightView token_embd;   // [n_vocab][n_embd]
    WeightView output_norm;  // [n_embd]
    WeightView output;       // [n_vocab][n_embd]; token_embd when tied
    bool tied_output = false;
    std::optional<WeightView> rope_freqs;  // [n_rot / 2]
    std::vector<LayerWeights> layers;
    uint64_t n_params = 0;
    uint64_t n_bytes = 0;
};

// Resolves every tensor of the model in `file` and prepares it for `backend`.
Result<ModelWeights> load_weights(const gguf::GgufFile & file, const ModelHParams & hp, Backend & backend);

}  // namespace lr
