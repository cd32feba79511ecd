#pragma once
// Per-type row functions behind the DType dispatch of quant.h. Internal to lr_quant:
// other modules go through quant.h. n is always a multiple of the type's block size
// (checked by the dispatcher).

#include <bit>
#include <cstddef>
#include <cstdint>

#include "engine/quant/quant_blocks.h"

namespace lr::quant::detail {

// Round to nearest, ties to even, the way ggml's nearest_int does: adding 1.5 * 2^23 leaves
// the rounded integer in the low mantissa bits. Valid for |fval| <= 2^22 - 1; callers stay
// within that (quantization levels are at most a few hundred).
inline int nearest_int(float fval) {
    const float val = fval + 12582912.f;
    const int32_t bits = std::bit_cast<int32_t>(val);
    return (bits & 0x007fffff) - 0x00400000;
}

// ---- quant_float.cpp: F32, F16, BF16 (one element per "block") ----
void dequantize_row_f16(const uint16_t * x, float * y, size_t n);
void dequantize_row_bf16(const uint16_t * x, float * y, size_t n);
void quantize_row_f16(const float * x, uint16_t * y, size_t n);
void quantize_row_bf16(const float * x, uint16_t * y, size_t n);
float vec_dot_f32(size_t n, const float * w, const float * a);
float vec_dot_f16(size_t n, const uint16_t * w, const uint16_t * a);
float vec_dot_bf16(size_t n, const uint16_t * w, const uint16_t * a);

// ---- quant_legacy.cpp: blocks of 32 ----
void dequantize_row_q4_0(const block_q4_0 * x, float * y, size_t n);
void dequantize_row_q4_1(const block_q4_1 * x, float * y, size_t n);
void dequantize_row_q5_0(const block_q5_0 * x, float * y, size_t n);
void dequantize_row_q5_1(const block_q5_1 * x, float * y, size_t n);
void dequantize_row_q8_0(const block_q8_0 * x, float * y, size_t n);
void dequantize_row_q8_1(const block_q8_1 * x, float * y, size_t n);
void dequantize_row_iq4_nl(const block_iq4_nl * x, float * y, size_t n);

void quantize_row_q4_0_ref(const float * x, block_q4_0 * y, size_t n);
void quantize_row_q4_1_ref(const float * x, block_q4_1 * y, size_t n);
void quantize_row_q5_0_ref(const float * x, block_q5_0 * y, size_t n);
void quantize_row_q5_1_ref(const float * x, block_q5_1 * y, size_t n);
void quantize_row_q8_0_ref(const float * x, block_q8_0 * y, size_t n);
void quantize_row_q8_1_ref(const float * x, block_q8_1 * y, size_t n);
void quantize_row_q8_0_x86(const float * x, block_q8_0 * y, size_t n);
void quantize_row_q8_1_x86(const float * x, block_q8_1 * y, size_t n);
void quantize_row_iq4_nl_ref(const float * x, block_iq4_nl * y, size_t n);

float vec_dot_q4_0_q8_0(size_t n, const block_q4_0 * x, const block_q8_0 * y);
float vec_dot_q4_1_q8_1(size_t n, const block_q4_1 * x, const block_q8_1 * y);
float vec_dot_q5_0_q8_0(size_t n, const block_q5_0 * x, const block_q8_0 * y);
float vec_dot_q5_1_q8_1(size_t n, const block_q5_1 * x, const block_q8_1 * y);
float vec_dot_q8_0_q8_0(size_t n, const block_q8_0 * x, const block_q8_0 * y);
float vec_dot_iq4_nl_q8_0(size_t n, const block_iq4_nl * x, const block_q8_0 * y);

// ---- quant_kquants_fit.cpp: the scale searches shared by the K-quant quantizers ----

// Symmetric fit of n values to L[i] - nmax, L in [0, 2*nmax): returns the scale. rmse_type 1
// weights each error by x^2 and tries 18 scales around the max (ggml's make_qx_quants;
// only the variants the ref quantizers use).
float make_qx_quants(int n, int nmax, const float * x, int8_t * L);
// Symmetric fit for Q3_K: starts from the max, then moves single levels while the weighted
// error falls (ggml's make_q3_quants with do_rmse). L in [0, 2*nmax).
float make_q3_quants(int n, int nmax, const float * x, int8_t * L);
// Asymmetric fit x ~ scale * L - the_min with L in [0, nmax], the_min >= 0, by a grid
// search over nstep + 1 trial scales with a least-squares refit (ggml's make_qkx2_quants).
float make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * the_min, uint8_t * Laux, float rmin,
                       float rdelta, int nstep, bool use_mad);

