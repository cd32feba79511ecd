#pragma once
// The per-element gates of the Gated DeltaNet ops (elementwise.cu's sigmoid_mul and swiglu,
// causal_conv.cu's SiLU), shared with the host emulation of the tests: the CPU's order of
// operations, each rounding explicit. The device's expf is within 2 ulp of the CPU's
// std::exp; ggml_expf gives the CPU's bits on both.

#include "engine/backend/cuda/device_util.cuh"
#include "engine/common/ggml_expf.h"

namespace lr::cuda {

// x * sigmoid(g), sigmoid(g) = 1 / (1 + exp(-g)) (CpuBackend::sigmoid_mul).
LR_HD float sigmoid_mul_one(float x, float g) { return mul_rn(x, div_rn(1.0f, add_rn(1.0f, expf(-g)))); }

// silu(g) = g / (1 + exp(-g)) for column c of a row of n_cols, with ggml_expf for the
// row's whole vectors of 16 and expf for the rest (cpu/activations.h).
LR_HD float silu_of_column(float g, int64_t c, int64_t n_cols) {
    const float e = c < ggml_vector_cols(n_cols) ? ggml_expf(-g) : expf(-g);
    return div_rn(g, add_rn(1.0f, e));
}

}  // namespace lr::cuda
