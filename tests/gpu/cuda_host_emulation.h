#pragma once
// The CUDA kernels' per-element code (engine/backend/cuda/dequant.cuh, kv_codec.cuh) run on
// the host: the lane mappings of dequant_step and the KV codecs can be checked against the
// CPU reference on machines without a GPU. Compiled by nvcc (cuda_host_emulation.cu), host
// code only: nothing here needs a device or a driver.

#include <cstddef>
#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/backend/kv_block_layout.h"
#include "engine/common/dtype.h"

namespace lr::test {

// Every element of the rows through dequant_one.                     out: [n_rows][n_cols]
void emulate_dequant_one(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, float * out);

// The rows as the matvec and GEMM kernels read them: each whole 256-column step through
// dequant_step for all 32 lanes, the tail through dequant_one. False when a column is
// written by two lanes or by none.                                    out: [n_rows][n_cols]
bool emulate_dequant_steps(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, bool aligned16, float * out);

// kv_write's encoder and attention's decoder.
void emulate_kv_encode_row(KvCodec codec, const float * src, uint8_t * dst, uint32_t head_dim);
float emulate_kv_decode(KvCodec codec, const uint8_t * row, uint32_t i, uint32_t head_dim);

// The matvec kernel (matvec.cuh), warp by warp and lane by lane, with the warp's
// butterfly sum.                        x: [n_tokens][n_cols], y: [n_tokens][n_rows]
void emulate_matvec(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float * x, int64_t n_tokens,
                    float * y);

// The launches of attention.cu (attention.cuh), block by block and thread by thread in
// barrier order, on host memory (the view's blocks in RAM). n_sm sizes the plan as on a GPU
// with that many multiprocessors (it changes the chunking, not the result's order of sums
// within a chunk).                      q, out: [n_tokens][n_head][head_dim]
void emulate_attention(const float * q, int64_t n_tokens, const int32_t * pos, const PagedKvView & view, const AttentionParams & p,
                       float * out, int n_sm);

// The rope kernel (rope.cuh), thread by thread.              x: [n_tokens][n_heads][head_dim]
void emulate_rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, const RopeParams & p);

// The geglu kernel (geglu.cuh) over the CPU's GELU table.
void emulate_geglu(const float * gate, const float * up, int64_t n, float * out);

// moe.cu's clamped SwiGLU and weighted sum of the experts (moe.cuh), element by element.
//                                          y: [n_slots][n_cols], slot_of, weights: [n_tokens][n_used]
void emulate_swiglu_oai(const float * gate, const float * up, int64_t n, float * out);
void emulate_moe_combine(const float * y, const int32_t * slot_of, const float * weights, int32_t n_used, int64_t n_tokens, int64_t n_cols,
                         float * out);

// The Gated DeltaNet kernels (gates.cuh, l2_norm.cuh, causal_conv.cuh, delta_rule.cuh),
// thread by thread; the delta rule's chunked form block by block, each phase over all its
// threads before the next (barrier order). Arguments as the Backend ops'.
void emulate_sigmoid_mul(float * x, const float * gate, int64_t n);
void emulate_l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out);
//                                          kernel: [n_channels][width], state: [n_channels][width - 1]
void emulate_causal_conv_silu(const float * x, int64_t n_tokens, const float * kernel, int64_t n_channels, int64_t width, float * state,
                              float * out);
void emulate_gated_delta_rule(const float * q, const float * k, const float * v, const float * g, const float * beta, int64_t n_tokens,
                              const DeltaRuleParams & p, float * state, float * out);

}  // namespace lr::test
