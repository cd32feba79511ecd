#pragma once
// Helpers shared by the AVX-512 kernels. Include only from translation units compiled with
// the AVX-512 flags (engine/backend/CMakeLists.txt); avx2_util.h's note applies.

#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/avx2/avx2_util.h"
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

// Asks for the cache lines of [p, p + n): a weight row read next is a new stream for the
// hardware prefetcher.
inline void prefetch_bytes(const void * p, size_t n) {
    for (size_t at = 0; at < n; at += 64) _mm_prefetch(static_cast<const char *>(p) + at, _MM_HINT_T0);
}

inline __m512i broadcast32(const uint8_t * p) { return _mm512_set1_epi32(load_as<int32_t>(p)); }
inline __m512 broadcast_ps(const uint8_t * p) { return _mm512_set1_ps(load_as<float>(p)); }

// The prefill walk of the lanes = rows kernels: rows [r0, r1) in panels of kPanelRows
// (unpack(p0, n) fills the panel with rows p0 .. p0 + n), then the job's tokens in tiles of
// up to kTileTokens: tile.template operator()<Tn>(act, y, mask), act[i] the activations of
// token t + i, y = &y[t][p0], mask the panel's rows.
constexpr int64_t kPanelRows = 16;  // the lanes of a register
constexpr int kTileTokens = 8;

template <class Unpack, class Tile>
void for_each_panel_tile(const MatmulJob & job, int64_t r0, int64_t r1, Unpack unpack, Tile tile) {
    for (int64_t p0 = r0; p0 < r1; p0 += kPanelRows) {
        const int64_t n = avx2::min_i64(kPanelRows, r1 - p0);
        unpack(p0, n);
        const auto mask = __mmask16((1u << n) - 1);
        const uint8_t * act[kTileTokens];
        for (int64_t t = 0; t < job.n_tokens; t += kTileTokens) {
            const int64_t m = avx2::min_i64(kTileTokens, job.n_tokens - t);
            for (int64_t i = 0; i < m; ++i) act[i] = job.act + size_t(t + i) * job.act_row_bytes;
            float * y = job.y + t * job.y_stride + p0;
            switch (m) {
                case 8: tile.template operator()<8>(act, y, mask); break;
                case 7: tile.template operator()<7>(act, y, mask); break;
                case 6: tile.template operator()<6>(act, y, mask); break;
                case 5: tile.template operator()<5>(act, y, mask); break;
                case 4: tile.template operator()<4>(act, y, mask); break;
                case 3: tile.template operator()<3>(act, y, mask); break;
                case 2: tile.template operator()<2>(act, y, mask); break;
                default: tile.template operator()<1>(act, y, mask); break;
            }
        }
    }
}

}  // namespace lr::cpu::avx512
