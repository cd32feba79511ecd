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

// The offset taken out of every block's integer sum with cpat.
template <class T>
constexpr int level_offset() {
    return T::kSigned ? 128 : T::kOffset;
}

// A panel block: [8 groups][16 rows][4 bytes] levels, d[16], then m[16] for the _1 types.
// Group j = 2k + h holds elements 8k + 4h .. 8k + 4h + 3 of the block: the bytes at
// 32k + 8s + 4h of its quad of activations, s the block's slot.
template <class T>
constexpr size_t block_bytes() {
    return 512 + 64 + (T::kMin ? 64 : 0);
}

// A panel, then the staging rows unpack_panel fills on the way.
template <class T>
size_t panel_bytes(int64_t n_cols) {
    return size_t(n_cols / 32) * block_bytes<T>();
}
template <class T>
size_t scratch_bytes(int64_t n_cols) {
    return panel_bytes<T>(n_cols) + size_t(kRows) * size_t((n_cols / 32 + 3) / 4) * 128;
}

// Rows [r0, r0 + n) of the job (n <= 16) into a panel; missing rows get zero scales. Each
// row is first unpacked whole into `staging` in the quad form (read from memory one row at
// a time, as the hardware prefetcher likes), then 16 x 16 dwords at a time turned into
// groups of 16 rows.
template <class T>
void unpack_panel(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    using Block = typename T::Block;
    const int64_t nb = job.n_cols / 32, n_quads = (nb + 3) / 4;
    const size_t staging_row = size_t(n_quads) * 128;
    if (n < kRows) {
        std::memset(staging + size_t(n) * staging_row, 0, size_t(kRows - n) * staging_row);
        for (int64_t b = 0; b < nb; ++b) {
            for (int64_t r = n; r < kRows; ++r) {
                reinterpret_cast<float *>(panel + size_t(b) * block_bytes<T>() + 512)[r] = 0.0f;
                if constexpr (T::kMin) reinterpret_cast<float *>(panel + size_t(b) * block_bytes<T>() + 576)[r] = 0.0f;
            }
        }
    }
    for (int64_t r = 0; r < n; ++r) {
        const auto * w = reinterpret_cast<const Block *>(job.w + size_t(r0 + r) * job.w_row_bytes);
        if (r + 1 < n) avx2::prefetch_bytes(job.w + size_t(r0 + r + 1) * job.w_row_bytes, job.w_row_bytes);
        auto * out = reinterpret_cast<__m256i *>(staging + size_t(r) * staging_row);
        for (int64_t q = 0; q < n_quads; ++q, out += 4) {
            __m256i wq[4];
            alignas(32) float d[8], m[8];
            __m256 dv, mv;
            load_quad<T>(w + 4 * q, nb - 4 * q, wq, dv, mv);
            for (int k = 0; k < 4; ++k) {
                if constexpr (T::kSigned) wq[k] = _mm256_xor_si256(wq[k], _mm256_set1_epi8(char(0x80)));
                _mm256_store_si256(out + k, wq[k]);
            }
            _mm256_store_ps(d, dv);
            _mm256_store_ps(m, mv);
            for (int s = 0; s < 4; ++s) {
                const int64_t b = 4 * q + kQuadOrder[s];
                if (b >= nb) continue;
                uint8_t * block = panel + size_t(b) * block_bytes<T>();
                reinterpret_cast<float *>(block + 512)[r] = d[2 * s];
                if constexpr (T::kMin) reinterpret_cast<float *>(block + 576)[r] = m[2 * s];
            }
        }
    }
    // Dword i = 8k + 2s + h of a quad is group 2k + h of the block in slot s.
    for (int64_t q = 0; q < n_quads; ++q) {
        for (int half = 0; half < 2; ++half) {
            __m512i v[kRows];
            for (int r = 0; r < kRows; ++r) v[r] = _mm512_load_si512(staging + size_t(r) * staging_row + 128 * size_t(q) + 64 * half);
            transpose16(v);
            for (int c = 0; c < 16; ++c) {
                const int i = 16 * half + c, k = i / 8, s = i % 8 / 2;
                const int64_t b = 4 * q + kQuadOrder[s];
                if (b < nb) _mm512_store_si512(panel + size_t(b) * block_bytes<T>() + 64 * (2 * k + i % 2), v[c]);
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
        const uint8_t * pw = panel + size_t(b) * block_bytes<T>();
        __m512i w[8];
        for (int j = 0; j < 8; ++j) w[j] = _mm512_load_si512(pw + 64 * j);
        const __m512 dw = _mm512_load_ps(pw + 512);
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
                macc[t] = _mm512_fmadd_ps(_mm512_load_ps(pw + 576), broadcast_ps(act[t] + L.spat() + 32 * q + at), macc[t]);
        }
    }
    for (int t = 0; t < Tn; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, T::kMin ? _mm512_add_ps(acc[t], macc[t]) : acc[t]);
}

// Rows [r0, r1): panels of 16 rows, tiles of up to 8 tokens.
template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    uint8_t * panel = scratch;
    uint8_t * staging = scratch + panel_bytes<T>(job.n_cols);
    const ActLayout L = act_layout(job.n_cols);
    const int64_t nb = job.n_cols / 32;
    avx2::for_each_lane_panel<kRows, avx512::kTileTokens>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) {
            tile<T, Tn>(panel, nb, act, L, y, job.y_stride, avx512::row_mask(n));
        });
}

}  // namespace vnni
