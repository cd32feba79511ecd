#pragma once
// Prefill of the legacy block types (Q4_0 ... IQ4_NL, MXFP4) on AVX2, lanes = rows, as
// avx512/legacy_prefill_vnni.h does with AVX-512 VNNI: eight rows are unpacked into a panel
// whose registers hold the same 4 levels of the 8 rows, so one maddubs with 4 bytes of a
// token broadcast multiplies 8 rows at once, and a block's scaling (a madd, a cvt, a mul
// and an fma) serves 8 rows. maddubs leaves sums of pairs in 16 bits; a block's words are
// added there while they cannot overflow (run_words: levels <= 15 or 31, |a| <= 127).
//
// Signed values (Q8_0, IQ4_NL, MXFP4) are stored with 128 added, as in the VNNI panel, but
// as two planes of nibbles (w + 128 = 16 h + l): maddubs over 8-bit levels would overflow
// its 16-bit pairs, over nibbles it cannot, and 16 * sum(h a) + sum(l a) is the sum. On
// this Zen 4 the sign trick the row tiles used (|w| * sign(a, w)) costs a multiply-port
// slot per 32 products, as maddubs does: per block, token and 8 rows, the planes take 20
// such slots where rows one after another took 28 (Q4_0: 11 where they took 14).
//
// The integer sums are quant::vec_dot's (the offsets 8, 16 and 128 taken out with the
// activation block's sum, cpat) and every float step is the AVX-512 panel's, so the results
// equal the AVX-512 VNNI prefill's bit for bit. Included inside avx2/matmul_legacy_avx2.cpp's
// namespace, after its block types, in the AVX2 build. The activations are the quad layout's.

