#pragma once
// The weight bytes of a model file by layer: what --gpu-layers (and the app's automatic
// offload) moves to VRAM a whole layer at a time.

#include <functional>

#include "engine/backend/backend_factory.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

// The bytes a tensor takes where it goes (cuda_weight_bytes: a type without a CUDA kernel
// is stored as F32).
using StoredBytesFn = std::function<uint64_t(DType type, uint64_t n_elements, uint64_t file_bytes)>;

// Each layer's weights as `stored` counts them; unset: the bytes in the file.
LayerWeightBytes layer_weight_bytes(const gguf::GgufFile & file, const StoredBytesFn & stored = {});

}  // namespace lr
