// The legacy block types on AVX2: Q4_0, Q4_1, Q5_0, Q5_1 (unsigned levels), Q8_0, IQ4_NL
// and MXFP4 (signed values), against Q8_0/Q8_1 activations quantized exactly as
// quant::quantize_activations does. MXFP4's blocks start with an E8M0 exponent instead of
// an fp16 scale.
//
// Blocks are taken four at a time (a "quad"), in the order b0, b2, b1, b3: register k
// (k = 0..3) holds elements 8k..8k+7 of each of them, 8 bytes per block. One maddubs per
// register leaves 4 sixteen-bit sums per block; for unsigned levels (at most 31, against
// |a| <= 127) the four registers' sums still fit in 16 bits, so one madd finishes 4
// blocks: [b0, b0, b2, b2, b1, b1, b3, b3] in 32-bit lanes, scaled by the same pattern of
// d_w * d_a. The offset of Q4_0/Q5_0 (8, 16) is taken out in integers with the
// activation block sums, so every block's integer sum is exactly quant::vec_dot's.
// Signed values use the sign trick (|w| * sign(a, w)), as llama.cpp does, and one madd
// per register.
//
// Decode (a few tokens) reads the blocks straight from the model file, each quad unpacked
// once for up to 4 tokens. Prefill unpacks panels of 8 rows in a register's lanes once into
// scratch (legacy_prefill_avx2.h; 16 rows with AVX-512 VNNI, legacy_prefill_vnni.h).

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/avx2/matmul_panels_avx2.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/quant/quant_blocks.h"
#if defined(LONGREAD_LEGACY_VNNI)
#include "engine/backend/cpu/avx512/avx512_util.h"
#endif

// Built twice: here for AVX2, and by avx512/matmul_legacy_vnni.cpp with AVX-512 VNNI, whose
// dpbusd takes the place of maddubs + madd (the same integer sums, so the same results).
#if !defined(LONGREAD_LEGACY_KERNEL_TABLE)
#define LONGREAD_LEGACY_KERNEL_TABLE avx2_legacy_matmul_kernel
#endif

