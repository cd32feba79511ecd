#pragma once
// The weight bytes of a model file by layer, what --gpu-layers (and the app's automatic
// offload) moves to VRAM a whole layer at a time; and those of its routed experts.

#include <functional>

#include "engine/backend/backend_factory.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

// The bytes a tensor takes where it goes (cuda_weight_bytes: a type without a CUDA kernel
// is stored as F32).
using StoredBytesFn = std::function<uint64_t(DType type, uint64_t n_elements, uint64_t file_bytes)>;

// Each layer's weights as `stored` counts them; unset: the bytes in the file.
LayerWeightBytes layer_weight_bytes(const gguf::GgufFile & file, const StoredBytesFn & stored = {});

// The bytes of the routed experts' tensors (ffn_{gate,up,down}_exps and their biases), as
// the loader counts them (ModelWeights::n_expert_bytes).
uint64_t expert_weight_bytes(const gguf::GgufFile & file);

}  // namespace lr
