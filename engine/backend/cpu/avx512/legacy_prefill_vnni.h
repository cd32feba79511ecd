#pragma once
// Prefill of the legacy block types (Q4_0 ... IQ4_NL, MXFP4) with AVX-512 VNNI, lanes =
// rows: sixteen weight rows are unpacked into a panel whose 512-bit registers each hold the
// same 4 bytes of the 16 rows, so one dpbusd with 4 bytes of a token broadcast adds to the
// sums of 16 rows, and a block's scaling (one cvt, one mul, one fma) serves 16 rows at once:
// per block, token and 16 rows, 8 dpbusd and 5 other instructions.
//
// dpbusd multiplies unsigned by signed bytes: signed values (Q8_0, IQ4_NL, MXFP4) are
// stored with 128 added, and that offset, like Q4_0's 8 and Q5_0's 16, is taken out in
// integers with the activation block's sum (cpat), so every block's integer sum is
// exactly quant::vec_dot's. Each row's blocks are summed in order; a token's result does
// not depend on the tokens or rows tiled with it.
//
// Included inside avx2/matmul_legacy_avx2.cpp's namespace, after its block types, when that
// file is built for AVX-512 VNNI (avx512/matmul_legacy_vnni.cpp). The activations are the
// quad layout's.

namespace vnni {

using avx512::broadcast32;
using avx512::broadcast_ps;
using avx512::transpose16;

constexpr int64_t kRows = avx512::kPanelRows;

template <class T>
using Panel = LanePanel<T, kRows, 1>;  // the panel's geometry

// Rows [r0, r0 + n) of the job (n <= 16) into a panel (missing rows: zeros): each row
// unpacked whole into `staging` (stage_panel_rows), then 16 x 16 dwords at a time turned
// into groups of 16 rows.
template <class T>
void unpack_panel(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    stage_panel_rows<T, Panel<T>>(job, r0, n, panel, staging);
    const int64_t nb = job.n_cols / 32, n_quads = (nb + 3) / 4;
    const size_t staging_row = size_t(n_quads) * 128;
    // Dword i = 8k + 2s + h of a quad is group 2k + h of the block in slot s.
    for (int64_t q = 0; q < n_quads; ++q) {
        for (int half = 0; half < 2; ++half) {
            __m512i v[kRows];
            for (int r = 0; r < kRows; ++r) v[r] = _mm512_load_si512(staging + size_t(r) * staging_row + 128 * size_t(q) + 64 * half);
            transpose16(v);
            for (int c = 0; c < 16; ++c) {
                const int i = 16 * half + c, k = i / 8, s = i % 8 / 2;
                const int64_t b = 4 * q + kQuadOrder[s];
                if (b < nb) _mm512_store_si512(panel + size_t(b) * Panel<T>::kBlockBytes + 64 * (2 * k + i % 2), v[c]);
            }
        }
    }
}

// y[t][0..15] (the lanes in `mask`) for the panel's rows and Tn tokens.
template <class T, int Tn>
void tile(const uint8_t * panel, int64_t nb, const uint8_t * const * act, const ActLayout & L, float * y, int64_t y_stride,
          __mmask16 mask) {
    __m512 acc[Tn], macc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = macc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t * pw = panel + size_t(b) * Panel<T>::kBlockBytes;
        __m512i w[8];
        for (int j = 0; j < 8; ++j) w[j] = _mm512_load_si512(pw + 64 * j);
        const __m512 dw = _mm512_load_ps(pw + Panel<T>::kD);
        // The block's slot in its quad: its bytes, d, offset and s in the activations.
        const size_t q = size_t(b / 4), at = 8 * size_t(kQuadOrder[b % 4]);
        for (int t = 0; t < Tn; ++t) {
            const uint8_t * a = act[t] + L.qs() + 128 * q + at;
            __m512i i0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], broadcast32(a));
            __m512i i1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], broadcast32(a + 4));
            for (int k = 1; k < 4; ++k) {
                i0 = _mm512_dpbusd_epi32(i0, w[2 * k], broadcast32(a + 32 * k));
                i1 = _mm512_dpbusd_epi32(i1, w[2 * k + 1], broadcast32(a + 32 * k + 4));
            }
            __m512i i = _mm512_add_epi32(i0, i1);
            if constexpr (level_offset<T>() != 0) i = _mm512_sub_epi32(i, broadcast32(act[t] + L.cpat() + 32 * q + at));
            const __m512 scale = _mm512_mul_ps(dw, broadcast_ps(act[t] + L.dpat() + 32 * q + at));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), scale, acc[t]);
            if constexpr (T::kMin)
                macc[t] = _mm512_fmadd_ps(_mm512_load_ps(pw + Panel<T>::kM), broadcast_ps(act[t] + L.spat() + 32 * q + at), macc[t]);
        }
    }
    for (int t = 0; t < Tn; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, T::kMin ? _mm512_add_ps(acc[t], macc[t]) : acc[t]);
}

// Rows [r0, r1): panels of 16 rows, tiles of up to 8 tokens.
template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    uint8_t * panel = scratch;
    uint8_t * staging = scratch + Panel<T>::panel_bytes(job.n_cols);
    const ActLayout L = act_layout(job.n_cols);
    const int64_t nb = job.n_cols / 32;
    avx2::for_each_lane_panel<kRows, avx512::kTileTokens>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) {
            tile<T, Tn>(panel, nb, act, L, y, job.y_stride, avx512::row_mask(n));
        });
}

}  // namespace vnni
