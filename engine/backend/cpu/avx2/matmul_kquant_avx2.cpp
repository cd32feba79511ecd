// The K-quants on AVX2: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K against Q8_K activations quantized
// exactly as quantize_row_q8_K_ref.
//
// Every type is read through one form: per super-block of 256, eight registers of 32
// unsigned levels (q, in element order), the integer scale of each 16 elements as a
// 16-bit pattern per register (sc; all 16 at once: scales), the integer "min" coefficient
// of each 16 elements (mn), and two float scales, so that
//     sum(w * a) = d * da * sum_j sc_j . (q_j . a_j)  -  dmin * da * sum_g mn_g * bsum_g.
// Signed levels (Q3_K: q - 4, Q6_K: q - 32) become unsigned levels with mn = offset * sc
// and dmin = d. The integer sums are those of quant::vec_dot, exactly; only the float
// accumulation differs. Decode reads super-blocks from the model file, each unpacked once
// for up to 4 tokens; prefill unpacks panels of 8 rows with the rows in a register's lanes
// (avx2/kquant_prefill_avx2.h; 16 rows with AVX-512 VNNI, avx512/kquant_prefill_vnni.h).

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/avx2/matmul_panels_avx2.h"
#include "engine/backend/cpu/avx2/q8k_act_avx2.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/quant/quant_blocks.h"
#if defined(LONGREAD_KQUANT_VNNI)
#include "engine/backend/cpu/avx512/avx512_util.h"
#endif

// Built twice: here for AVX2, and by avx512/matmul_kquant_vnni.cpp for AVX-512 VNNI, whose
// prefill runs avx512/kquant_prefill_vnni.h (decode is the same code).
#if !defined(LONGREAD_KQUANT_KERNEL_TABLE)
#define LONGREAD_KQUANT_KERNEL_TABLE avx2_kquant_matmul_kernel
#endif

namespace lr::cpu {
namespace {

using namespace avx2;
using namespace lr::quant;

// Activations: avx2/q8k_act_avx2.h (one super-block in kActBlockBytes: qs, bsums, d).
size_t act_row_bytes(int64_t n_cols) { return q8k_act_row_bytes(n_cols); }

// ---- weights: one super-block in the common form ---------------------------------------------

inline __m256i nibbles() { return _mm256_set1_epi8(0x0F); }

// 8 unsigned 6-bit scales and mins of Q4_K/Q5_K (unpack_scale_min_k4), as two 8-byte groups.
inline void scales_mins_k4(const uint8_t * packed, uint64_t & scales, uint64_t & mins) {
    uint32_t u[4];
    std::memcpy(u, packed, 12);
    constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
    const uint32_t m03 = u[1] & kmask1;
    u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
    u[0] &= kmask1;
    scales = uint64_t(u[0]) | (uint64_t(u[1]) << 32);
    mins = uint64_t(m03) | (uint64_t(u[3]) << 32);
}

// [v0 v0 v1 v1 ... v7 v7] from 8 int16: a value per 32 elements as one per 16.
inline __m256i each_twice(__m128i v) { return _mm256_set_m128i(_mm_unpackhi_epi16(v, v), _mm_unpacklo_epi16(v, v)); }

// [s_j x 16] (16-bit) from 8 byte scales, for registers of one 32-element sub-block each.
struct Scales8 {
    __m256i s;  // the 8 scales as int16, in both 128-bit lanes
    explicit Scales8(uint64_t bytes) : s(_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(bytes))))) {}
    __m256i pattern(int j) const { return _mm256_shuffle_epi8(s, _mm256_set1_epi16(int16_t((2 * j) | ((2 * j + 1) << 8)))); }
    __m256i all() const { return each_twice(_mm256_castsi256_si128(s)); }  // the scale of each 16 elements
};