namespace lr::cpu {
namespace {

using namespace avx2;
using namespace lr::quant;

// The block of each 8-byte slot of a quad register, and of each pair of 32-bit lanes.
constexpr int kQuadOrder[4] = {0, 2, 1, 3};

// ---- activations --------------------------------------------------------------------------
// A row of nb blocks as nq = ceil(nb / 4) quads; missing blocks of the last are zeros.
//   qs   [nq][4][32] int8, register k = [b0 | b2 | b1 | b3] elements 8k..8k+7
//   dpat [nq][8]     float [d0 d0 d2 d2 d1 d1 d3 d3] (the fp16 scale as stored by ggml)
//   cpat [nq][8]     int32 [off*sum0, 0, off*sum2, 0, off*sum1, 0, off*sum3, 0]
//   spat [nq][8]     float [s0, 0, s2, 0, s1, 0, s3, 0] (Q8_1's s: fp16(d * sum))
struct ActLayout {
    int64_t n_quads;
    size_t qs() const { return 0; }
    size_t dpat() const { return size_t(n_quads) * 128; }
    size_t cpat() const { return size_t(n_quads) * 160; }
    size_t spat() const { return size_t(n_quads) * 192; }
    size_t bytes() const { return (size_t(n_quads) * 224 + 63) / 64 * 64; }
};

ActLayout act_layout(int64_t n_cols) { return {(n_cols / 32 + 3) / 4}; }

size_t act_row_bytes(int64_t n_cols) { return act_layout(n_cols).bytes(); }

struct QuantizedBlock {
    __m256i q;      // 32 int8
    float d;        // the fp16 scale as a float
    int sum;        // sum of q
    float d_exact;  // amax / 127 before rounding to fp16
};

// quantize_row_q8_0_x86 / q8_1_x86 for one block: scale 127/amax, round half to even.
QuantizedBlock quantize_block(const float * x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
    }
    __m128 m = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float max_abs = _mm_cvtss_f32(m);
    const float id = max_abs != 0.0f ? 127.0f / max_abs : 0.0f;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i i32[4];
    for (int k = 0; k < 4; ++k) {
        i32[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    // Pack to int8 in element order (packs interleave 128-bit lanes; permute back).
    const __m256i p16a = _mm256_packs_epi32(i32[0], i32[1]);
    const __m256i p16b = _mm256_packs_epi32(i32[2], i32[3]);
    __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), p8);
    const int sum = hsum8_i32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
    const float d_exact = max_abs / 127.0f;
    return {p8, _cvtsh_ss(_cvtss_sh(d_exact, _MM_FROUND_TO_NEAREST_INT)), sum, d_exact};
}

// Quad registers from four 32-byte rows of int8 in block order b0..b3: a 4 x 4 transpose of
// 8-byte pieces, into the quad order (b0, b2, b1, b3).
inline void to_quad(const __m256i * b, __m256i * out) {
    const __m256i lo02 = _mm256_unpacklo_epi64(b[0], b[2]);  // [b0.0 b2.0 | b0.2 b2.2]
    const __m256i hi02 = _mm256_unpackhi_epi64(b[0], b[2]);  // [b0.1 b2.1 | b0.3 b2.3]
    const __m256i lo13 = _mm256_unpacklo_epi64(b[1], b[3]);
    const __m256i hi13 = _mm256_unpackhi_epi64(b[1], b[3]);
    out[0] = _mm256_permute2x128_si256(lo02, lo13, 0x20);
    out[1] = _mm256_permute2x128_si256(hi02, hi13, 0x20);
    out[2] = _mm256_permute2x128_si256(lo02, lo13, 0x31);
    out[3] = _mm256_permute2x128_si256(hi02, hi13, 0x31);
}

// [v0, v0, v2, v2, v1, v1, v3, v3]: one value per block, over its two 32-bit lanes.
inline __m256 quad_pattern(const float * v) { return _mm256_setr_ps(v[0], v[0], v[2], v[2], v[1], v[1], v[3], v[3]); }

// offset: the weight type's level offset (8 for Q4_0, 16 for Q5_0, else 0).
template <int Offset>
void convert_act(const float * x, int64_t n_cols, uint8_t * dst) {
    const int64_t nb = n_cols / 32;
    const ActLayout L = act_layout(n_cols);
    for (int64_t q = 0; q < L.n_quads; ++q) {
        __m256i rows[4];
        float d[4], s[4];
        int c[4];
        for (int k = 0; k < 4; ++k) {
            const int64_t ib = 4 * q + k;
            const QuantizedBlock b = ib < nb ? quantize_block(x + 32 * ib) : QuantizedBlock{_mm256_setzero_si256(), 0.0f, 0, 0.0f};
            rows[k] = b.q;
            d[k] = b.d;
            c[k] = Offset * b.sum;
            s[k] = _cvtsh_ss(_cvtss_sh(b.d_exact * float(b.sum), _MM_FROUND_TO_NEAREST_INT));
        }
        __m256i quad[4];
        to_quad(rows, quad);
        auto * qs = reinterpret_cast<__m256i *>(dst + L.qs() + 128 * size_t(q));
        for (int k = 0; k < 4; ++k) _mm256_store_si256(qs + k, quad[k]);
        _mm256_store_ps(reinterpret_cast<float *>(dst + L.dpat() + 32 * size_t(q)), quad_pattern(d));
        _mm256_store_si256(reinterpret_cast<__m256i *>(dst + L.cpat() + 32 * size_t(q)),
                           _mm256_setr_epi32(c[0], 0, c[2], 0, c[1], 0, c[3], 0));
        _mm256_store_ps(reinterpret_cast<float *>(dst + L.spat() + 32 * size_t(q)), _mm256_setr_ps(s[0], 0, s[2], 0, s[1], 0, s[3], 0));
    }
}

// Back to block_q8_0 (Q4_0, Q5_0, Q8_0, IQ4_NL weights) or block_q8_1 (Q4_1, Q5_1).
template <bool Q8_1>
void act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
    const int64_t nb = n_cols / 32;
    const ActLayout L = act_layout(n_cols);
    auto * out = static_cast<uint8_t *>(dst);
    const size_t block_bytes = Q8_1 ? sizeof(block_q8_1) : sizeof(block_q8_0);
    for (int64_t ib = 0; ib < nb; ++ib, out += block_bytes) {
        const int64_t q = ib / 4;
        const int slot = kQuadOrder[ib % 4];  // the block's 8-byte slot (and lane pair)
        const auto * qs = reinterpret_cast<const int8_t *>(act + L.qs() + 128 * size_t(q));
        const float d = reinterpret_cast<const float *>(act + L.dpat() + 32 * size_t(q))[2 * slot];
        const float s = reinterpret_cast<const float *>(act + L.spat() + 32 * size_t(q))[2 * slot];
        const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT), sh = _cvtss_sh(s, _MM_FROUND_TO_NEAREST_INT);
        int8_t v[32];
        for (int k = 0; k < 4; ++k) std::memcpy(v + 8 * k, qs + 32 * k + 8 * slot, 8);
        std::memcpy(out, &dh, 2);
        if (Q8_1) {
            std::memcpy(out + 2, &sh, 2);
            std::memcpy(out + 4, v, 32);
        } else {
            std::memcpy(out + 2, v, 32);
        }
    }
}

