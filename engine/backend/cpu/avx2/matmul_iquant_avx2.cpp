// The i-quants with 256-element super-blocks (IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ1_S, IQ1_M) and TQ2_0 on AVX2, against Q8_K activations converted exactly as
// quantize_row_q8_K_ref (q8k_act_avx2.h).
//
// Every type is read through one form: per super-block, eight registers w_j of 32 signed
// levels (elements 32j..32j+31 in order: grid magnitudes with their signs applied), the
// integer scale of each element as a 16-bit pattern per register (sc_j), and one float d_w
// (the super-block scale, times the type's power-of-two factor), so that
//     sum(w * a) = d_w * d_a * sum over the 8 int32 lanes of sum_j madd(w_j . a_j, sc_j),
// the products taken as |w| * sign(a, w) (maddubs: |w| <= 127, so no 16-bit overflow).
// IQ1_S/IQ1_M add a delta of +-1/8 per group: a second form (dl_j, +-1 per element) whose
// sum, scaled by 1/8, is accumulated apart, as llama.cpp does. The integer sums are
// quant::vec_dot's exactly; the float accumulation follows llama.cpp's x86 kernels (one
// fmadd of the 8 int32 lanes per super-block, a horizontal sum at the end). Decode reads
// super-blocks from the model file, each unpacked once for up to 4 tokens. Prefill takes the
// K-quants' lanes panels (KForm below), whose float order is the AVX-512 VNNI panel's.

#include <type_traits>

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/avx2/matmul_panels_avx2.h"
#include "engine/backend/cpu/avx2/q8k_act_avx2.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quant/quant_grids.h"
#if defined(LONGREAD_IQUANT_VNNI)
#include "engine/backend/cpu/avx512/avx512_util.h"
#endif

// Built twice: here for AVX2, and by avx512/matmul_iquant_vnni.cpp for AVX-512 VNNI, whose
// prefill runs the K-quants' (avx512/kquant_prefill_vnni.h) on the form KForm gives.
#if !defined(LONGREAD_IQUANT_KERNEL_TABLE)
#define LONGREAD_IQUANT_KERNEL_TABLE avx2_iquant_matmul_kernel
#endif

namespace lr::cpu {
namespace {

using namespace avx2;
using namespace lr::quant;

// ---- helpers -------------------------------------------------------------------------------

inline __m256i load32(const uint8_t * p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); }

// 0xFF in byte 8g + i of the result where bit i of byte g of `signs` is set (g = 0..3).
inline __m256i sign_mask(uint32_t signs) {
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(signs)),
                                              _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                               2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bits = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bits), bits);
}

// v negated where mask is 0xFF.
inline __m256i apply_signs(__m256i v, __m256i mask) { return _mm256_sign_epi8(v, _mm256_or_si256(mask, _mm256_set1_epi8(1))); }

// Four 8-byte grid entries as one register, group 0 lowest.
inline __m256i grid4(const uint64_t * grid, int i0, int i1, int i2, int i3) {
    return _mm256_setr_epi64x(int64_t(grid[i0]), int64_t(grid[i1]), int64_t(grid[i2]), int64_t(grid[i3]));
}

// Eight 4-byte IQ3 grid entries gathered by the 32-bit indices in idx. NOTE: on this AMD
// machine a gather beats scalar lookups only where the indices cost work of their own
// (IQ3_S's ninth bit): IQ3_XXS and the 8-byte IQ2/IQ1 grids were 2-2.6x slower with one.
inline __m256i grid8(const uint32_t * grid, __m256i idx) { return _mm256_i32gather_epi32(reinterpret_cast<const int *>(grid), idx, 4); }

// The 8 bytes at p as 32-bit indices.
inline __m256i bytes8(const uint8_t * p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))); }

// The 16-bit scale pattern of a register: s0 for elements 0..15, s1 for 16..31.
inline __m256i scale2(int s0, int s1) {
    return _mm256_setr_epi16(int16_t(s0), int16_t(s0), int16_t(s0), int16_t(s0), int16_t(s0), int16_t(s0), int16_t(s0), int16_t(s0),
                             int16_t(s1), int16_t(s1), int16_t(s1), int16_t(s1), int16_t(s1), int16_t(s1), int16_t(s1), int16_t(s1));
}