namespace lanes {

constexpr int64_t kRows = 8;
// Tokens of a tile, as measured here (signed values: 6 beat 3, 4 and 8 by 3-10 %).
template <class T>
constexpr int kTileTokens = T::kSigned ? 6 : 8;

// Signed values: two planes of nibbles.
template <class T>
constexpr int kPlanes = T::kSigned ? 2 : 1;

template <class T>
using Panel = LanePanel<T, kRows, kPlanes<T>>;  // the panel's geometry

// Words of a block summed in 16 bits before the madd.
template <class T>
constexpr int run_words() {
    constexpr int max_level = [] {
        if constexpr (T::kSigned) return 15;  // a nibble plane
        else return T::kMaxLevel;
    }();
    const int fit = 32767 / (2 * max_level * 127);
    return fit < 8 ? fit : 8;
}

// Rows [r0, r0 + n) of the job (n <= 8) into a panel (missing rows: zeros): each row
// unpacked whole into `staging` (stage_panel_rows), then 8 x 8 dwords at a time turned into
// groups of 8 rows.
template <class T>
void unpack_panel(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    stage_panel_rows<T, Panel<T>>(job, r0, n, panel, staging);
    const int64_t nb = job.n_cols / 32, n_quads = (nb + 3) / 4;
    const size_t staging_row = size_t(n_quads) * 128;
    // Dword c = 2s + h of register k of a quad is group 2k + h of the block in slot s.
    for (int64_t q = 0; q < n_quads; ++q) {
        for (int k = 0; k < 4; ++k) {
            __m256i v[kRows];
            for (int r = 0; r < kRows; ++r)
                v[r] = _mm256_load_si256(reinterpret_cast<const __m256i *>(staging + size_t(r) * staging_row + 128 * size_t(q)) + k);
            transpose8(v);
            for (int c = 0; c < 8; ++c) {
                const int64_t b = 4 * q + kQuadOrder[c / 2];
                if (b >= nb) continue;
                uint8_t * group = panel + size_t(b) * Panel<T>::kBlockBytes + 32 * (2 * k + c % 2);
                if constexpr (kPlanes<T> == 2) {
                    const __m256i m4 = _mm256_set1_epi8(0x0f);
                    _mm256_store_si256(reinterpret_cast<__m256i *>(group), _mm256_and_si256(v[c], m4));
                    _mm256_store_si256(reinterpret_cast<__m256i *>(group + Panel<T>::kPlaneBytes),
                                       _mm256_and_si256(_mm256_srli_epi16(v[c], 4), m4));
                } else {
                    _mm256_store_si256(reinterpret_cast<__m256i *>(group), v[c]);
                }
            }
        }
    }
}

inline __m256i broadcast32(const uint8_t * p) { return _mm256_set1_epi32(load_as<int32_t>(p)); }
inline __m256 broadcast_ps(const uint8_t * p) { return _mm256_set1_ps(load_as<float>(p)); }

// y[t][0..n) for the panel's n rows and Tn tokens.
template <class T, int Tn>
void tile(const uint8_t * panel, int64_t nb, const uint8_t * const * act, const ActLayout & L, float * y, int64_t y_stride, int n) {
    constexpr int kRun = run_words<T>();
    __m256 acc[Tn], macc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = macc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t * pw = panel + size_t(b) * Panel<T>::kBlockBytes;
        // The block's slot in its quad: its bytes, d, offset and s in the activations.
        const size_t q = size_t(b / 4), at = 8 * size_t(kQuadOrder[b % 4]);
        // s16[plane][t]: each plane's maddubs of a run of words, on the same broadcast bytes.
        __m256i isum[Tn];
#pragma GCC unroll 8
        for (int h = 0; h < 8; h += kRun) {
            __m256i s16[kPlanes<T>][Tn];
#pragma GCC unroll 8
            for (int i = 0; i < kRun; ++i) {
                const int j = h + i;
                __m256i w[kPlanes<T>];
                for (int plane = 0; plane < kPlanes<T>; ++plane)
                    w[plane] = _mm256_load_si256(reinterpret_cast<const __m256i *>(pw + plane * Panel<T>::kPlaneBytes) + j);
#pragma GCC unroll 8  // else GCC keeps this loop, and the sums in memory
                for (int t = 0; t < Tn; ++t) {
                    const __m256i a = broadcast32(act[t] + L.qs() + 128 * q + at + 32 * (j / 2) + 4 * (j % 2));
                    for (int plane = 0; plane < kPlanes<T>; ++plane) {
                        const __m256i p = _mm256_maddubs_epi16(w[plane], a);
                        s16[plane][t] = i == 0 ? p : _mm256_add_epi16(s16[plane][t], p);
                        keep_in_register(s16[plane][t]);  // else GCC reorders the adds into a tree and spills the products
                    }
                }
            }
            for (int t = 0; t < Tn; ++t) {
                __m256i s32 = _mm256_madd_epi16(s16[0][t], _mm256_set1_epi16(1));
                if constexpr (kPlanes<T> == 2)
                    s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(s16[1][t], _mm256_set1_epi16(16)));  // the high nibbles count 16
                isum[t] = h == 0 ? s32 : _mm256_add_epi32(isum[t], s32);
            }
        }
        const __m256 dw = _mm256_load_ps(reinterpret_cast<const float *>(pw + Panel<T>::kD));
        for (int t = 0; t < Tn; ++t) {
            __m256i i = isum[t];
            if constexpr (level_offset<T>() != 0) i = _mm256_sub_epi32(i, broadcast32(act[t] + L.cpat() + 32 * q + at));
            const __m256 scale = _mm256_mul_ps(dw, broadcast_ps(act[t] + L.dpat() + 32 * q + at));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), scale, acc[t]);
            if constexpr (T::kMin)
                macc[t] = _mm256_fmadd_ps(_mm256_load_ps(reinterpret_cast<const float *>(pw + Panel<T>::kM)),
                                          broadcast_ps(act[t] + L.spat() + 32 * q + at), macc[t]);
        }
    }
    for (int t = 0; t < Tn; ++t) store_lanes(y + t * y_stride, T::kMin ? _mm256_add_ps(acc[t], macc[t]) : acc[t], n);
}

// Rows [r0, r1): panels of 8 rows, tiles of up to 8 tokens.
template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    uint8_t * panel = scratch;
    uint8_t * staging = scratch + Panel<T>::panel_bytes(job.n_cols);
    const ActLayout L = act_layout(job.n_cols);
    const int64_t nb = job.n_cols / 32;
    for_each_lane_panel<kRows, kTileTokens<T>>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) { tile<T, Tn>(panel, nb, act, L, y, job.y_stride, n); });
}

}  // namespace lanes