// ---- weights: one quad of blocks as registers --------------------------------------------

// NOTE: functions, not globals: a global __m256i would be initialized with AVX
// instructions at program start, before any CPUID check.
inline __m256i low_nibbles() { return _mm256_set1_epi8(0x0F); }

// [qs(b0) | qs(b1)] and [qs(b2) | qs(b3)]: the 16 bytes at offset `at` of four blocks.
template <class Block>
inline void load_nibbles(const Block * b, __m256i & v01, __m256i & v23) {
    auto load = [](const Block & blk) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(blk.qs)); };
    v01 = _mm256_inserti128_si256(_mm256_castsi128_si256(load(b[0])), load(b[1]), 1);
    v23 = _mm256_inserti128_si256(_mm256_castsi128_si256(load(b[2])), load(b[3]), 1);
}

// The quad registers of 4-bit values packed as in block_q4_0 (element j in the low nibble
// of byte j, element j + 16 in the high nibble).
inline void nibbles_to_quad(__m256i v01, __m256i v23, __m256i * out) {
    const __m256i lo = _mm256_unpacklo_epi64(v01, v23);  // [b0 0..7 | b2 0..7 || b1 | b3]
    const __m256i hi = _mm256_unpackhi_epi64(v01, v23);  // bytes 8..15
    out[0] = _mm256_and_si256(lo, low_nibbles());
    out[1] = _mm256_and_si256(hi, low_nibbles());
    out[2] = _mm256_and_si256(_mm256_srli_epi16(lo, 4), low_nibbles());
    out[3] = _mm256_and_si256(_mm256_srli_epi16(hi, 4), low_nibbles());
}

// Adds bit 4 (the fifth bit of Q5 levels) to the quad registers: byte i of register k is
// element 8k + i % 8 of its block, whose bit sits in byte k of the block's qh (qh0..qh3).
inline void add_fifth_bits(__m128i qh, __m256i * quad) {
    const __m256i bits = _mm256_broadcastsi128_si256(qh);
    const __m256i mask = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    for (int k = 0; k < 4; ++k) {
        // Slots b0, b2 | b1, b3 take byte k of qh0, qh2 | qh1, qh3.
        const char b0 = char(k), b2 = char(8 + k), b1 = char(4 + k), b3 = char(12 + k);
        const __m256i shuf = _mm256_setr_epi8(b0, b0, b0, b0, b0, b0, b0, b0, b2, b2, b2, b2, b2, b2, b2, b2,  //
                                              b1, b1, b1, b1, b1, b1, b1, b1, b3, b3, b3, b3, b3, b3, b3, b3);
        const __m256i sel = _mm256_and_si256(_mm256_shuffle_epi8(bits, shuf), mask);
        quad[k] = _mm256_or_si256(quad[k], _mm256_and_si256(_mm256_cmpeq_epi8(sel, mask), _mm256_set1_epi8(0x10)));
    }
}