inline uint32_t u32_at(const void * p) { return load_as<uint32_t>(p); }
inline uint16_t u16_at(const void * p) { return load_as<uint16_t>(p); }

// The four sign bytes of IQ2_XXS/IQ3_XXS from the 7-bit indices packed in a (ksigns_iq2xs).
inline uint32_t ksigns4(uint32_t a) {
    return uint32_t(ksigns_iq2xs[a & 127]) | uint32_t(ksigns_iq2xs[(a >> 7) & 127]) << 8 | uint32_t(ksigns_iq2xs[(a >> 14) & 127]) << 16 |
           uint32_t(ksigns_iq2xs[(a >> 21) & 127]) << 24;
}

// ---- the types: register j of a super-block --------------------------------------------------
// Each type: Block; kDelta (0: none, 1: IQ1_S's scalar accumulation, 2: IQ1_M's vector one);
// sub(b, j, w, sc, dl) writes register j; d(b) is d_w.

enum Delta { kNoDelta, kScalarDelta, kVectorDelta };

// IQ2_XXS ... IQ3_S: a positive grid magnitude per element and a sign bit per element;
// grid() gives register j as magnitudes and its 32 sign bits (bit i: element 32j + i).
template <class T>
struct SignedGrid {
    static constexpr Delta kDelta = kNoDelta;
    template <class Block>  // T::Block (T is incomplete here)
    static void sub(const Block & b, int j, __m256i & w, __m256i & sc, __m256i &) {
        uint32_t signs;
        T::grid(b, j, w, signs, sc);
        w = apply_signs(w, sign_mask(signs));
    }
};

struct IQ2XXS : SignedGrid<IQ2XXS> {
    using Block = block_iq2_xxs;
    static void grid(const Block & b, int j, __m256i & g, uint32_t & signs, __m256i & sc) {
        const uint32_t a0 = u32_at(b.qs + 4 * j), a1 = u32_at(b.qs + 4 * j + 2);
        g = grid4(iq2xxs_grid, a0 & 255, (a0 >> 8) & 255, (a0 >> 16) & 255, a0 >> 24);
        signs = ksigns4(a1);
        const int ls = 2 * int(a1 >> 28) + 1;
        sc = _mm256_set1_epi16(int16_t(ls));
    }
    static float d(const Block & b) { return f16_to_f32(b.d) * 0.125f; }
};

struct IQ2XS : SignedGrid<IQ2XS> {
    using Block = block_iq2_xs;
    static void grid(const Block & b, int j, __m256i & g, uint32_t & signs, __m256i & sc) {
        const uint16_t * q = b.qs + 4 * j;
        g = grid4(iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
        signs = uint32_t(ksigns_iq2xs[q[0] >> 9]) | uint32_t(ksigns_iq2xs[q[1] >> 9]) << 8 | uint32_t(ksigns_iq2xs[q[2] >> 9]) << 16 |
                uint32_t(ksigns_iq2xs[q[3] >> 9]) << 24;
        sc = scale2(2 * (b.scales[j] & 0xf) + 1, 2 * (b.scales[j] >> 4) + 1);
    }
    static float d(const Block & b) { return f16_to_f32(b.d) * 0.125f; }
};

struct IQ2S : SignedGrid<IQ2S> {
    using Block = block_iq2_s;
    static void grid(const Block & b, int j, __m256i & g, uint32_t & signs, __m256i & sc) {
        const uint8_t * q = b.qs + 4 * j;
        const int h = b.qh[j];
        g = grid4(iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300));
        signs = u32_at(b.qs + QK_K / 8 + 4 * j);
        sc = scale2(2 * (b.scales[j] & 0xf) + 1, 2 * (b.scales[j] >> 4) + 1);
    }
    static float d(const Block & b) { return f16_to_f32(b.d) * 0.125f; }
};

