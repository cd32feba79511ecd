#pragma once
// The work of geglu.cu for one element, shared with the host emulation of the tests: GELU
// from the CPU backend's table over the f16 values (cpu/activations.h, uploaded to the
// device), so the GPU gives the CPU's bits.

#include "engine/backend/cuda/device_util.cuh"

namespace lr::cuda {

// gelu(g) * u as ggml's CPU: 0 at or below -10, g * u at or above 10, else the table's
// entry at the f16 bits of g (rounded to nearest even) times u.
LR_HD float geglu_one(float g, float u, const float * table) {
    if (g <= -10.0f) return 0.0f;
    if (g >= 10.0f) return mul_rn(g, u);
    return mul_rn(table[__half_as_ushort(__float2half_rn(g))], u);
}

}  // namespace lr::cuda