// [s_2j x 8 | s_2j+1 x 8] (16-bit) from 16 signed scales, one per 16 elements.
struct Scales16 {
    __m256i lo, hi;  // scales 0..7 and 8..15 as int16, each in both 128-bit lanes
    explicit Scales16(__m128i bytes_i8) {
        const __m256i s16 = _mm256_cvtepi8_epi16(bytes_i8);
        lo = _mm256_permute2x128_si256(s16, s16, 0x00);
        hi = _mm256_permute2x128_si256(s16, s16, 0x11);
    }
    __m256i all() const { return _mm256_permute2x128_si256(lo, hi, 0x20); }
    __m256i pattern(int j) const {
        const int k = j & 3;
        const int16_t a = int16_t((4 * k) | ((4 * k + 1) << 8)), b = int16_t((4 * k + 2) | ((4 * k + 3) << 8));
        const __m256i mask = _mm256_setr_epi16(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
        return _mm256_shuffle_epi8(j < 4 ? lo : hi, mask);
    }
};

// levels | (bit `bit` of each byte of `bits` moved to bit `to`), for levels below 1 << to:
// with AVX-512 a byte mask and a masked add; with AVX2 a 16-bit shift (at most 5 places,
// so every bit the mask keeps comes from its own byte) and a mask, three instructions where
// a compare took four. (vpdpwssd for the scales' madd + add was slower here: its latency is
// on the sums' chain.)
inline __m256i or_bit(__m256i levels, __m256i bits, int bit, int to) {
    const __m256i value = _mm256_set1_epi8(int8_t(1 << to));
#if defined(LONGREAD_KQUANT_VNNI)
    const __mmask32 set = _mm256_test_epi8_mask(bits, _mm256_set1_epi8(int8_t(1 << bit)));
    return _mm256_mask_add_epi8(levels, set, levels, value);
#else
    const __m256i moved = bit <= to ? _mm256_slli_epi16(bits, to - bit) : _mm256_srli_epi16(bits, bit - to);
    return _mm256_or_si256(levels, _mm256_and_si256(moved, value));
#endif
}

inline __m256i load32(const uint8_t * p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); }
inline __m256i two_bits(const uint8_t * qs, int j) {
    return _mm256_and_si256(_mm256_srli_epi16(load32(qs + 32 * (j / 4)), 2 * (j % 4)), _mm256_set1_epi8(3));
}

struct Q2K {
    using Block = block_q2_K;
    static constexpr int kMaxLevel = 3;  // of the unsigned levels q(j)
    static constexpr bool kCombinedMin = false;
    static constexpr int kScaleElems = 16;  // elements per scale
    const Block & b;
    Scales16 sc;
    explicit Q2K(const Block & blk)
        : b(blk), sc(_mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(blk.scales)), _mm_set1_epi8(0x0F))) {}
    __m256i q(int j) const { return two_bits(b.qs, j); }
    __m256i scale(int j) const { return sc.pattern(j); }
    __m256i scales() const { return sc.all(); }  // int16, one per 16 elements
    __m256i mn() const {
        const __m128i m = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b.scales)), 4),
                                        _mm_set1_epi8(0x0F));
        return _mm256_cvtepu8_epi16(m);
    }
    float d() const { return f16_to_f32(b.d); }
    float dmin() const { return f16_to_f32(b.dmin); }
};

// The 16 signed 6-bit scales of Q3_K: low 4 bits from the first 8 bytes (nibbles), high 2
// from the last 4. In registers throughout: built in memory, the scales were read back
// with a 16-byte load from two 8-byte stores, which store forwarding cannot serve (a
// stall on every super-block: Q3_K decode was 2.5x slower).
inline __m128i q3k_scales(const uint8_t * packed) {
    const __m128i a01 = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(packed));  // [a0, a1, 0, 0]
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(a01, 0x44), _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi32(0x0f0f0f0f));
    const __m128i tmp = _mm_set1_epi32(int(load_as<uint32_t>(packed + 8)));
    const __m128i high = _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(tmp, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi32(0x03030303)), 4);
    return _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
}