struct IQ3XXS : SignedGrid<IQ3XXS> {
    using Block = block_iq3_xxs;
    static void grid(const Block & b, int j, __m256i & g, uint32_t & signs, __m256i & sc) {
        const uint8_t * q = b.qs + 8 * j;
        const uint32_t * t = iq3xxs_grid;
        const uint32_t a = u32_at(b.qs + QK_K / 4 + 4 * j);
        g = _mm256_setr_epi32(int(t[q[0]]), int(t[q[1]]), int(t[q[2]]), int(t[q[3]]), int(t[q[4]]), int(t[q[5]]), int(t[q[6]]),
                              int(t[q[7]]));
        signs = ksigns4(a);
        sc = _mm256_set1_epi16(int16_t(2 * int(a >> 28) + 1));
    }
    static float d(const Block & b) { return f16_to_f32(b.d) * 0.25f; }
};

struct IQ3S : SignedGrid<IQ3S> {
    using Block = block_iq3_s;
    static void grid(const Block & b, int j, __m256i & g, uint32_t & signs, __m256i & sc) {
        // Index k: qs byte k | bit k of qh << 8.
        const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(b.qh[j]), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                                              _mm256_set1_epi32(256));
        g = grid8(iq3s_grid, _mm256_or_si256(bytes8(b.qs + 8 * j), high));
        signs = u32_at(b.signs + 4 * j);
        const int s = j % 2 ? b.scales[j / 2] >> 4 : b.scales[j / 2] & 0xf;
        sc = _mm256_set1_epi16(int16_t(2 * s + 1));
    }
    static float d(const Block & b) { return f16_to_f32(b.d); }
};

struct IQ1S {
    using Block = block_iq1_s;
    static constexpr Delta kDelta = kScalarDelta;
    static void sub(const Block & b, int j, __m256i & w, __m256i & sc, __m256i & dl) {
        const uint8_t * q = b.qs + 4 * j;
        const int h = b.qh[j];
        w = grid4(iq1s_grid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700), q[2] | ((h << 2) & 0x700), q[3] | ((h >> 1) & 0x700));
        sc = _mm256_set1_epi16(int16_t(2 * ((h >> 12) & 7) + 1));
        dl = _mm256_set1_epi8(h & 0x8000 ? -1 : 1);
    }
    static float d(const Block & b) { return f16_to_f32(b.d); }
};

struct IQ1M {
    using Block = block_iq1_m;
    static constexpr Delta kDelta = kVectorDelta;
    static void sub(const Block & b, int j, __m256i & w, __m256i & sc, __m256i & dl) {
        const uint8_t * q = b.qs + 4 * j;
        const int h0 = b.qh[2 * j], h1 = b.qh[2 * j + 1];
        w = grid4(iq1s_grid, q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700), q[2] | ((h1 << 8) & 0x700),
                  q[3] | ((h1 << 4) & 0x700));
        const int s = u16_at(b.scales + 2 * (j / 2)) >> (6 * (j % 2));
        sc = scale2(2 * (s & 7) + 1, 2 * ((s >> 3) & 7) + 1);
        auto delta = [](int bit) { return int64_t(bit ? 0xffffffffffffffffull : 0x0101010101010101ull); };
        dl = _mm256_setr_epi64x(delta(h0 & 0x08), delta(h0 & 0x80), delta(h1 & 0x08), delta(h1 & 0x80));
    }
    static float d(const Block & b) {
        uint16_t sc[4];
        std::memcpy(sc, b.scales, sizeof sc);
        return f16_to_f32(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
    }
};

struct IQ4XS {
    using Block = block_iq4_xs;
    static constexpr Delta kDelta = kNoDelta;
    static void sub(const Block & b, int j, __m256i & w, __m256i & sc, __m256i &) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b.qs + 16 * j));
        const __m128i m4 = _mm_set1_epi8(0x0f);
        const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), m4), _mm_and_si128(packed, m4));
        w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kvalues_iq4nl))), idx);
        const int ls = (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xf) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
        sc = _mm256_set1_epi16(int16_t(ls));
    }
    static float d(const Block & b) { return f16_to_f32(b.d); }
};