// Each type gives the levels (or values) of four consecutive blocks as quad registers.
// Every block begins with its fp16 scale d; the _1 types follow it with their fp16 min m.
struct Q4_0 {
    using Block = block_q4_0;
    static constexpr bool kSigned = false, kMin = false;
    static constexpr int kMaxLevel = 15;
    static constexpr int kOffset = 8;
    static void quad(const Block * b, __m256i * out) {
        __m256i v01, v23;
        load_nibbles(b, v01, v23);
        nibbles_to_quad(v01, v23, out);
    }
};

struct Q4_1 {
    using Block = block_q4_1;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kMaxLevel = 15;
    static constexpr int kOffset = 0;
    static void quad(const Block * b, __m256i * out) {
        __m256i v01, v23;
        load_nibbles(b, v01, v23);
        nibbles_to_quad(v01, v23, out);
    }
};

// Inlined, and qh gathered in a register: as a call whose qh went through a stack array
// (four 4-byte stores read back by one 16-byte load, which store forwarding cannot serve),
// Q5_0 and Q5_1 decoded at half speed.
template <class Block>
[[gnu::always_inline]] inline void q5_quad(const Block * b, __m256i * out) {
    __m256i v01, v23;
    load_nibbles(b, v01, v23);
    nibbles_to_quad(v01, v23, out);
    const __m128i qh = _mm_setr_epi32(int(load_as<uint32_t>(b[0].qh)), int(load_as<uint32_t>(b[1].qh)), int(load_as<uint32_t>(b[2].qh)),
                                      int(load_as<uint32_t>(b[3].qh)));
    add_fifth_bits(qh, out);
}

struct Q5_0 {
    using Block = block_q5_0;
    static constexpr bool kSigned = false, kMin = false;
    static constexpr int kMaxLevel = 31;
    static constexpr int kOffset = 16;
    static void quad(const Block * b, __m256i * out) { q5_quad(b, out); }
};

struct Q5_1 {
    using Block = block_q5_1;
    static constexpr bool kSigned = false, kMin = true;
    static constexpr int kMaxLevel = 31;
    static constexpr int kOffset = 0;
    static void quad(const Block * b, __m256i * out) { q5_quad(b, out); }
};

struct Q8_0 {
    using Block = block_q8_0;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 0;
    static void quad(const Block * b, __m256i * out) {
        __m256i rows[4];
        for (int k = 0; k < 4; ++k) rows[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b[k].qs));
        to_quad(rows, out);
    }
};

// The quad registers of nibbles that index a 16-entry table of int8 values.
template <class Block>
inline void lookup_quad(const Block * b, const int8_t * table, __m256i * out) {
    const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(table)));
    __m256i v01, v23;
    load_nibbles(b, v01, v23);
    nibbles_to_quad(v01, v23, out);
    for (int k = 0; k < 4; ++k) out[k] = _mm256_shuffle_epi8(values, out[k]);
}

struct IQ4_NL {
    using Block = block_iq4_nl;
    static constexpr bool kSigned = true, kMin = false;
    static constexpr int kOffset = 0;
    static void quad(const Block * b, __m256i * out) { lookup_quad(b, kvalues_iq4nl, out); }
};

struct MXFP4 {
    using Block = block_mxfp4;
    static constexpr bool kSigned = true, kMin = false, kE8M0 = true;
    static constexpr int kOffset = 0;
    static void quad(const Block * b, __m256i * out) { lookup_quad(b, kvalues_mxfp4, out); }
};

// 2^(e - 128), as quant::e8m0_to_fp32_half (a copy: see avx2_util.h on shared inline code).
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

template <class T>
constexpr bool has_e8m0_scale() {
    if constexpr (requires { T::kE8M0; }) return T::kE8M0;
    return false;
}

