#pragma once
// Q8_K activations as the AVX2 kernels of Q8_K-paired weights read them (the K-quants in
// matmul_kquant_avx2.cpp, the i-quants and TQ2_0 in matmul_iquant_avx2.cpp): converted
// exactly as quant::quantize_row_q8_K_ref, one super-block of 256 in kActBlockBytes:
//   [0, 256)   qs     int8, in element order (32-byte aligned)
//   [256, 288) bsums  int16 [16]: sums of 16 consecutive qs
//   [288, 292) d      float
// Include only from AVX2 translation units.

#include <cstddef>
#include <cstdint>

namespace lr::cpu::avx2 {

inline constexpr size_t kActBlockBytes = 320;
inline constexpr size_t kActBsums = 256;
inline constexpr size_t kActD = 288;

size_t q8k_act_row_bytes(int64_t n_cols);
void q8k_convert_act(const float * x, int64_t n_cols, uint8_t * dst);
// Back to block_q8_K, for the tests.
void q8k_act_to_standard(const uint8_t * act, int64_t n_cols, void * dst);

}  // namespace lr::cpu::avx2
