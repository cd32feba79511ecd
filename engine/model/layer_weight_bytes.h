#pragma once
// The weight bytes of a model file by layer, what --gpu-layers (and the app's automatic
// offload) moves to VRAM a whole layer at a time; and those of its routed experts.

#include "engine/backend/backend_factory.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

LayerWeightBytes layer_weight_bytes(const gguf::GgufFile & file);

// The bytes of the routed experts' tensors (ffn_{gate,up,down}_exps and their biases), as
// the loader counts them (ModelWeights::n_expert_bytes).
uint64_t expert_weight_bytes(const gguf::GgufFile & file);

}  // namespace lr
