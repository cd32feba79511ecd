#pragma once
// The gated activations of the feed-forward blocks, per ISA.
//
// GELU follows ggml's CPU backend, which llama.cpp's logits come from: its f32 GELU rounds the
// input to f16 and looks the result up in a table of GELU (tanh approximation, in float)
// over every f16 value, itself rounded to f16; inputs at or below -10 give 0, at or above 10
// the input. gelu_table() is that table (as floats); both kernels read it, so they agree
// bit for bit.
//
// SiLU follows it too: its vector kernels compute exp with ggml_v_expf (ggml_expf.h), for the
// whole vectors of 16 of a row; the rest of the row uses expf.

#include <cstdint>

#include "engine/backend/cpu/cpu_isa.h"

namespace lr::cpu {

// GELU's tanh approximation in float, in ggml's order of operations.
float gelu_tanh(float x);

// [65536]: entry h = f16(gelu_tanh(f16 value h)) as a float. Built once, on first use.
const float * gelu_table();

struct ActivationKernels {
    // out[i] = gelu(gate[i]) * up[i] (out may be gate). table: gelu_table().
    void (*geglu)(const float * gate, const float * up, int64_t n, float * out, const float * table);
    // One row: out[c] = silu(gate[c]) * up[c], c < n_cols (out may be gate).
    void (*swiglu)(const float * gate, const float * up, int64_t n_cols, float * out);
};

const ActivationKernels & scalar_activation_kernels();
const ActivationKernels & avx2_activation_kernels();
const ActivationKernels & activation_kernels(CpuIsa isa);

}  // namespace lr::cpu
