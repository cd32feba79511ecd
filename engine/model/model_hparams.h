#pragma once
// The hyper-parameters of a model, read from GGUF metadata and validated.

#include <cstdint>
#include <string>

#include "engine/backend/backend.h"
#include "engine/common/status.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

enum class ModelArch { llama, qwen2 };

struct ModelHParams {
    ModelArch arch = ModelArch::llama;
    std::string arch_name;  // as in the file: "llama", "qwen2"
    std::string name;       // general.name, or the file name
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;  // attention.key_length (= value_length), default n_embd / n_head
    uint32_t n_ff = 0;
    float rms_eps = 1e-5f;
    RopeMode rope_mode = RopeMode::normal;
    uint32_t n_rot = 0;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;

    uint32_t n_embd_q() const { return n_head * head_dim; }
    uint32_t n_embd_kv() const { return n_head_kv * head_dim; }
};

// Reads and checks the hyper-parameters; an unknown architecture or scaling type is
// an `unsupported` error naming it.
Result<ModelHParams> read_hparams(const gguf::GgufFile & file);

}  // namespace lr
