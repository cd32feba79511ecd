#pragma once
// The weight bytes of a model file by layer: what --gpu-layers (and the app's automatic
// offload) moves to VRAM a whole layer at a time.

#include "engine/backend/backend_factory.h"
#include "engine/gguf/gguf_file.h"

namespace lr {

LayerWeightBytes layer_weight_bytes(const gguf::GgufFile & file);

}  // namespace lr
