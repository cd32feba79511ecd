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
// The integer sums are quant::vec_dot's and every float step is the AVX-512 panel's, so
// the results equal the AVX-512 VNNI prefill's bit for bit.
//
// Included inside avx2/matmul_kquant_avx2.cpp's namespace, after its block types, in the
// AVX2 build.

namespace lanes {

constexpr int64_t kRows = 8;
constexpr int kTileTokens = 4;  // 3 x 4 sums (16-bit, 32-bit, float) and 4 temporaries: the 16 registers

// A panel super-block: levels [64 words of 4][8 rows][4 bytes], then per row (32-bit
// lanes) the scales of the 16 groups of 16 elements (in both 16-bit halves), the mins in
// pairs (mn_2p | mn_2p+1 << 16), d and dmin.
constexpr size_t kLevels = 0, kScales = 2048, kMinPairs = 2560, kD = 2816, kDmin = 2848;
constexpr size_t kBlockBytes = 2880;
// One row's super-block on the way: its levels (8 registers), its scales as dwords with
// both halves set (scales 0-3 | 8-11, then 4-7 | 12-15: unpacklo/hi's order) and its min
// pairs, each turned into 8 rows' lanes by 8 x 8 dword transposes.
constexpr size_t kStagingBlockBytes = 352;
constexpr int kStagingRegisters = 11;

inline size_t panel_bytes(int64_t n_cols) { return size_t(n_cols / QK_K) * kBlockBytes; }
inline size_t scratch_bytes(int64_t n_cols) { return panel_bytes(n_cols) + size_t(kRows) * size_t(n_cols / QK_K) * kStagingBlockBytes; }

// Words of one scale summed in 16 bits before the madd: each maddubs lane adds two
// products of at most kMaxLevel * 128.
template <class T>
constexpr int run_words() {
    const int fit = 32767 / (2 * T::kMaxLevel * 128), words = T::kScaleElems / 4;
    return fit < words ? fit : words;
}

// Where staging register i's transposed register c goes in a panel super-block.
constexpr size_t lanes_offset(int i, int c) {
    if (i < 8) return kLevels + 256 * size_t(i) + 32 * size_t(c);
    if (i < 10) return kScales + 32 * size_t(c % 4 + 8 * (c / 4) + 4 * (i - 8));
    return kMinPairs + 32 * size_t(c);
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
            uint8_t * block = panel + size_t(s) * kBlockBytes;
            reinterpret_cast<float *>(block + kD)[r] = u.d();
            reinterpret_cast<float *>(block + kDmin)[r] = u.dmin();
        }
    }
    for (int64_t s = 0; s < nsb; ++s) {
        uint8_t * block = panel + size_t(s) * kBlockBytes;
        for (int64_t r = n; r < kRows; ++r) reinterpret_cast<float *>(block + kD)[r] = reinterpret_cast<float *>(block + kDmin)[r] = 0.0f;
        for (int i = 0; i < kStagingRegisters; ++i) {
            __m256i v[kRows];
            for (int r = 0; r < kRows; ++r) {
                v[r] = _mm256_load_si256(
                    reinterpret_cast<const __m256i *>(staging + size_t(r) * staging_row + size_t(s) * kStagingBlockBytes) + i);
            }
            transpose8(v);
            for (int c = 0; c < 8; ++c) _mm256_store_si256(reinterpret_cast<__m256i *>(block + lanes_offset(i, c)), v[c]);
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
        const uint8_t * pw = panel + size_t(s) * kBlockBytes;
        const size_t at = size_t(s) * kActBlockBytes;
        __m256i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 16
        for (int g = 0; g < 16; g += kGroups) {
            const __m256i sc = load_lanes(pw + kScales + 32 * g);
#pragma GCC unroll 8
            for (int h = 0; h < kWords; h += kRun) {
                __m256i s16[Tn];
#pragma GCC unroll 8
                for (int i = 0; i < kRun; ++i) {
                    const int word = 4 * g + h + i;
                    const __m256i w = load_lanes(pw + kLevels + 32 * word);
                    for (int t = 0; t < Tn; ++t) {
                        const __m256i p = _mm256_maddubs_epi16(w, broadcast32(act[t] + at + 4 * word));
                        s16[t] = i == 0 ? p : _mm256_add_epi16(s16[t], p);
                        keep_in_register(s16[t]);  // else GCC reorders the adds into a tree and spills the products
                    }
                }
                for (int t = 0; t < Tn; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
            }
        }
        const __m256 d = _mm256_load_ps(reinterpret_cast<const float *>(pw + kD));
        const __m256 dmin = _mm256_load_ps(reinterpret_cast<const float *>(pw + kDmin));
        for (int t = 0; t < Tn; ++t) {
            __m256i msum = _mm256_madd_epi16(load_lanes(pw + kMinPairs), broadcast32(act[t] + at + kActBsums));
            for (int p = 1; p < 8; ++p)
                msum = _mm256_add_epi32(msum, _mm256_madd_epi16(load_lanes(pw + kMinPairs + 32 * p),
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
    uint8_t * staging = scratch + panel_bytes(job.n_cols);
    for_each_lane_panel<kRows, kTileTokens>(
        job, r0, r1, [&](int64_t p0, int64_t n) { unpack_panel<T>(job, p0, n, panel, staging); },
        [&]<int Tn>(const uint8_t * const * act, float * y, int n) { tile<T, Tn>(panel, nsb, act, y, job.y_stride, n); });
}

}  // namespace lanes