struct Q3K {
    using Block = block_q3_K;
    static constexpr int kMaxLevel = 7;  // of the unsigned levels q(j)
    static constexpr bool kCombinedMin = true;
    static constexpr int kScaleElems = 16;  // elements per scale
    const Block & b;
    Scales16 sc;
    __m256i hmask;
    explicit Q3K(const Block & blk) : b(blk), sc(q3k_scales(blk.scales)), hmask(load32(blk.hmask)) {}
    __m256i q(int j) const { return or_bit(two_bits(b.qs, j), hmask, j, 2); }
    __m256i scale(int j) const { return sc.pattern(j); }
    __m256i scales() const { return sc.all(); }                    // int16, one per 16 elements
    __m256i mn() const { return _mm256_slli_epi16(sc.all(), 2); }  // 4 * sc: the offset of q - 4
    float d() const { return f16_to_f32(b.d); }
    float dmin() const { return d(); }
};

struct Q4K {
    using Block = block_q4_K;
    static constexpr int kMaxLevel = 15;  // of the unsigned levels q(j)
    static constexpr bool kCombinedMin = false;
    static constexpr int kScaleElems = 32;  // elements per scale
    const Block & b;
    uint64_t mins;
    Scales8 sc;
    static Scales8 make(const uint8_t * packed, uint64_t & mins) {
        uint64_t scales;
        scales_mins_k4(packed, scales, mins);
        return Scales8(scales);
    }
    explicit Q4K(const Block & blk) : b(blk), mins(0), sc(make(blk.scales, mins)) {}
    __m256i q(int j) const {
        const __m256i v = load32(b.qs + 32 * (j / 2));
        return _mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, nibbles());
    }
    __m256i scale(int j) const { return sc.pattern(j); }
    __m256i scales() const { return sc.all(); }  // int16, one per 16 elements
    __m256i mn() const { return each_twice(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(mins)))); }
    float d() const { return f16_to_f32(b.d); }
    float dmin() const { return f16_to_f32(b.dmin); }
};

struct Q5K {
    using Block = block_q5_K;
    static constexpr int kMaxLevel = 31;  // of the unsigned levels q(j)
    static constexpr bool kCombinedMin = false;
    static constexpr int kScaleElems = 32;  // elements per scale
    const Block & b;
    uint64_t mins;
    Scales8 sc;
    __m256i qh;
    explicit Q5K(const Block & blk) : b(blk), mins(0), sc(Q4K::make(blk.scales, mins)), qh(load32(blk.qh)) {}
    __m256i q(int j) const {
        const __m256i v = load32(b.qs + 32 * (j / 2));
        return or_bit(_mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, nibbles()), qh, j, 4);
    }
    __m256i scale(int j) const { return sc.pattern(j); }
    __m256i scales() const { return sc.all(); }  // int16, one per 16 elements
    __m256i mn() const { return each_twice(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(mins)))); }
    float d() const { return f16_to_f32(b.d); }
    float dmin() const { return f16_to_f32(b.dmin); }
};

struct Q6K {
    using Block = block_q6_K;
    static constexpr int kMaxLevel = 63;  // of the unsigned levels q(j)
    static constexpr bool kCombinedMin = true;
    static constexpr int kScaleElems = 16;  // elements per scale
    const Block & b;
    Scales16 sc;
    explicit Q6K(const Block & blk) : b(blk), sc(_mm_loadu_si128(reinterpret_cast<const __m128i *>(blk.scales))) {}
    __m256i q(int j) const {
        const int h = j / 4, g = j % 4;
        const __m256i l = load32(b.ql + 64 * h + 32 * (g & 1));
        const __m256i low = _mm256_and_si256(g < 2 ? l : _mm256_srli_epi16(l, 4), nibbles());
        const __m256i hq = load32(b.qh + 32 * h);
        const __m256i high = _mm256_and_si256(g == 3 ? _mm256_srli_epi16(hq, 2) : _mm256_slli_epi16(hq, 4 - 2 * g), _mm256_set1_epi8(0x30));
        return _mm256_or_si256(low, high);
    }
    __m256i scale(int j) const { return sc.pattern(j); }
    __m256i scales() const { return sc.all(); }                    // int16, one per 16 elements
    __m256i mn() const { return _mm256_slli_epi16(sc.all(), 5); }  // 32 * sc: the offset of q - 32
    float d() const { return f16_to_f32(b.d); }
    float dmin() const { return d(); }
};

