#pragma once
// Prefill of the K-quants (Q2_K ... Q6_K) on AVX2, lanes = rows, as
// avx512/kquant_prefill_vnni.h does with AVX-512 VNNI: eight rows are unpacked from the
// common form into a panel whose registers hold the same 4 levels of the 8 rows, so one
// maddubs with 4 bytes of a token broadcast multiplies 8 rows at once. maddubs leaves sums
// of pairs in 16 bits; the words of one scale are added there while they cannot overflow
// (run_words: levels <= kMaxLevel, |a| <= 128), and one madd by the 8 rows' scales (16 bits,
// in both halves of each row's lane) takes them to 32 bits. Per 32 elements of Q4_K and
// token: 8 maddubs and 1 madd for 8 rows, where tiles of rows one after another took 8
// maddubs and 8 madds (both run on the same two ports).
//
// The i-quants come in the same form with 8-bit levels (their values + 128, KForm in
// matmul_iquant_avx2.cpp): those are stored as two planes of nibbles (16 h + l), each
// plane's maddubs added in 16 bits, and the high plane's madd takes 16 times the scales.
//
// The integer sums are quant::vec_dot's and every float step is the AVX-512 panel's, so
// the results equal the AVX-512 VNNI prefill's bit for bit.
//
// Included inside avx2/matmul_kquant_avx2.cpp's and matmul_iquant_avx2.cpp's namespaces,
// after their block types, in the AVX2 build.