struct TQ20 {
    using Block = block_tq2_0;
    static constexpr Delta kDelta = kNoDelta;
    static void sub(const Block & b, int j, __m256i & w, __m256i & sc, __m256i &) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(load32(b.qs + 32 * (j / 4)), 2 * (j % 4)), _mm256_set1_epi8(3));
        w = _mm256_sub_epi8(q, _mm256_set1_epi8(1));
        sc = _mm256_set1_epi16(1);
    }
    static float d(const Block & b) { return f16_to_f32(b.d); }
};

// The 8 int32 lanes of sum_j madd(w_j . a_j, sc_j) for one register: the product as
// |w| * sign(a, w).
inline __m256i scaled_dot(__m256i w, __m256i a, __m256i sc) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)), sc);
}

inline const __m256i * act_qs(const uint8_t * act) { return reinterpret_cast<const __m256i *>(act); }
inline float act_d(const uint8_t * act) { return load_as<float>(act + kActD); }

// Accumulators of one (row, token) pair: acc (the main term) and, for IQ1, the delta term.
struct Acc {
    __m256 main = _mm256_setzero_ps();
    __m256 delta = _mm256_setzero_ps();  // kVectorDelta
    float delta_s = 0.0f;                // kScalarDelta
};

template <class T>
inline void add_super_block(Acc & acc, float d, __m256i isum, __m256i dsum) {
    acc.main = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc.main);
    if constexpr (T::kDelta == kVectorDelta) acc.delta = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(dsum), acc.delta);
    if constexpr (T::kDelta == kScalarDelta) acc.delta_s += d * float(hsum8_i32(dsum));
}

template <class T>
inline float finish(const Acc & acc) {
    if constexpr (T::kDelta == kVectorDelta) return hsum8(acc.main) + kIq1Delta * hsum8(acc.delta);
    if constexpr (T::kDelta == kScalarDelta) return hsum8(acc.main) + kIq1Delta * acc.delta_s;
    return hsum8(acc.main);
}

// ---- decode ------------------------------------------------------------------------------------
// Each sub-block is read and unpacked once for all Tn tokens (decode steps of a batch of
// sequences); every token's sums run in the order they run for it alone.

template <class T, int Tn>
void dot_row(const typename T::Block * w, const uint8_t * const * act, int64_t nsb, float * y, int64_t y_stride) {
    Acc acc[Tn];
    for (int64_t s = 0; s < nsb; ++s) {
        prefetch_ahead(w + s, sizeof(w[s]));
        const size_t at = size_t(s) * kActBlockBytes;
        __m256i isum[Tn], dsum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = dsum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8  // constant j: sub(j) folds its offsets and patterns
        for (int j = 0; j < 8; ++j) {
            __m256i wj, sc, dl;
            T::sub(w[s], j, wj, sc, dl);
            for (int t = 0; t < Tn; ++t) {
                const __m256i a = _mm256_load_si256(act_qs(act[t] + at) + j);
                isum[t] = _mm256_add_epi32(isum[t], scaled_dot(wj, a, sc));
                if constexpr (T::kDelta != kNoDelta) dsum[t] = _mm256_add_epi32(dsum[t], scaled_dot(dl, a, sc));
            }
        }
        for (int t = 0; t < Tn; ++t) add_super_block<T>(acc[t], T::d(w[s]) * act_d(act[t] + at), isum[t], dsum[t]);
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = finish<T>(acc[t]);
}

// The signed grids (IQ2_XXS ... IQ3_S): the decode takes a super-block's sign bits for all
// eight registers at once (computed in vector registers where the type looks them up in
// ksigns_iq2xs: the 7 stored bits of a group of 8 and an 8th that makes their count even)
// and, for IQ2_XS/IQ2_S, its 16 scales as one register, where grid() works per register.
// The magnitudes are positive, so the signs go to the activations: AVX2 negates them with
// sign(a, +-1), AVX-512 with a masked subtract under the bits as a mask register (-128
// stays -128 either way). The products and integer sums are those of sub(): the same bits.
template <class T>
constexpr bool kSignedGrid = std::is_base_of_v<SignedGrid<T>, T>;

inline __m256i with_parity(__m256i seven_bits) {  // per byte
    __m256i p = _mm256_xor_si256(seven_bits, _mm256_srli_epi32(seven_bits, 4));
    p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 2));
    p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 1));  // bit 0 of each byte: the parity of its bits
    return _mm256_or_si256(seven_bits, _mm256_slli_epi32(_mm256_and_si256(p, _mm256_set1_epi8(1)), 7));
}