// ---- quant_kquants.cpp: super-blocks of 256 ----
void dequantize_row_q2_K(const block_q2_K * x, float * y, size_t n);
void dequantize_row_q3_K(const block_q3_K * x, float * y, size_t n);
void dequantize_row_q4_K(const block_q4_K * x, float * y, size_t n);
void dequantize_row_q5_K(const block_q5_K * x, float * y, size_t n);
void dequantize_row_q6_K(const block_q6_K * x, float * y, size_t n);
void dequantize_row_q8_K(const block_q8_K * x, float * y, size_t n);

void quantize_row_q2_K_ref(const float * x, block_q2_K * y, size_t n);
void quantize_row_q3_K_ref(const float * x, block_q3_K * y, size_t n);
void quantize_row_q4_K_ref(const float * x, block_q4_K * y, size_t n);
void quantize_row_q5_K_ref(const float * x, block_q5_K * y, size_t n);
void quantize_row_q6_K_ref(const float * x, block_q6_K * y, size_t n);
void quantize_row_q8_K_ref(const float * x, block_q8_K * y, size_t n);

float vec_dot_q2_K_q8_K(size_t n, const block_q2_K * x, const block_q8_K * y);
float vec_dot_q3_K_q8_K(size_t n, const block_q3_K * x, const block_q8_K * y);
float vec_dot_q4_K_q8_K(size_t n, const block_q4_K * x, const block_q8_K * y);
float vec_dot_q5_K_q8_K(size_t n, const block_q5_K * x, const block_q8_K * y);
float vec_dot_q6_K_q8_K(size_t n, const block_q6_K * x, const block_q8_K * y);

// ---- quant_iquants.cpp: the grid i-quants and IQ4_XS (super-blocks of 256, Q8_K dots) ----
void dequantize_row_iq2_xxs(const block_iq2_xxs * x, float * y, size_t n);
void dequantize_row_iq2_xs(const block_iq2_xs * x, float * y, size_t n);
void dequantize_row_iq2_s(const block_iq2_s * x, float * y, size_t n);
void dequantize_row_iq3_xxs(const block_iq3_xxs * x, float * y, size_t n);
void dequantize_row_iq3_s(const block_iq3_s * x, float * y, size_t n);
void dequantize_row_iq1_s(const block_iq1_s * x, float * y, size_t n);
void dequantize_row_iq1_m(const block_iq1_m * x, float * y, size_t n);
void dequantize_row_iq4_xs(const block_iq4_xs * x, float * y, size_t n);

float vec_dot_iq2_xxs_q8_K(size_t n, const block_iq2_xxs * x, const block_q8_K * y);
float vec_dot_iq2_xs_q8_K(size_t n, const block_iq2_xs * x, const block_q8_K * y);
float vec_dot_iq2_s_q8_K(size_t n, const block_iq2_s * x, const block_q8_K * y);
float vec_dot_iq3_xxs_q8_K(size_t n, const block_iq3_xxs * x, const block_q8_K * y);
float vec_dot_iq3_s_q8_K(size_t n, const block_iq3_s * x, const block_q8_K * y);
float vec_dot_iq1_s_q8_K(size_t n, const block_iq1_s * x, const block_q8_K * y);
float vec_dot_iq1_m_q8_K(size_t n, const block_iq1_m * x, const block_q8_K * y);
float vec_dot_iq4_xs_q8_K(size_t n, const block_iq4_xs * x, const block_q8_K * y);

// ---- quant_iq3_quantize.cpp, quant_iq4_xs.cpp: the i-quants llama.cpp writes without an
// importance matrix ----
void quantize_row_iq3_xxs_ref(const float * x, block_iq3_xxs * y, size_t n);
void quantize_row_iq3_s_ref(const float * x, block_iq3_s * y, size_t n);
void quantize_row_iq4_xs_ref(const float * x, block_iq4_xs * y, size_t n);
// The scale of 32 values on the IQ4_NL levels (0 for a near-zero block), ggml's
// quantize_row_iq4_nl_impl without weights, ntry 7: the largest magnitude on level -127,
// a refit by least squares weighted by x^2, then 15 more starting scales, the best fit
// kept. L receives the levels of the first fit. best_index picks the level of id * x.
float fit_iq4_block(const float * xb, uint8_t * L, int (*best_index)(float));

// ---- quant_tq_mxfp4.cpp: TQ2_0 (Q8_K dots) and MXFP4 (Q8_0 dots) ----
void dequantize_row_tq2_0(const block_tq2_0 * x, float * y, size_t n);
void quantize_row_tq2_0_ref(const float * x, block_tq2_0 * y, size_t n);
float vec_dot_tq2_0_q8_K(size_t n, const block_tq2_0 * x, const block_q8_K * y);
void dequantize_row_mxfp4(const block_mxfp4 * x, float * y, size_t n);
void quantize_row_mxfp4_ref(const float * x, block_mxfp4 * y, size_t n);
float vec_dot_mxfp4_q8_0(size_t n, const block_mxfp4 * x, const block_q8_0 * y);

}  // namespace lr::quant::detail
