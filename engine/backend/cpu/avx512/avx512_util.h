#pragma once
// Helpers shared by the AVX-512 kernels. Include only from translation units compiled with
// the AVX-512 flags (engine/backend/CMakeLists.txt); avx2_util.h's note applies.

#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/avx2/matmul_panels_avx2.h"
#include "engine/backend/cpu/matmul_kernels.h"

namespace lr::cpu::avx512 {

using avx2::load_as;

// v[r][c] -> v[c][r] for 16 x 16 dwords: pairs, quads, then 128-bit lanes twice.
inline void transpose16(__m512i * v) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {  // lane l of v[i + e]: element 4l + e of rows i..i+3
        v[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        v[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        v[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        v[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int g = 0; g < 2; ++g) {  // rows 0-7, then 8-15
        for (int e = 0; e < 4; ++e) {
            t[8 * g + e] = _mm512_shuffle_i32x4(v[8 * g + e], v[8 * g + 4 + e], 0x88);      // elements e, 8 + e
            t[8 * g + 4 + e] = _mm512_shuffle_i32x4(v[8 * g + e], v[8 * g + 4 + e], 0xdd);  // elements 4 + e, 12 + e
        }
    }
    for (int e = 0; e < 8; ++e) {
        v[e] = _mm512_shuffle_i32x4(t[e], t[8 + e], 0x88);
        v[8 + e] = _mm512_shuffle_i32x4(t[e], t[8 + e], 0xdd);
    }
}

inline __m512i broadcast32(const uint8_t * p) { return _mm512_set1_epi32(load_as<int32_t>(p)); }
inline __m512 broadcast_ps(const uint8_t * p) { return _mm512_set1_ps(load_as<float>(p)); }

// The lanes = rows kernels' panels (avx2::for_each_lane_panel): the 16 lanes of a register,
// and tiles of up to 8 tokens.
constexpr int64_t kPanelRows = 16;
constexpr int kTileTokens = 8;

// The lanes of a panel's first n rows.
inline __mmask16 row_mask(int n) { return __mmask16((1u << n) - 1); }

}  // namespace lr::cpu::avx512