namespace lanes {

constexpr int64_t kRows = 8;

// Levels above 63 (8-bit) go in two planes of nibbles.
template <class T>
constexpr int kPlanes = T::kMaxLevel > 63 ? 2 : 1;

// Tokens of a tile: 3 x 4 sums (16-bit, 32-bit, float) and 4 temporaries fill the 16
// registers; with two planes 3 beat 2, 4 and 6 here.
template <class T>
constexpr int kTileTokens = kPlanes<T> == 2 ? 3 : 4;

// A panel super-block: levels [Planes][64 words of 4][8 rows][4 bytes], then per row
// (32-bit lanes) the scales of the 16 groups of 16 elements (in both 16-bit halves), the
// mins in pairs (mn_2p | mn_2p+1 << 16), d and dmin.
template <class T>
struct Panel {
    static constexpr size_t kPlaneBytes = 2048, kScales = kPlanes<T> * kPlaneBytes, kMinPairs = kScales + 512;
    static constexpr size_t kD = kMinPairs + 256, kDmin = kD + 32, kBlockBytes = kDmin + 32;
};

// One row's super-block on the way: its levels (8 registers), its scales as dwords with
// both halves set (scales 0-3 | 8-11, then 4-7 | 12-15: unpacklo/hi's order) and its min
// pairs, each turned into 8 rows' lanes by 8 x 8 dword transposes.
constexpr size_t kStagingBlockBytes = 352;
constexpr int kStagingRegisters = 11;

template <class T>
size_t panel_bytes(int64_t n_cols) {
    return size_t(n_cols / QK_K) * Panel<T>::kBlockBytes;
}
template <class T>
size_t scratch_bytes(int64_t n_cols) {
    return panel_bytes<T>(n_cols) + size_t(kRows) * size_t(n_cols / QK_K) * kStagingBlockBytes;
}

// Words of one scale summed in 16 bits before the madd: each maddubs lane adds two
// products of at most (a plane's) level * 128.
template <class T>
constexpr int run_words() {
    const int max_level = kPlanes<T> == 2 ? 15 : T::kMaxLevel;
    const int fit = 32767 / (2 * max_level * 128), words = T::kScaleElems / 4;
    return fit < words ? fit : words;
}

// Where staging register i's transposed register c goes in a panel super-block (levels:
// the first plane).
template <class T>
constexpr size_t lanes_offset(int i, int c) {
    if (i < 8) return 256 * size_t(i) + 32 * size_t(c);
    if (i < 10) return Panel<T>::kScales + 32 * size_t(c % 4 + 8 * (c / 4) + 4 * (i - 8));
    return Panel<T>::kMinPairs + 32 * size_t(c);
}

// Rows [r0, r0 + n) of the job (n <= 8) into a panel; missing rows are zeros (zero scales).
template <class T>
void unpack_panel(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    using Block = typename T::Block;
    const int64_t nsb = job.n_cols / QK_K;
    const size_t staging_row = size_t(nsb) * kStagingBlockBytes;
    if (n < kRows) std::memset(staging + size_t(n) * staging_row, 0, size_t(kRows - n) * staging_row);
    for (int64_t r = 0; r < n; ++r) {
        const auto * w = reinterpret_cast<const Block *>(job.w + size_t(r0 + r) * job.w_row_bytes);
        if (r + 1 < n) prefetch_bytes(job.w + size_t(r0 + r + 1) * job.w_row_bytes, job.w_row_bytes);
        for (int64_t s = 0; s < nsb; ++s) {
            const T u(w[s]);
            auto * out = reinterpret_cast<__m256i *>(staging + size_t(r) * staging_row + size_t(s) * kStagingBlockBytes);
            for (int j = 0; j < 8; ++j) _mm256_store_si256(out + j, u.q(j));
            const __m256i sc = u.scales();
            _mm256_store_si256(out + 8, _mm256_unpacklo_epi16(sc, sc));
            _mm256_store_si256(out + 9, _mm256_unpackhi_epi16(sc, sc));
            _mm256_store_si256(out + 10, u.mn());
            uint8_t * block = panel + size_t(s) * Panel<T>::kBlockBytes;
            reinterpret_cast<float *>(block + Panel<T>::kD)[r] = u.d();
            reinterpret_cast<float *>(block + Panel<T>::kDmin)[r] = u.dmin();
        }
    }
    for (int64_t s = 0; s < nsb; ++s) {
        uint8_t * block = panel + size_t(s) * Panel<T>::kBlockBytes;
        for (int64_t r = n; r < kRows; ++r) {
            reinterpret_cast<float *>(block + Panel<T>::kD)[r] = reinterpret_cast<float *>(block + Panel<T>::kDmin)[r] = 0.0f;
        }
        for (int i = 0; i < kStagingRegisters; ++i) {
            __m256i v[kRows];
            for (int r = 0; r < kRows; ++r) {
                v[r] = _mm256_load_si256(
                    reinterpret_cast<const __m256i *>(staging + size_t(r) * staging_row + size_t(s) * kStagingBlockBytes) + i);
            }
            transpose8(v);
            for (int c = 0; c < 8; ++c) {
                auto * out = reinterpret_cast<__m256i *>(block + lanes_offset<T>(i, c));
                if (kPlanes<T> == 2 && i < 8) {
                    const __m256i m4 = _mm256_set1_epi8(0x0f);
                    _mm256_store_si256(out, _mm256_and_si256(v[c], m4));
                    _mm256_store_si256(out + Panel<T>::kPlaneBytes / 32, _mm256_and_si256(_mm256_srli_epi16(v[c], 4), m4));
                } else {
                    _mm256_store_si256(out, v[c]);
                }
            }
        }
    }
}

inline __m256i load_lanes(const uint8_t * p) { return _mm256_load_si256(reinterpret_cast<const __m256i *>(p)); }
inline __m256i broadcast32(const uint8_t * p) { return _mm256_set1_epi32(load_as<int32_t>(p)); }

// y[t][0..n) for the panel's n rows and Tn tokens.
template <class T, int Tn>
void tile(const uint8_t * panel, int64_t nsb, const uint8_t * const * act, float * y, int64_t y_stride, int n) {
    constexpr int kGroups = T::kScaleElems / 16, kWords = T::kScaleElems / 4, kRun = run_words<T>();
    __m256 acc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t s = 0; s < nsb; ++s) {
        const uint8_t * pw = panel + size_t(s) * Panel<T>::kBlockBytes;
        const size_t at = size_t(s) * kActBlockBytes;
        __m256i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 16
        for (int g = 0; g < 16; g += kGroups) {
            const __m256i sc = load_lanes(pw + Panel<T>::kScales + 32 * g);
#pragma GCC unroll 8
            for (int h = 0; h < kWords; h += kRun) {
                __m256i s16[kPlanes<T>][Tn];
#pragma GCC unroll 8
                for (int i = 0; i < kRun; ++i) {
                    const int word = 4 * g + h + i;
                    __m256i w[kPlanes<T>];
                    for (int plane = 0; plane < kPlanes<T>; ++plane) w[plane] = load_lanes(pw + plane * Panel<T>::kPlaneBytes + 32 * word);
#pragma GCC unroll 8
                    for (int t = 0; t < Tn; ++t) {
                        const __m256i a = broadcast32(act[t] + at + 4 * word);
                        for (int plane = 0; plane < kPlanes<T>; ++plane) {
                            const __m256i p = _mm256_maddubs_epi16(w[plane], a);
                            s16[plane][t] = i == 0 ? p : _mm256_add_epi16(s16[plane][t], p);
                            keep_in_register(s16[plane][t]);  // else GCC reorders the adds into a tree and spills the products
                        }
                    }
                }
                for (int t = 0; t < Tn; ++t) {
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[0][t], sc));
                    // The high nibbles count 16 (16 x the scales still fits 16 bits).
                    if constexpr (kPlanes<T> == 2)
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[1][t], _mm256_slli_epi16(sc, 4)));
                }
            }
        }
        const __m256 d = _mm256_load_ps(reinterpret_cast<const float *>(pw + Panel<T>::kD));
        const __m256 dmin = _mm256_load_ps(reinterpret_cast<const float *>(pw + Panel<T>::kDmin));
        for (int t = 0; t < Tn; ++t) {
            __m256i msum = _mm256_madd_epi16(load_lanes(pw + Panel<T>::kMinPairs), broadcast32(act[t] + at + kActBsums));
            for (int p = 1; p < 8; ++p)
                msum = _mm256_add_epi32(msum, _mm256_madd_epi16(load_lanes(pw + Panel<T>::kMinPairs + 32 * p),
                                                                broadcast32(act[t] + at + kActBsums + 4 * p)));
            const __m256 da = _mm256_set1_ps(load_as<float>(act[t] + at + kActD));
            if constexpr (T::kCombinedMin) {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], msum)), _mm256_mul_ps(d, da), acc[t]);
            } else {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, da), acc[t]);
                acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, da), acc[t]);
            }
        }
    }
    for (int t = 0; t < Tn; ++t) store_lanes(y + t * y_stride, acc[t], n);
}

// Rows [r0, r1): panels of 8 rows, tiles of up to 4 tokens.
template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    const int64_t nsb = job.n_cols / QK_K;
    uint8_t * panel = scratch;
    uint8_t * staging = scratch + panel_bytes<T>(job.n_cols);
    for_each_lane_panel<kRows, kTileTokens<T>>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) { tile<T, Tn>(panel, nsb, act, y, job.y_stride, n); });
}

}  // namespace lanes