// The scale pattern [d0 d0 d2 d2 d1 d1 d3 d3] (and the _1 types' min pattern) of a quad.
template <class T>
inline void quad_scales(const typename T::Block * b, __m256 & d, __m256 & m) {
    if constexpr (has_e8m0_scale<T>()) {
        d = _mm256_setr_ps(e8m0_half(b[0].e), e8m0_half(b[0].e), e8m0_half(b[2].e), e8m0_half(b[2].e), e8m0_half(b[1].e), e8m0_half(b[1].e),
                           e8m0_half(b[3].e), e8m0_half(b[3].e));
        m = _mm256_setzero_ps();
    } else if constexpr (T::kMin) {
        // In a register, not a stack array (see q5_quad).
        const __m128i dm = _mm_setr_epi32(int(load_as<uint32_t>(&b[0])), int(load_as<uint32_t>(&b[1])), int(load_as<uint32_t>(&b[2])),
                                          int(load_as<uint32_t>(&b[3])));
        const __m256 f = _mm256_cvtph_ps(dm);  // [d0 m0 d1 m1 d2 m2 d3 m3]
        d = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 0, 4, 4, 2, 2, 6, 6));
        m = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(1, 1, 5, 5, 3, 3, 7, 7));
    } else {
        __m128i h = _mm_cvtsi32_si128(load_as<uint16_t>(&b[0]));
        h = _mm_insert_epi16(h, load_as<uint16_t>(&b[1]), 1);
        h = _mm_insert_epi16(h, load_as<uint16_t>(&b[2]), 2);
        h = _mm_insert_epi16(h, load_as<uint16_t>(&b[3]), 3);
        const __m256 f = _mm256_castps128_ps256(_mm_cvtph_ps(h));
        d = _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
        m = _mm256_setzero_ps();
    }
}

// A quad of the row at `b` with `n` (1..4) blocks left: the last quad of a row whose block
// count is not a multiple of 4 is read through a copy padded with zero blocks.
template <class T>
inline void load_quad(const typename T::Block * b, int64_t n, __m256i * q, __m256 & d, __m256 & m) {
    using Block = typename T::Block;
    if (n >= 4) {
        T::quad(b, q);
        quad_scales<T>(b, d, m);
        return;
    }
    Block padded[4];
    std::memset(padded, 0, sizeof padded);
    std::memcpy(padded, b, size_t(n) * sizeof(Block));
    T::quad(padded, q);
    quad_scales<T>(padded, d, m);
}

// ---- the integer dot of a quad ---------------------------------------------------------------

// [b0 b0 b2 b2 b1 b1 b3 b3] partial sums of w . a for unsigned levels w, before the
// offset correction.
inline __m256i quad_dot_unsigned(const __m256i * w, const __m256i * a) {
#if defined(LONGREAD_LEGACY_VNNI)
    const __m256i zero = _mm256_setzero_si256();
    const __m256i s01 = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, w[0], _mm256_loadu_si256(a)), w[1], _mm256_loadu_si256(a + 1));
    const __m256i s23 = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, w[2], _mm256_loadu_si256(a + 2)), w[3], _mm256_loadu_si256(a + 3));
    return _mm256_add_epi32(s01, s23);
#else
    // Levels <= 31 and |a| <= 127: each 16-bit lane stays below 4 * 2 * 31 * 127 < 2^15.
    const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], _mm256_loadu_si256(a)),
                                         _mm256_maddubs_epi16(w[1], _mm256_loadu_si256(a + 1)));
    const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], _mm256_loadu_si256(a + 2)),
                                         _mm256_maddubs_epi16(w[3], _mm256_loadu_si256(a + 3)));
    return _mm256_madd_epi16(_mm256_add_epi16(p01, p23), _mm256_set1_epi16(1));
#endif
}

// The same for signed values w, with |w| in abs_w: |w| * sign(a, w), as llama.cpp does
// (|w|, |a| <= 127, so a pair of products never overflows 16 bits).
inline __m256i quad_dot_signed(const __m256i * abs_w, const __m256i * w, const __m256i * a) {
    __m256i sum = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
        const __m256i signed_a = _mm256_sign_epi8(_mm256_loadu_si256(a + k), w[k]);
#if defined(LONGREAD_LEGACY_VNNI)
        sum = _mm256_dpbusd_epi32(sum, abs_w[k], signed_a);
#else
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w[k], signed_a), _mm256_set1_epi16(1)));
#endif
    }
    return sum;
}

