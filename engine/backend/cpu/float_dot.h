#pragma once
// Dot products of float rows (F32, F16, BF16) in the two accumulation orders of
// llama.cpp's AVX-512 CPU build (with AVX512_BF16, as the reference outputs were made), so
// that our logits can be compared with its reference outputs to the last bit rather than to
// a loose tolerance:
//   DotOrder::gemm  its prompt-processing GEMM (llamafile tinyBLAS, n_tokens >= 2): one
//                   accumulator of 16 FMA lanes over the row, then a tree reduction (BF16:
//                   16 vdpbf16ps lanes over steps of 32, lane j adding elements 2j + 1,
//                   then 2j, with the instruction's flushing of denormals);
//   DotOrder::gemv  its single-token path (ggml_vec_dot_*): 4 x 16 FMA lanes over steps of
//                   64 elements (BF16: 2 x 16 vdpbf16ps lanes over steps of 64), reduced,
//                   plus the tail (in float for F32, double for F16/BF16).
// Any order is equally correct; these are the checkable ones. AVX2 reproduces them with
// pairs of 8-lane registers.

#include <cstddef>
#include <cstdint>

namespace lr {

enum class DotOrder { gemm, gemv };

// gemm applies only to rows that are a multiple of 16 (tinyBLAS refuses the others and
// llama.cpp falls back to ggml_vec_dot): dot_order picks accordingly.
inline DotOrder dot_order(int64_t n_tokens, size_t n) { return n_tokens >= 2 && n % 16 == 0 ? DotOrder::gemm : DotOrder::gemv; }
// BF16's tinyBLAS takes rows that are a multiple of 32.
inline DotOrder dot_order_bf16(int64_t n_tokens, size_t n) { return n_tokens >= 2 && n % 32 == 0 ? DotOrder::gemm : DotOrder::gemv; }

float dot_f32(size_t n, const float * a, const float * b, DotOrder order);
float dot_f16(size_t n, const uint16_t * a, const uint16_t * b, DotOrder order);
float dot_bf16(size_t n, const uint16_t * a, const uint16_t * b, DotOrder order);
// dot_f16 on values already widened to float (attention over an f16 cache).
float dot_f16_as_f32(size_t n, const float * a, const float * b, DotOrder order);

}  // namespace lr