// Words holding four 7-bit sign indices each (IQ2_XXS, IQ3_XXS), as four sign bytes.
inline __m256i ksigns_of_words(__m256i words) {
    const __m256i m7 = _mm256_set1_epi32(127);
    __m256i x = _mm256_and_si256(words, m7);
    for (int k = 1; k < 4; ++k) x = _mm256_or_si256(x, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(words, 7 * k), m7), 8 * k));
    return with_parity(x);
}

// Register j's 32 sign bits in word j.
template <class T>
inline __m256i all_signs(const typename T::Block & b) {
    if constexpr (std::is_same_v<T, IQ2XXS>) {  // the odd words of qs
        const auto * q = reinterpret_cast<const uint8_t *>(b.qs);
        const __m256 odd = _mm256_shuffle_ps(_mm256_castsi256_ps(load32(q)), _mm256_castsi256_ps(load32(q + 32)), 0xDD);
        return ksigns_of_words(_mm256_permute4x64_epi64(_mm256_castps_si256(odd), 0xD8));
    } else if constexpr (std::is_same_v<T, IQ3XXS>) {  // the words after the grid indices
        return ksigns_of_words(load32(b.qs + QK_K / 4));
    } else if constexpr (std::is_same_v<T, IQ2XS>) {  // the top 7 bits of each 16-bit index
        const auto * q = reinterpret_cast<const uint8_t *>(b.qs);
        const __m256i top = _mm256_packus_epi16(_mm256_srli_epi16(load32(q), 9), _mm256_srli_epi16(load32(q + 32), 9));
        return with_parity(_mm256_permute4x64_epi64(top, 0xD8));
    } else if constexpr (std::is_same_v<T, IQ2S>) {
        return load32(b.qs + QK_K / 8);
    } else {
        return load32(b.signs);
    }
}

// IQ2_XS and IQ2_S: the 16 scales (2 s + 1, from nibbles) as 16-bit words in both 128-bit
// lanes, and register j's pattern [scale 2j x 8 | scale 2j + 1 x 8] as one shuffle.
template <class T>
constexpr bool kNibbleScales = std::is_same_v<T, IQ2XS> || std::is_same_v<T, IQ2S>;

struct NibbleScales {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();  // scales 0..7 and 8..15, each in both lanes
    NibbleScales() = default;                                          // the other types: unused
    explicit NibbleScales(const uint8_t * scales) {
        const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(scales));
        const __m128i m4 = _mm_set1_epi8(0x0f);
        const __m128i s = _mm_unpacklo_epi8(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));  // lo(0) hi(0) lo(1) ...
        const __m256i s16 = _mm256_cvtepu8_epi16(_mm_add_epi8(_mm_add_epi8(s, s), _mm_set1_epi8(1)));
        lo = _mm256_permute2x128_si256(s16, s16, 0x00);
        hi = _mm256_permute2x128_si256(s16, s16, 0x11);
    }
    __m256i pattern(int j) const {
        const int k = j & 3;
        const int16_t a = int16_t((4 * k) | ((4 * k + 1) << 8)), b = int16_t((4 * k + 2) | ((4 * k + 3) << 8));
        return _mm256_shuffle_epi8(j < 4 ? lo : hi, _mm256_setr_epi16(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b));
    }
};

