#pragma once
// The on-disk block layouts of GGUF/ggml quantized types (ggml-common.h), as plain structs.
// A row of n elements of a block type is n / QK blocks stored back to back; the elements
// of a block are numbered 0..QK-1 in row order. fp16 scales are raw IEEE half bits
// (lr::fp16_to_fp32). The structs have no padding, so they can be read straight from a
// mapped file and shared with SIMD and CUDA kernels. The size of each is fixed by the file
// format: see the static_asserts at the end and engine/common/dtype.cpp.

#include <bit>
#include <cstddef>
#include <cstdint>

namespace lr::quant {

// NOTE: the struct names follow ggml-common.h (block_q4_0 ...) rather than PascalCase, so
// that kernels can be read side by side with ggml's.

inline constexpr int QK4_0 = 32;
inline constexpr int QK4_1 = 32;
inline constexpr int QK5_0 = 32;
inline constexpr int QK5_1 = 32;
inline constexpr int QK8_0 = 32;
inline constexpr int QK8_1 = 32;
inline constexpr int QK4_NL = 32;
inline constexpr int QK_K = 256;         // super-block of the K-quants
inline constexpr int K_SCALE_SIZE = 12;  // bytes of packed 6-bit scales/mins in Q4_K/Q5_K

// ---- Legacy types: one scale per 32 elements ----------------------------------------------

// x[i] = d * (q[i] - 8), q in 0..15.
// qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct block_q4_0 {
    uint16_t d;             // fp16 scale
    uint8_t qs[QK4_0 / 2];  // [16] nibbles
};

// x[i] = d * q[i] + m, q in 0..15. Nibble layout as in block_q4_0.
struct block_q4_1 {
    uint16_t d;             // fp16 scale
    uint16_t m;             // fp16 minimum (offset)
    uint8_t qs[QK4_1 / 2];  // [16] nibbles
};

// x[i] = d * (q[i] - 16), q in 0..31: low 4 bits as in block_q4_0, bit 4 of element i is
// bit i of qh (read as a little-endian uint32).
struct block_q5_0 {
    uint16_t d;             // fp16 scale
    uint8_t qh[4];          // [32] fifth bits, little-endian
    uint8_t qs[QK5_0 / 2];  // [16] low nibbles
};

// x[i] = d * q[i] + m, q in 0..31. Bit layout as in block_q5_0.
struct block_q5_1 {
    uint16_t d;             // fp16 scale
    uint16_t m;             // fp16 minimum (offset)
    uint8_t qh[4];          // [32] fifth bits, little-endian
    uint8_t qs[QK5_1 / 2];  // [16] low nibbles
};

// x[i] = d * qs[i].
struct block_q8_0 {
    uint16_t d;        // fp16 scale
    int8_t qs[QK8_0];  // [32]
};

// x[i] = d * qs[i]; s = d * sum(qs), used by the Q4_1/Q5_1 dot product for the minimum term.
struct block_q8_1 {
    uint16_t d;        // fp16 scale
    uint16_t s;        // fp16 d * sum(qs[0..32))
    int8_t qs[QK8_1];  // [32]
};

// x[i] = d * kvalues_iq4nl[q[i]], q in 0..15: a non-uniform 4-bit grid. Nibble layout as in
// block_q4_0.
struct block_iq4_nl {
    uint16_t d;              // fp16 scale
    uint8_t qs[QK4_NL / 2];  // [16] nibbles (indices into kvalues_iq4nl)
};

// The 16 levels of IQ4_NL, sorted ascending.
inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// ---- K-quants: super-blocks of 256 with quantized sub-block scales ------------------------

