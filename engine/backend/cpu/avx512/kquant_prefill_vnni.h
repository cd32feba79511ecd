#pragma once
// Prefill of the K-quants (Q2_K ... Q6_K) with AVX-512 VNNI, lanes = rows, as
// legacy_prefill_vnni.h does for the legacy types: sixteen rows are unpacked from the
// common form (levels, the scale and "min" coefficient of each 16 elements, d, dmin) into a
// panel whose registers hold the same 4 levels of 16 rows, the 16 rows' scales and mins as
// 32-bit lanes, and d and dmin as float lanes. Per scale (16 elements, or 32 for Q4_K and
// Q5_K) and token: 4 dpbusd per 16 elements with the token's bytes broadcast, one mullo by
// the 16 rows' scales; per super-block and token, the mins against the activation's block
// sums in 8 dpwssd (pairs of 16-bit values). The integer sums are quant::vec_dot's, exactly.
//
// Included inside avx2/matmul_kquant_avx2.cpp's namespace, after its block types, when that
// file is built for AVX-512 VNNI (avx512/matmul_kquant_vnni.cpp).

namespace vnni {

using avx512::broadcast32;
using avx512::broadcast_ps;
using avx512::transpose16;

constexpr int64_t kRows = avx512::kPanelRows;

// A panel super-block: levels [64 groups of 4][16 rows][4 bytes], then per row (32-bit
// lanes) the scales of the 16 groups of 16 elements, the mins in pairs (mn_2p | mn_2p+1 <<
// 16), d and dmin.
constexpr size_t kLevels = 0, kScales = 4096, kMinPairs = 5120, kD = 5632, kDmin = 5696;
constexpr size_t kBlockBytes = 5760;
constexpr size_t kStagingBlockBytes = 256;  // one row's super-block of levels

inline size_t panel_bytes(int64_t n_cols) { return size_t(n_cols / QK_K) * kBlockBytes; }
inline size_t scratch_bytes(int64_t n_cols) { return panel_bytes(n_cols) + size_t(kRows) * size_t(n_cols / QK_K) * kStagingBlockBytes; }

// Rows [r0, r0 + n) of the job (n <= 16) into a panel; missing rows get zero scales. The
// levels go through `staging` (each row unpacked whole, then 16 x 16 dwords transposed).
template <class T>
void unpack_panel(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    using Block = typename T::Block;
    const int64_t nsb = job.n_cols / QK_K;
    const size_t staging_row = size_t(nsb) * kStagingBlockBytes;
    if (n < kRows) {
        std::memset(staging + size_t(n) * staging_row, 0, size_t(kRows - n) * staging_row);
        for (int64_t s = 0; s < nsb; ++s) {
            uint8_t * block = panel + size_t(s) * kBlockBytes;
            for (int64_t r = n; r < kRows; ++r) {
                for (int g = 0; g < 16; ++g) reinterpret_cast<int32_t *>(block + kScales + 64 * g)[r] = 0;
                for (int p = 0; p < 8; ++p) reinterpret_cast<int32_t *>(block + kMinPairs + 64 * p)[r] = 0;
                reinterpret_cast<float *>(block + kD)[r] = 0.0f;
                reinterpret_cast<float *>(block + kDmin)[r] = 0.0f;
            }
        }
    }
    for (int64_t r = 0; r < n; ++r) {
        const auto * w = reinterpret_cast<const Block *>(job.w + size_t(r0 + r) * job.w_row_bytes);
        if (r + 1 < n) avx2::prefetch_bytes(job.w + size_t(r0 + r + 1) * job.w_row_bytes, job.w_row_bytes);
        for (int64_t s = 0; s < nsb; ++s) {
            const T u(w[s]);
            auto * out = reinterpret_cast<__m256i *>(staging + size_t(r) * staging_row + size_t(s) * kStagingBlockBytes);
            uint8_t * block = panel + size_t(s) * kBlockBytes;
            alignas(32) int16_t sc[16], mn[16];
            for (int j = 0; j < 8; ++j) {
                _mm256_store_si256(out + j, u.q(j));
                _mm256_store_si256(reinterpret_cast<__m256i *>(sc), u.scale(j));  // [s_2j x 8 | s_2j+1 x 8]
                reinterpret_cast<int32_t *>(block + kScales + 64 * (2 * j))[r] = sc[0];
                reinterpret_cast<int32_t *>(block + kScales + 64 * (2 * j + 1))[r] = sc[8];
            }
            _mm256_store_si256(reinterpret_cast<__m256i *>(mn), u.mn());
            for (int p = 0; p < 8; ++p) {
                reinterpret_cast<uint32_t *>(block + kMinPairs + 64 * p)[r] = uint16_t(mn[2 * p]) | uint32_t(uint16_t(mn[2 * p + 1])) << 16;
            }
            reinterpret_cast<float *>(block + kD)[r] = u.d();
            reinterpret_cast<float *>(block + kDmin)[r] = u.dmin();
        }
    }
    for (int64_t s = 0; s < nsb; ++s) {
        for (int quarter = 0; quarter < 4; ++quarter) {
            __m512i v[kRows];
            for (int r = 0; r < kRows; ++r)
                v[r] = _mm512_load_si512(staging + size_t(r) * staging_row + size_t(s) * kStagingBlockBytes + 64 * quarter);
            transpose16(v);
            uint8_t * levels = panel + size_t(s) * kBlockBytes + kLevels + 1024 * quarter;
            for (int c = 0; c < 16; ++c) _mm512_store_si512(levels + 64 * c, v[c]);
        }
    }
}

// y[t][0..15] (the lanes in `mask`) for the panel's rows and Tn tokens.
template <bool Combined, int ScaleElems, int Tn>
void tile(const uint8_t * panel, int64_t nsb, const uint8_t * const * act, float * y, int64_t y_stride, __mmask16 mask) {
    __m512 acc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t s = 0; s < nsb; ++s) {
        const uint8_t * pw = panel + size_t(s) * kBlockBytes;
        const size_t at = size_t(s) * kActBlockBytes;
        __m512i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm512_setzero_si512();
        // One mullo per scale: per 16 elements, or 32 where two groups share one (Q4_K, Q5_K).
        constexpr int kGroups = ScaleElems / 16, kWords = 4 * kGroups;
        for (int g = 0; g < 16; g += kGroups) {
            __m512i w[kWords];
            for (int i = 0; i < kWords; ++i) w[i] = _mm512_load_si512(pw + kLevels + 64 * (4 * g + i));
            const __m512i sc = _mm512_load_si512(pw + kScales + 64 * g);
            for (int t = 0; t < Tn; ++t) {
                const uint8_t * a = act[t] + at + 16 * g;
                __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], broadcast32(a));
                for (int i = 1; i < kWords; ++i) dot = _mm512_dpbusd_epi32(dot, w[i], broadcast32(a + 4 * i));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot, sc));
            }
        }
        const __m512 d = _mm512_load_ps(reinterpret_cast<const float *>(pw + kD));
        const __m512 dmin = _mm512_load_ps(reinterpret_cast<const float *>(pw + kDmin));
        for (int t = 0; t < Tn; ++t) {
            __m512i msum = _mm512_setzero_si512();
            for (int p = 0; p < 8; ++p)
                msum = _mm512_dpwssd_epi32(msum, _mm512_load_si512(pw + kMinPairs + 64 * p), broadcast32(act[t] + at + kActBsums + 4 * p));
            const __m512 da = broadcast_ps(act[t] + at + kActD);
            if constexpr (Combined) {
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t], msum)), _mm512_mul_ps(d, da), acc[t]);
            } else {
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, da), acc[t]);
                acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, da), acc[t]);
            }
        }
    }
    for (int t = 0; t < Tn; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, acc[t]);
}

// Rows [r0, r1): panels of 16 rows, tiles of up to 8 tokens.
template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const int64_t nsb = job.n_cols / QK_K;
    uint8_t * panel = scratch;
    uint8_t * staging = scratch + panel_bytes(job.n_cols);
    avx2::for_each_lane_panel<kRows, avx512::kTileTokens>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) {
            tile<T::kCombinedMin, T::kScaleElems, Tn>(panel, nsb, act, y, job.y_stride, avx512::row_mask(n));
        });
}

}  // namespace vnni