template <class T, int Tn>
void dot_row_signed_grid(const typename T::Block * w, const uint8_t * const * act, int64_t nsb, float * y, int64_t y_stride) {
    Acc acc[Tn];
    for (int64_t s = 0; s < nsb; ++s) {
        prefetch_ahead(w + s, sizeof(w[s]));
        const size_t at = size_t(s) * kActBlockBytes;
        __m256i isum[Tn];
        for (int t = 0; t < Tn; ++t) isum[t] = _mm256_setzero_si256();
        alignas(32) uint32_t signs_of[8];
        _mm256_store_si256(reinterpret_cast<__m256i *>(signs_of), all_signs<T>(w[s]));
        NibbleScales scales;
        if constexpr (kNibbleScales<T>) scales = NibbleScales(w[s].scales);
#pragma GCC unroll 8  // constant shuffle patterns
        for (int j = 0; j < 8; ++j) {
            __m256i g, sc;
            uint32_t unused;
            T::grid(w[s], j, g, unused, sc);  // its own signs (and nibble scales) are dropped
            if constexpr (kNibbleScales<T>) sc = scales.pattern(j);
#if defined(LONGREAD_IQUANT_VNNI)
            const __mmask32 negative = _load_mask32(reinterpret_cast<__mmask32 *>(signs_of + j));
            const __m256i zero = _mm256_setzero_si256();
#else
            const __m256i sign = _mm256_or_si256(sign_mask(signs_of[j]), _mm256_set1_epi8(1));  // -1 or 1
#endif
            for (int t = 0; t < Tn; ++t) {
                const __m256i a = _mm256_load_si256(act_qs(act[t] + at) + j);
#if defined(LONGREAD_IQUANT_VNNI)
                const __m256i p = _mm256_maddubs_epi16(g, _mm256_mask_sub_epi8(a, negative, zero, a));
#else
                const __m256i p = _mm256_maddubs_epi16(g, _mm256_sign_epi8(a, sign));
#endif
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, sc));
            }
        }
        for (int t = 0; t < Tn; ++t) add_super_block<T>(acc[t], T::d(w[s]) * act_d(act[t] + at), isum[t], isum[t]);
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = finish<T>(acc[t]);
}

#include "engine/backend/cpu/avx2/iq4xs_decode.h"  // inside this namespace: it uses Acc and the helpers

// ---- prefill -----------------------------------------------------------------------------------
// The K-quants' lanes panels (16 rows with AVX-512 VNNI, 8 with AVX2), on each super-block in
// their common form.

// A super-block in the K-quants' common form: levels + 128 as unsigned bytes (IQ1: 8 w +
// delta, whose d is then d / 8: the delta term becomes part of the integer sum), and the
// offset 128 taken out with the block sums as a min of 128 * scale per 16 elements.
template <class T>
struct KForm {
    using Block = typename T::Block;
    static constexpr bool kCombinedMin = true;
#if defined(LONGREAD_IQUANT_VNNI)
    // IQ4_XS has one scale per sub-block of 32: the VNNI panel then multiplies by each scale
    // once per 32 elements (prefill 10-15 % faster); AVX2's two planes of nibbles over 32
    // elements ran out of registers (12 % slower), so they keep 16.
    static constexpr int kScaleElems = std::is_same_v<T, IQ4XS> ? 32 : 16;
#else
    static constexpr int kScaleElems = 16;
#endif
    static constexpr int kMaxLevel = 255;
    __m256i w[8], sc[8];
    float dw;
    explicit KForm(const Block & b) {
#pragma GCC unroll 8  // constant j (see the decode's loop)
        for (int j = 0; j < 8; ++j) {
            __m256i dl = _mm256_setzero_si256();
            T::sub(b, j, w[j], sc[j], dl);
            if constexpr (T::kDelta != kNoDelta) w[j] = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), w[j]), dl);  // w: -1, 0 or 1
        }
        dw = T::kDelta != kNoDelta ? T::d(b) * kIq1Delta : T::d(b);
    }
    __m256i q(int j) const { return _mm256_xor_si256(w[j], _mm256_set1_epi8(char(0x80))); }
    __m256i scale(int j) const { return sc[j]; }
    __m256i scales() const {  // int16, one per 16 elements: words 0 and 8 of each pattern
        alignas(32) int16_t s[8][16];
        for (int j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i *>(s[j]), sc[j]);
        return _mm256_setr_epi16(s[0][0], s[0][8], s[1][0], s[1][8], s[2][0], s[2][8], s[3][0], s[3][8], s[4][0], s[4][8], s[5][0], s[5][8],
                                 s[6][0], s[6][8], s[7][0], s[7][8]);
    }
    __m256i mn() const { return _mm256_slli_epi16(scales(), 7); }  // 128 * scale: the levels' offset
    float d() const { return dw; }
    float dmin() const { return dw; }
};