// ---- decode: a few tokens, blocks read from the model file ---------------------------------
// Each quad of a row is read and unpacked once for all Tn tokens (decode steps of a batch
// of sequences); every token's sums run in the order they run for it alone, so its result
// does not depend on the others. One row at a time: two at once spill registers and ran
// slower even for one token.

template <class T, int Tn>
void dot_row(const typename T::Block * w, const uint8_t * const * act, const ActLayout & L, int64_t nb, float * y, int64_t y_stride) {
    using Block = typename T::Block;
    __m256 acc[Tn], macc[Tn];
    for (int t = 0; t < Tn; ++t) acc[t] = macc[t] = _mm256_setzero_ps();
    auto step = [&](int64_t q, const Block * b) {
        __m256i wq[4], abs_w[4];
        __m256 d, m;
        T::quad(b, wq);
        quad_scales<T>(b, d, m);
        if constexpr (T::kSigned) {
            for (int k = 0; k < 4; ++k) abs_w[k] = _mm256_sign_epi8(wq[k], wq[k]);
        }
        for (int t = 0; t < Tn; ++t) {
            const auto * a = reinterpret_cast<const __m256i *>(act[t] + L.qs() + 128 * size_t(q));
            __m256i i;
            if constexpr (T::kSigned) {
                i = quad_dot_signed(abs_w, wq, a);
            } else {
                i = quad_dot_unsigned(wq, a);
            }
            if constexpr (T::kOffset != 0)
                i = _mm256_sub_epi32(i, _mm256_load_si256(reinterpret_cast<const __m256i *>(act[t] + L.cpat() + 32 * size_t(q))));
            const __m256 ad = _mm256_load_ps(reinterpret_cast<const float *>(act[t] + L.dpat() + 32 * size_t(q)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(d, ad), acc[t]);
            if constexpr (T::kMin)
                macc[t] = _mm256_fmadd_ps(m, _mm256_load_ps(reinterpret_cast<const float *>(act[t] + L.spat() + 32 * size_t(q))), macc[t]);
        }
    };
    const int64_t full = nb / 4;
    for (int64_t q = 0; q < full; ++q) {
        prefetch_ahead(w + 4 * q, 4 * sizeof(Block));
        step(q, w + 4 * q);
    }
    if (full < L.n_quads) {
        // The last blocks, through a copy padded with zero blocks.
        Block padded[4];
        std::memset(padded, 0, sizeof padded);
        std::memcpy(padded, w + 4 * full, size_t(nb - 4 * full) * sizeof(Block));
        step(full, padded);
    }
    for (int t = 0; t < Tn; ++t) y[t * y_stride] = hsum8(T::kMin ? _mm256_add_ps(acc[t], macc[t]) : acc[t]);
}

// ---- prefill: unpacked panels and tiles ----------------------------------------------------

// The lanes = rows panels (Rows weight rows in a register's lanes), with AVX2 (8 rows) or
// AVX-512 VNNI (16). A panel block: [Planes][8 groups][Rows rows][4 bytes] levels, d[Rows],
// then m[Rows] for the _1 types; group j = 2k + h holds elements 8k + 4h .. 8k + 4h + 3 of
// the block: the bytes at 32k + 8s + 4h of its quad of activations, s the block's slot. Two
// planes hold the low and the high nibbles of 8-bit levels (AVX2's signed values + 128).
// The scratch holds the panel, then the staging rows.
template <class T, int64_t Rows, int Planes>
struct LanePanel {
    static constexpr int64_t kRows = Rows;
    static constexpr size_t kPlaneBytes = 32 * Rows, kD = Planes * kPlaneBytes, kM = kD + 4 * Rows;
    static constexpr size_t kBlockBytes = kM + (T::kMin ? 4 * Rows : 0);
    static size_t panel_bytes(int64_t n_cols) { return size_t(n_cols / 32) * kBlockBytes; }
    static size_t scratch_bytes(int64_t n_cols) { return panel_bytes(n_cols) + size_t(Rows) * size_t((n_cols / 32 + 3) / 4) * 128; }
};

// The level offset taken out of the lanes panels' integer sums with the activations' cpat:
// signed values are stored with 128 added.
template <class T>
constexpr int level_offset() {
    return T::kSigned ? 128 : T::kOffset;
}

template <class T, class Panel>
void stage_panel_rows(const MatmulJob & job, int64_t r0, int64_t n, uint8_t * panel, uint8_t * staging) {
    using Block = typename T::Block;
    constexpr int64_t Rows = Panel::kRows;
    const int64_t nb = job.n_cols / 32, n_quads = (nb + 3) / 4;
    const size_t staging_row = size_t(n_quads) * 128, block_bytes = Panel::kBlockBytes;
    constexpr size_t d_at = Panel::kD, m_at = Panel::kM;
    if (n < Rows) {
        std::memset(staging + size_t(n) * staging_row, 0, size_t(Rows - n) * staging_row);
        for (int64_t b = 0; b < nb; ++b) {
            for (int64_t r = n; r < Rows; ++r) {
                reinterpret_cast<float *>(panel + size_t(b) * block_bytes + d_at)[r] = 0.0f;
                if constexpr (T::kMin) reinterpret_cast<float *>(panel + size_t(b) * block_bytes + m_at)[r] = 0.0f;
            }
        }
    }
    for (int64_t r = 0; r < n; ++r) {
        const auto * w = reinterpret_cast<const Block *>(job.w + size_t(r0 + r) * job.w_row_bytes);
        if (r + 1 < n) prefetch_bytes(job.w + size_t(r0 + r + 1) * job.w_row_bytes, job.w_row_bytes);
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
                uint8_t * block = panel + size_t(b) * block_bytes;
                reinterpret_cast<float *>(block + d_at)[r] = d[2 * s];
                if constexpr (T::kMin) reinterpret_cast<float *>(block + m_at)[r] = m[2 * s];
            }
        }
    }
}