// 16 sub-blocks of 16: x = d * sc * q - dmin * m, q in 0..3; scales[j] = sc | (m << 4) for
// sub-block j (4 bits each). qs: for each half h (128 elements) and shift s in {0,2,4,6},
// qs[32h + l] bits s..s+1 hold element 128h + 32(s/2) + l, l in 0..31.
struct block_q2_K {
    uint8_t scales[QK_K / 16];  // [16] 4-bit scale | 4-bit min << 4
    uint8_t qs[QK_K / 4];       // [64] 2-bit quants
    uint16_t d;                 // fp16 super-block scale of the scales
    uint16_t dmin;              // fp16 super-block scale of the mins
};

// 16 sub-blocks of 16: x = d * (sc - 32) * (q - 4), q in 0..7, sc a 6-bit scale.
// Low 2 bits of q as in block_q2_K; bit 2 of element i is bit (i / 32) of hmask[i % 32].
// scales (12 bytes): for sub-block j, the low 4 bits are the low (j < 8) or high (j >= 8)
// nibble of scales[j % 8]; the high 2 bits are bits 2(j/4)..2(j/4)+1 of scales[8 + j % 4].
struct block_q3_K {
    uint8_t hmask[QK_K / 8];  // [32] high bits
    uint8_t qs[QK_K / 4];     // [64] low 2 bits
    uint8_t scales[12];       // 16 x 6-bit scales, packed
    uint16_t d;               // fp16 super-block scale
};

// 8 sub-blocks of 32: x = d * sc * q - dmin * m, q in 0..15, sc and m 6-bit
// (unpack_scale_min_k4). qs: for each 64-element chunk c, qs[32c + l] holds element
// 64c + l in its low nibble and 64c + 32 + l in its high nibble.
struct block_q4_K {
    uint16_t d;                    // fp16 super-block scale of the scales
    uint16_t dmin;                 // fp16 super-block scale of the mins
    uint8_t scales[K_SCALE_SIZE];  // 8 x (6-bit scale, 6-bit min), packed
    uint8_t qs[QK_K / 2];          // [128] nibbles
};

// As block_q4_K with q in 0..31: bit 4 of element 32k + l (sub-block k) is bit k of qh[l].
struct block_q5_K {
    uint16_t d;                    // fp16 super-block scale of the scales
    uint16_t dmin;                 // fp16 super-block scale of the mins
    uint8_t scales[K_SCALE_SIZE];  // 8 x (6-bit scale, 6-bit min), packed
    uint8_t qh[QK_K / 8];          // [32] fifth bits
    uint8_t qs[QK_K / 2];          // [128] low nibbles
};

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q in 0..63, scales int8.
// For each half h (128 elements), with ql = ql + 64h and qh = qh + 32h, l in 0..31:
//   element 128h + l      : low nibble of ql[l]      | bits 0-1 of qh[l] << 4
//   element 128h + 32 + l : low nibble of ql[32 + l] | bits 2-3 of qh[l] << 4
//   element 128h + 64 + l : high nibble of ql[l]     | bits 4-5 of qh[l] << 4
//   element 128h + 96 + l : high nibble of ql[32 + l]| bits 6-7 of qh[l] << 4
struct block_q6_K {
    uint8_t ql[QK_K / 2];      // [128] low 4 bits
    uint8_t qh[QK_K / 4];      // [64] high 2 bits
    int8_t scales[QK_K / 16];  // [16] 8-bit sub-block scales
    uint16_t d;                // fp16 super-block scale
};

