#pragma once
// Matrix products y = w x of one weight type on one ISA. The CPU backend converts the
// activations row by row into the kernel's own format (convert_act), then calls rows()
// on chunks of weight rows from every thread. Formats of activations and scratch are
// private to each kernel.
//
// Numerics. F32/F16/BF16 kernels reproduce float_dot.h's orders exactly (gemv for one
// token or rows that are not a multiple of 16, gemm otherwise): their results are
// bit-identical to the scalar kernels. Quantized kernels convert activations exactly as
// quant::quantize_activations does and compute the integer sums of each block exactly;
// only the float accumulation of the blocks differs from quant::vec_dot (tests bound it).

#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/cpu_isa.h"
#include "engine/common/dtype.h"

namespace lr::cpu {

struct MatmulJob {
    const uint8_t * w = nullptr;  // [n_rows] rows of w_row_bytes
    size_t w_row_bytes = 0;
    int64_t n_cols = 0;
    const uint8_t * act = nullptr;  // [n_tokens] rows of act_row_bytes, in the kernel's format
    size_t act_row_bytes = 0;
    int64_t n_tokens = 0;
    float * y = nullptr;  // [n_tokens][y_stride]; rows() writes y[t][r] for its rows
    int64_t y_stride = 0;
};

struct MatmulKernel {
    // Bytes of one converted activation row (a multiple of 64).
    size_t (*act_row_bytes)(int64_t n_cols);
    // Converts one row of n_cols activations.
    void (*convert_act)(const float * x, int64_t n_cols, uint8_t * dst);
    // Writes a converted row back in the standard format of the weight's vec_dot_type
    // (quant.h): what quant::quantize_activations writes for the same x (tests check).
    void (*act_to_standard)(const uint8_t * act, int64_t n_cols, void * dst);
    // Per-thread scratch rows() needs for chunks of at most max_rows rows.
    size_t (*scratch_bytes)(int64_t n_cols, int64_t max_rows, int64_t n_tokens);
    // y[t][r] for r in [r0, r1) and every token. scratch: scratch_bytes(...) bytes, 64-aligned.
    void (*rows)(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch);
};

// The kernel for weights of `type` on `isa` (never CpuIsa::best), or nullptr when that ISA
// has none for the type.
const MatmulKernel * matmul_kernel(CpuIsa isa, DType type);

// Per-ISA tables (matmul_scalar.cpp, avx2/*.cpp, avx512/*.cpp).
const MatmulKernel * scalar_matmul_kernel(DType type);
const MatmulKernel * avx2_matmul_kernel(DType type);
const MatmulKernel * avx512_matmul_kernel(DType type);  // its own kernels only

}  // namespace lr::cpu