#if defined(LONGREAD_LEGACY_VNNI)
#include "engine/backend/cpu/avx512/legacy_prefill_vnni.h"  // inside this namespace: it uses the block types

template <class T>
size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    return vnni::Panel<T>::scratch_bytes(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    vnni::prefill_rows<T>(job, r0, r1, scratch);
}

#else
#include "engine/backend/cpu/avx2/legacy_prefill_avx2.h"  // inside this namespace: it uses the block types

template <class T>
size_t scratch_bytes(int64_t n_cols, int64_t, int64_t) {
    return lanes::Panel<T>::scratch_bytes(n_cols);
}

template <class T>
void prefill_rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    lanes::prefill_rows<T>(job, r0, r1, scratch);
}
#endif

template <class T>
void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t * scratch) {
    using Block = typename T::Block;
    const int64_t nb = job.n_cols / 32;
    const ActLayout L = act_layout(job.n_cols);
    auto row = [&](int64_t r) { return reinterpret_cast<const Block *>(job.w + size_t(r) * job.w_row_bytes); };
    if (job.n_tokens <= kRowByRowTokens) {
        for_each_row_token_group(job, r0, r1, [&]<int Tn>(int64_t r, const uint8_t * const * act, float * y) {
            dot_row<T, Tn>(row(r), act, L, nb, y, job.y_stride);
        });
        return;
    }
    prefill_rows<T>(job, r0, r1, scratch);
}

template <class T>
constexpr MatmulKernel kKernel{act_row_bytes, convert_act<level_offset<T>()>, act_to_standard<T::kMin>, scratch_bytes<T>, rows<T>};

}  // namespace

const MatmulKernel * LONGREAD_LEGACY_KERNEL_TABLE(DType type) {
    switch (type) {
        case DType::Q4_0: return &kKernel<Q4_0>;
        case DType::Q4_1: return &kKernel<Q4_1>;
        case DType::Q5_0: return &kKernel<Q5_0>;
        case DType::Q5_1: return &kKernel<Q5_1>;
        case DType::Q8_0: return &kKernel<Q8_0>;
        case DType::IQ4_NL: return &kKernel<IQ4_NL>;
        case DType::MXFP4: return &kKernel<MXFP4>;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
