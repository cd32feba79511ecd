#pragma once
// Weight and activation formats of GGUF/ggml, as readable scalar code: this is the
// reference every SIMD and CUDA kernel is tested against. Bit-exact with ggml's block
// layouts (ggml-common.h) and with its *_ref quantizers.

#include <cstddef>
#include <cstdint>

#include "engine/common/dtype.h"

namespace lr::quant {

// True when dequantize_row handles `type`: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS,
// IQ2_XS, IQ2_S, IQ1_S, IQ1_M, TQ2_0, MXFP4. Every one of them but Q8_1 and Q8_K (activation
// formats) has a vec_dot.
bool can_dequantize(DType type);

// True for the types llama.cpp will only write with an importance matrix (llama-quantize
// refuses them without one): IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M.
bool needs_importance_matrix(DType type);

// True when quantize_row handles `type`: every type of can_dequantize except those that
// need an importance matrix.
bool can_quantize(DType type);

// dst[0..n) = the values of one row of `type` stored at src. n is a multiple of the
// type's block size (LR_ASSERT otherwise).
void dequantize_row(DType type, const void * src, float * dst, size_t n);

// Writes row_bytes(type, n) bytes at dst: src[0..n) quantized the way ggml's
// quantize_row_<type>_ref does (no importance matrix). n is a multiple of the block size;
// can_quantize(type) (LR_ASSERT otherwise).
void quantize_row(DType type, const float * src, void * dst, size_t n);

// Converts activations to `vec_dot_type` the way llama.cpp's x86 CPU backend does before
// a dot product: Q8_0/Q8_1 with scale 127/amax and round-half-to-even (its AVX kernels),
// every other type as quantize_row. Weights keep quantize_row (llama-quantize's rounding).
void quantize_activations(DType vec_dot_type, const float * src, void * dst, size_t n);

// The type activations are converted to for a dot product with weights of `type`
// (ggml's vec_dot_type): F32->F32, F16->F16, BF16->BF16, Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4->Q8_0,
// Q4_1/Q5_1->Q8_1, K-quants, i-quants with 256-blocks (IQ4_XS, IQ3_*, IQ2_*, IQ1_*) and
// TQ2_0->Q8_K.
DType vec_dot_type(DType type);

// sum_i w[i] * a[i] over n elements, where w is a row of `type` and a is a row of
// vec_dot_type(type) (as written by quantize_row). Scalar, in ggml's order of operations:
// integer sums per block, then scaled and accumulated in float.
float vec_dot(DType type, size_t n, const void * w, const void * a);

}  // namespace lr::quant