// ---- decode ------------------------------------------------------------------------------------
// Each super-block is read and unpacked once for all Tn tokens (decode steps of a batch of
// sequences); every token's sums run in the order they run for it alone.

template <class T, int Tn>
void dot_row(const typename T::Block * w, const uint8_t * const * act, int64_t nsb, float * y, int64_t y_stride) {
    __m256 acc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t s = 0; s < nsb; ++s) {
        prefetch_ahead(w + s, sizeof(w[s]));
        const T u(w[s]);
        const size_t at = size_t(s) * kActBlockBytes;
        __m256i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8  // constant j: q(j) and scale(j) fold their shifts and shuffle patterns
        for (int j = 0; j < 8; ++j) {
            const __m256i q = u.q(j), sc = u.scale(j);
            for (int t = 0; t < Tn; ++t) {
                const __m256i p = _mm256_maddubs_epi16(q, _mm256_load_si256(reinterpret_cast<const __m256i *>(act[t] + at) + j));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, sc));
            }
        }
        const __m256i mn = u.mn();
        for (int t = 0; t < Tn; ++t) {
            const __m256i msum = _mm256_madd_epi16(mn, _mm256_load_si256(reinterpret_cast<const __m256i *>(act[t] + at + kActBsums)));
            float da;
            std::memcpy(&da, act[t] + at + kActD, sizeof da);
            if constexpr (T::kCombinedMin) {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], msum)), _mm256_set1_ps(u.d() * da), acc[t]);
            } else {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(u.d() * da), acc[t]);
                acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(u.dmin() * da), acc[t]);
            }
        }
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = hsum8(acc[t]);
}

// ---- prefill -----------------------------------------------------------------------------------
#if defined(LONGREAD_KQUANT_VNNI)
#include "engine/backend/cpu/avx512/kquant_prefill_vnni.h"  // inside this namespace: it uses the block types

template <class T>
size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    return vnni::scratch_bytes(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    vnni::prefill_rows<T>(job, r0, r1, scratch);
}
#else
#include "engine/backend/cpu/avx2/kquant_prefill_avx2.h"  // inside this namespace: it uses the block types

template <class T>
size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    return lanes::scratch_bytes<T>(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    lanes::prefill_rows<T>(job, r0, r1, scratch);
}
#endif

template <class T>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    using Block = typename T::Block;
    const int64_t nsb = job.n_cols / QK_K;
    auto row = [&](int64_t r) { return reinterpret_cast<const Block *>(job.w + size_t(r) * job.w_row_bytes); };
    if (job.n_tokens <= kRowByRowTokens) {
        for_each_row_token_group(job, r0, r1, [&]<int Tn>(int64_t r, const uint8_t * const * act, float * y) {
            dot_row<T, Tn>(row(r), act, nsb, y, job.y_stride);
        });
        return;
    }
    prefill_rows<T>(job, r0, r1, scratch);
}

template <class T>
constexpr MatmulKernel kKernel{act_row_bytes, q8k_convert_act, q8k_act_to_standard, scratch_bytes<T>, rows<T>};

}  // namespace

const MatmulKernel * LONGREAD_KQUANT_KERNEL_TABLE(DType type) {
    switch (type) {
        case DType::Q2_K: return &kKernel<Q2K>;
        case DType::Q3_K: return &kKernel<Q3K>;
        case DType::Q4_K: return &kKernel<Q4K>;
        case DType::Q5_K: return &kKernel<Q5K>;
        case DType::Q6_K: return &kKernel<Q6K>;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