#if defined(LONGREAD_IQUANT_VNNI)
#include "engine/backend/cpu/avx512/kquant_prefill_vnni.h"  // inside this namespace: it uses the block types

template <class T>
size_t panel_scratch_bytes(int64_t n_cols) {
    return vnni::scratch_bytes(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    vnni::prefill_rows<KForm<T>>(job, r0, r1, scratch);
}
#else
#include "engine/backend/cpu/avx2/kquant_prefill_avx2.h"  // inside this namespace: it uses the block types

template <class T>
size_t panel_scratch_bytes(int64_t n_cols) {
    return lanes::scratch_bytes<KForm<T>>(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    lanes::prefill_rows<KForm<T>>(job, r0, r1, scratch);
}
#endif

// The prefill panel, or decode's regrouped activations of IQ4_XS.
template <class T>
size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    const size_t panel = panel_scratch_bytes<T>(n_cols), act = size_t(kRowByRowTokens) * q8k_act_row_bytes(n_cols);
    return panel > act ? panel : act;
}

template <class T>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    using Block = typename T::Block;
    const int64_t nsb = job.n_cols / QK_K;
    auto row = [&](int64_t r) { return reinterpret_cast<const Block *>(job.w + size_t(r) * job.w_row_bytes); };
    if (job.n_tokens <= kRowByRowTokens) {
        if constexpr (kSignedGrid<T>) {
            for_each_row_token_group(job, r0, r1, [&]<int Tn>(int64_t r, const uint8_t * const * act, float * y) {
                dot_row_signed_grid<T, Tn>(row(r), act, nsb, y, job.y_stride);
            });
            return;
        }
        if constexpr (std::is_same_v<T, IQ4XS>) {
            MatmulJob regrouped = job;
            iq4xs_regroup_act(job, scratch);
            regrouped.act = scratch;
            for_each_row_token_group(regrouped, r0, r1, [&]<int Tn>(int64_t r, const uint8_t * const * act, float * y) {
                dot_row_iq4xs<Tn>(row(r), act, nsb, y, job.y_stride);
            });
            return;
        }
        for_each_row_token_group(job, r0, r1, [&]<int Tn>(int64_t r, const uint8_t * const * act, float * y) {
            dot_row<T, Tn>(row(r), act, nsb, y, job.y_stride);
        });
        return;
    }
    prefill_rows<T>(job, r0, r1, scratch);
}

template <class T>
constexpr MatmulKernel kKernel{q8k_act_row_bytes, q8k_convert_act, q8k_act_to_standard, scratch_bytes<T>, rows<T>};

}  // namespace

const MatmulKernel * LONGREAD_IQUANT_KERNEL_TABLE(DType type) {
    switch (type) {
        case DType::IQ2_XXS: return &kKernel<IQ2XXS>;
        case DType::IQ2_XS: return &kKernel<IQ2XS>;
        case DType::IQ2_S: return &kKernel<IQ2S>;
        case DType::IQ3_XXS: return &kKernel<IQ3XXS>;
        case DType::IQ3_S: return &kKernel<IQ3S>;
        case DType::IQ1_S: return &kKernel<IQ1S>;
        case DType::IQ1_M: return &kKernel<IQ1M>;
        case DType::IQ4_XS: return &kKernel<IQ4XS>;
        case DType::TQ2_0: return &kKernel<TQ20>;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