// Activations for K-quant dot products: x = d * qs, with the sums of each 16 quants.
struct block_q8_K {
    float d;                   // fp32 scale
    int8_t qs[QK_K];           // [256]
    int16_t bsums[QK_K / 16];  // [16] sum of qs[16j .. 16j+16)
};

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block: the first four
// live in the low 6 bits of q[j] and q[j + 4]; the last four have their low 4 bits in
// q[j + 4] (scale low nibble, min high nibble) and their top 2 bits in the top 2 bits of
// q[j - 4] (scale) and q[j] (min).
inline void unpack_scale_min_k4(int j, const uint8_t * q, uint8_t & scale, uint8_t & min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// The 6-bit scale of sub-block j (0..15) of a Q3_K block, as stored (0..63; subtract 32).
inline int unpack_scale_q3_K(int j, const uint8_t * scales) {
    const int low = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

// ---- The i-quants: super-blocks of 256 on lattice grids (quant_grids.h) -------------------
// Each group of 8 (IQ2, IQ1) or 4 (IQ3) elements is one entry of a fixed grid of magnitudes;
// signs come separately. Sub-block scales are odd integers 2s + 1 (s the stored 4-bit or
// 3-bit value) applied against one fp16 super-block scale d.

// Per 32 elements (sub-block ib): qs[4ib..4ib+4) as two little-endian uint32 a0, a1.
// Byte l of a0 (l = 0..3) is the iq2xxs_grid index of elements 8l..8l+7; bits 7l..7l+6 of
// a1 index ksigns_iq2xs (their signs); a1 >> 28 is s. x = d * (0.5 + s) / 4 * grid * sign.
struct block_iq2_xxs {
    uint16_t d;             // fp16 super-block scale
    uint16_t qs[QK_K / 8];  // [32] grid indices and signs, 8 uint16 per 32 elements
};

// qs[4ib + l] (l = 0..3) covers elements 32ib + 8l..+7: bits 0..8 index iq2xs_grid, bits
// 9..15 index ksigns_iq2xs. scales[ib]: low nibble s for l = 0, 1, high nibble for l = 2, 3.
// x = d * (0.5 + s) / 4 * grid * sign.
struct block_iq2_xs {
    uint16_t d;                 // fp16 super-block scale
    uint16_t qs[QK_K / 8];      // [32]
    uint8_t scales[QK_K / 32];  // [8] two 4-bit scales per 32 elements
};

// Group g = 4ib + l (8 elements): grid index qs[g] | bits 2l..2l+1 of qh[ib] << 8 (into
// iq2s_grid, 1024 entries); sign byte qs[QK_K/8 + g] (bit j: element j is negative, no
// parity trick). scales as in block_iq2_xs.
struct block_iq2_s {
    uint16_t d;                 // fp16 super-block scale
    uint8_t qs[QK_K / 4];       // [64] 32 low index bytes, then 32 sign bytes
    uint8_t qh[QK_K / 32];      // [8] high index bits
    uint8_t scales[QK_K / 32];  // [8]
};

// Per 32 elements ib: qs[8ib + k] (k = 0..7) indexes iq3xxs_grid for elements 32ib + 4k..+3;
// the uint32 at qs[QK_K/4 + 4ib] holds four 7-bit sign indices (ksigns_iq2xs, one per 8
// elements) and s in its top 4 bits. x = d * (0.5 + s) / 2 * grid * sign.
struct block_iq3_xxs {
    uint16_t d;                // fp16 super-block scale
    uint8_t qs[3 * QK_K / 8];  // [96] 64 grid bytes, then 8 uint32 of signs and scales
};

// Per 32 elements ib: qs[8ib + k] | bit k of qh[ib] << 8 indexes iq3s_grid (512 entries) for
// elements 32ib + 4k..+3; signs[4ib + l] bit j: element 32ib + 8l + j is negative. s: low
// nibble of scales[ib / 2] for even ib, high nibble for odd. x = d * (1 + 2s) * grid * sign.
struct block_iq3_s {
    uint16_t d;                 // fp16 super-block scale
    uint8_t qs[QK_K / 4];       // [64] low index bytes
    uint8_t qh[QK_K / 32];      // [8] high index bits
    uint8_t signs[QK_K / 8];    // [32] one bit per element
    uint8_t scales[QK_K / 64];  // [4] two 4-bit scales per byte
};

// Per 32 elements ib, with h = qh[ib]: group l (8 elements) is iq1s_grid[qs[4ib + l] |
// ((h >> 3l) & 7) << 8] (values -1, 0, 1); s = (h >> 12) & 7; delta = -1/8 if bit 15 of h
// is set, else +1/8. x = d * (2s + 1) * (grid + delta).
struct block_iq1_s {
    uint16_t d;              // fp16 super-block scale
    uint8_t qs[QK_K / 8];    // [32] low index bytes
    uint16_t qh[QK_K / 32];  // [8] high index bits, scale, delta sign
};

// No separate d: the fp16 scale's four nibbles are the top nibbles of the four uint16 of
// `scales` (lowest nibble in scales word 0). Per 32 elements ib, qh[2ib + h] (h = 0, 1)
// covers groups 2h and 2h + 1: its low nibble holds the high 3 index bits of group 2h and
// the delta sign (bit 3), its high nibble those of group 2h + 1 (bit 7). Scales: uint16
// word ib / 2, bits 6(ib % 2)..+2 for elements 0..15 of the sub-block, the next 3 bits for
// 16..31. x = d * (2s + 1) * (grid + delta), delta = -/+1/8 as in block_iq1_s.
struct block_iq1_m {
    uint8_t qs[QK_K / 8];       // [32] low index bytes
    uint8_t qh[QK_K / 16];      // [16] high index bits and delta signs
    uint8_t scales[QK_K / 32];  // [8] 3-bit scales and the fp16 d, as 4 uint16
};

// 8 sub-blocks of 32 on the IQ4_NL levels: s = low (even ib) or high (odd ib) nibble of
// scales_l[ib / 2] | bits 2ib..2ib+1 of scales_h << 4, x = d * (s - 32) * kvalues_iq4nl[q].
// qs[16ib + j] holds element 32ib + j (low nibble) and 32ib + 16 + j (high nibble).
struct block_iq4_xs {
    uint16_t d;                   // fp16 super-block scale
    uint16_t scales_h;            // high 2 bits of the 8 scales
    uint8_t scales_l[QK_K / 64];  // [4] low 4 bits, two per byte
    uint8_t qs[QK_K / 2];         // [128] nibbles
};

// ---- Ternary and microscaling types --------------------------------------------------------

// x = d * (q - 1), q in 0..2 (3 never written). Element 128c + 32l + m (c = 0, 1) is bits
// 2l..2l+1 of qs[32c + m].
struct block_tq2_0 {
    uint8_t qs[QK_K / 4];  // [64] 2-bit levels
    uint16_t d;            // fp16 scale
};

inline constexpr int QK_MXFP4 = 32;

// x = 2^(e - 128) * kvalues_mxfp4[q]: E2M1 values (doubled, so integers) under a power-of-two
// E8M0 scale (halved to match). Nibble layout as in block_q4_0.
struct block_mxfp4 {
    uint8_t e;                 // E8M0 exponent
    uint8_t qs[QK_MXFP4 / 2];  // [16] nibbles (indices into kvalues_mxfp4)
};

// The FP4 E2M1 values times two (0, +-0.5, +-1, +-1.5, +-2, +-3, +-4, +-6); index 8 is -0.
inline constexpr int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as a float, exactly (ggml's GGML_E8M0_TO_FP32_HALF): subnormal for e < 2.
// NOTE: SIMD translation units use their own copy (see avx2_util.h on shared inline code).
constexpr float e8m0_to_fp32_half(uint8_t e) { return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23); }

// The delta of IQ1_S/IQ1_M: each grid value is shifted by +-1/8 of the sub-block scale.
inline constexpr float kIq1Delta = 0.125f;

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);
static_assert(sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_iq2_xxs) == 66);
static_assert(sizeof(block_iq2_xs) == 74);
static_assert(sizeof(block_iq2_s) == 82);
static_assert(sizeof(block_iq3_xxs) == 98);
static_assert(sizeof(block_iq3_s) == 110);
static_assert(sizeof(block_iq1_s) == 50);
static_assert(sizeof(block_iq1_m) == 56);
static_assert(sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_tq2_0) == 66);
static_assert(sizeof(block_mxfp4) == 17);

}  // namespace lr::quant
