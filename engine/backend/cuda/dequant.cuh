#pragma once
// Device dequantization of GGUF weight rows. The spec is quant::dequantize_row: every
// expression keeps its operand order, and a multiply followed by an add is written with
// mul_add / mul_sub (device_util.cuh) so that nvcc cannot fuse it into an FMA (the CPU
// reference is compiled with -ffp-contract=off). So the values are bit-identical to the
// CPU's. The functions also run on the host, where a test checks exactly that.
//
// Two ways to read a row of type T:
//   dequant_one<T>(row, i)                 element i, for any i < n_cols (get_rows, tails);
//   dequant_step<T>(row, step, lane, ...)  the 256 elements of columns [256 step, 256 step +
//                                          256), spread over the 32 lanes of a warp: lane
//                                          `lane` gets v[0..3] for columns 256 step + a0 + 0..3
//                                          and v[4..7] for 256 step + a1 + 0..3. The lanes of
//                                          a warp read the step's bytes side by side, so the
//                                          loads of a warp are contiguous.
// Blocks are 2-byte aligned at least (18, 34, 110, 210 bytes...), 4-byte for Q4_1, Q5_1,
// Q2_K, Q4_K, Q5_K: loads use the widest width the type allows.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/backend/cuda/device_util.cuh"
#include "engine/common/assert.h"
#include "engine/common/dtype.h"
#include "engine/quant/quant_blocks.h"

namespace lr::cuda {

namespace q = lr::quant;

// The levels of IQ4_NL (quant_blocks.h kvalues_iq4nl; the host check compares them).
static __constant__ int8_t kIq4nlLevelsDevice[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
LR_HD int iq4nl_level(uint32_t i) {
#if defined(__CUDA_ARCH__)
    return kIq4nlLevelsDevice[i];
#else
    return q::kvalues_iq4nl[i];
#endif
}

// unpack_scale_min_k4 (quant_blocks.h): the 6-bit scale and min of sub-block j of Q4_K/Q5_K.
LR_HD void scale_min_k4(int j, const uint8_t * s, int & scale, int & min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// unpack_scale_q3_K (quant_blocks.h): the stored 6-bit scale of sub-block j of Q3_K.
LR_HD int scale_q3_k(int j, const uint8_t * s) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

// ---- one element ----------------------------------------------------------------------------------

template <DType T>
LR_HD float dequant_one(const uint8_t * row, int64_t i) {
    if constexpr (T == DType::F32) {
        return load_f32(row + 4 * i);
    } else if constexpr (T == DType::F16) {
        return half_at(row + 2 * i);
    } else if constexpr (T == DType::BF16) {
        return bf16_bits_to_float(load_u16(row + 2 * i));
    } else if constexpr (T == DType::Q4_0 || T == DType::IQ4_NL) {
        const uint8_t * b = row + (i / 32) * sizeof(q::block_q4_0);
        const int j = int(i % 32);
        const uint8_t byte = b[offsetof(q::block_q4_0, qs) + j % 16];
        const uint32_t nib = j < 16 ? (byte & 0xF) : (byte >> 4);
        const float d = half_at(b);
        if constexpr (T == DType::Q4_0) return float(int(nib) - 8) * d;
        else return d * float(iq4nl_level(nib));
    } else if constexpr (T == DType::Q4_1) {
        const uint8_t * b = row + (i / 32) * sizeof(q::block_q4_1);
        const int j = int(i % 32);
        const uint8_t byte = b[offsetof(q::block_q4_1, qs) + j % 16];
        const uint32_t nib = j < 16 ? (byte & 0xF) : (byte >> 4);
        return mul_add(float(nib), half_at(b), half_at(b + offsetof(q::block_q4_1, m)));
    } else if constexpr (T == DType::Q5_0 || T == DType::Q5_1) {
        using Block = std::conditional_t<T == DType::Q5_0, q::block_q5_0, q::block_q5_1>;
        const uint8_t * b = row + (i / 32) * sizeof(Block);
        const int j = int(i % 32);
        const uint32_t qh = load_u32_a2(b + offsetof(Block, qh));
        const uint8_t byte = b[offsetof(Block, qs) + j % 16];
        const uint32_t low = j < 16 ? (byte & 0xF) : (byte >> 4);
        const int qv = int(low | (((qh >> j) & 1u) << 4));
        if constexpr (T == DType::Q5_0) return float(qv - 16) * half_at(b);
        else return mul_add(float(qv), half_at(b), half_at(b + offsetof(q::block_q5_1, m)));
    } else if constexpr (T == DType::Q8_0) {
        const uint8_t * b = row + (i / 32) * sizeof(q::block_q8_0);
        const int8_t qv = reinterpret_cast<const int8_t *>(b + offsetof(q::block_q8_0, qs))[i % 32];
        return float(qv) * half_at(b);
    } else if constexpr (T == DType::Q2_K || T == DType::Q3_K) {
        using Block = std::conditional_t<T == DType::Q2_K, q::block_q2_K, q::block_q3_K>;
        const uint8_t * b = row + (i / 256) * sizeof(Block);
        const int e = int(i % 256);
        // two_bits (quant_kquants.cpp): element e of half h at qs[32h + e % 32], bits 2((e % 128) / 32).
        const int two = (b[offsetof(Block, qs) + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        const float d = half_at(b + offsetof(Block, d));
        if constexpr (T == DType::Q2_K) {
            const int sc = b[offsetof(q::block_q2_K, scales) + e / 16];
            const float dl = d * float(sc & 0xF);
            const float ml = half_at(b + offsetof(q::block_q2_K, dmin)) * float(sc >> 4);
            return mul_sub(dl, float(two), ml);
        } else {
            const int high = (b[offsetof(q::block_q3_K, hmask) + e % 32] >> (e / 32)) & 1;
            const float dl = d * float(scale_q3_k(e / 16, b + offsetof(q::block_q3_K, scales)) - 32);
            return dl * float((two | (high << 2)) - 4);
        }
    } else if constexpr (T == DType::Q4_K || T == DType::Q5_K) {
        using Block = std::conditional_t<T == DType::Q4_K, q::block_q4_K, q::block_q5_K>;
        const uint8_t * b = row + (i / 256) * sizeof(Block);
        const int e = int(i % 256);
        // nibble_k: element e of 64-chunk c at qs[32c + e % 32], low nibble for the first 32.
        const uint8_t byte = b[offsetof(Block, qs) + 32 * (e / 64) + e % 32];
        int qv = (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
        if constexpr (T == DType::Q5_K) qv |= ((b[offsetof(q::block_q5_K, qh) + e % 32] >> (e / 32)) & 1) << 4;
        int sc, m;
        scale_min_k4(e / 32, b + offsetof(Block, scales), sc, m);
        const float dl = half_at(b + offsetof(Block, d)) * float(sc);
        const float ml = half_at(b + offsetof(Block, dmin)) * float(m);
        return mul_sub(dl, float(qv), ml);
    } else if constexpr (T == DType::Q6_K) {
        const uint8_t * b = row + (i / 256) * sizeof(q::block_q6_K);
        const int e = int(i % 256);
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        const uint8_t low_byte = b[offsetof(q::block_q6_K, ql) + 64 * h + 32 * (g & 1) + l];
        const int low = g < 2 ? (low_byte & 0xF) : (low_byte >> 4);
        const int high = (b[offsetof(q::block_q6_K, qh) + 32 * h + l] >> (2 * g)) & 3;
        const int sc = reinterpret_cast<const int8_t *>(b + offsetof(q::block_q6_K, scales))[e / 16];
        const float dl = half_at(b + offsetof(q::block_q6_K, d)) * float(sc);
        return dl * float((low | (high << 4)) - 32);
    } else {
        static_assert(T == DType::F32, "dequant_one: type without a kernel");
        return 0.0f;
    }
}

// ---- a warp's step of 256 elements ------------------------------------------------------------

// `aligned16`: the row starts on 16 bytes (float types load 16 bytes at a time then).
template <DType T>
LR_HD void dequant_step(const uint8_t * row, int64_t step, int lane, bool aligned16, float (&v)[8], int & a0, int & a1) {
    if constexpr (T == DType::F32 || T == DType::F16 || T == DType::BF16) {
        // Lane l: columns 8l .. 8l + 7 of the step.
        a0 = 8 * lane;
        a1 = a0 + 4;
        const uint8_t * p = row + (step * 256 + a0) * int64_t(T == DType::F32 ? 4 : 2);
        if constexpr (T == DType::F32) {
            if (aligned16) {
                uint32_t w[4];
                for (int half = 0; half < 2; ++half) {
                    load_16(p + 16 * half, w);
                    for (int k = 0; k < 4; ++k) v[4 * half + k] = bits_to_float(w[k]);
                }
            } else {
                for (int k = 0; k < 8; ++k) v[k] = load_f32(p + 4 * k);
            }
        } else {
            uint16_t h[8];
            if (aligned16) {
                uint32_t w[4];
                load_16(p, w);
                for (int k = 0; k < 4; ++k) {
                    h[2 * k] = uint16_t(w[k] & 0xFFFFu);
                    h[2 * k + 1] = uint16_t(w[k] >> 16);
                }
            } else {
                for (int k = 0; k < 8; ++k) h[k] = load_u16(p + 2 * k);
            }
            for (int k = 0; k < 8; ++k) v[k] = T == DType::F16 ? half_bits_to_float(h[k]) : bf16_bits_to_float(h[k]);
        }
    } else if constexpr (T == DType::Q4_0 || T == DType::IQ4_NL || T == DType::Q4_1 || T == DType::Q5_0 || T == DType::Q5_1 ||
                         T == DType::Q8_0) {
        // Eight 32-element blocks per step; four lanes per block.
        const int blk = lane / 4, part = lane % 4;
        if constexpr (T == DType::Q8_0) {
            // Lane: elements 8 part .. 8 part + 7 of its block.
            const uint8_t * b = row + (step * 8 + blk) * int64_t(sizeof(q::block_q8_0));
            const float d = half_at(b);
            const uint8_t * qs = b + offsetof(q::block_q8_0, qs) + 8 * part;
            const uint32_t w0 = load_u32_a2(qs), w1 = load_u32_a2(qs + 4);
            for (int k = 0; k < 4; ++k) {
                v[k] = float(int8_t(byte_of(w0, k))) * d;
                v[4 + k] = float(int8_t(byte_of(w1, k))) * d;
            }
            a0 = 32 * blk + 8 * part;
            a1 = a0 + 4;
        } else {
            // Lane: bytes 4 part .. 4 part + 3 of qs, that is elements j (low nibbles) and
            // j + 16 (high nibbles) for j in 4 part .. 4 part + 3.
            const int j0 = 4 * part;
            a0 = 32 * blk + j0;
            a1 = a0 + 16;
            if constexpr (T == DType::Q4_0 || T == DType::IQ4_NL) {
                const uint8_t * b = row + (step * 8 + blk) * int64_t(sizeof(q::block_q4_0));
                const float d = half_at(b);
                const uint32_t qs = load_u32_a2(b + offsetof(q::block_q4_0, qs) + j0);
                for (int k = 0; k < 4; ++k) {
                    const uint32_t byte = byte_of(qs, k);
                    if constexpr (T == DType::Q4_0) {
                        v[k] = float(int(byte & 0xF) - 8) * d;
                        v[4 + k] = float(int(byte >> 4) - 8) * d;
                    } else {
                        v[k] = d * float(iq4nl_level(byte & 0xF));
                        v[4 + k] = d * float(iq4nl_level(byte >> 4));
                    }
                }
            } else if constexpr (T == DType::Q4_1) {
                const uint8_t * b = row + (step * 8 + blk) * int64_t(sizeof(q::block_q4_1));
                const float d = half_at(b), m = half_at(b + offsetof(q::block_q4_1, m));
                const uint32_t qs = load_u32_a4(b + offsetof(q::block_q4_1, qs) + j0);
                for (int k = 0; k < 4; ++k) {
                    const uint32_t byte = byte_of(qs, k);
                    v[k] = mul_add(float(byte & 0xF), d, m);
                    v[4 + k] = mul_add(float(byte >> 4), d, m);
                }
            } else {
                using Block = std::conditional_t<T == DType::Q5_0, q::block_q5_0, q::block_q5_1>;
                const uint8_t * b = row + (step * 8 + blk) * int64_t(sizeof(Block));
                const float d = half_at(b);
                const uint32_t qh = load_u32_a2(b + offsetof(Block, qh));
                const uint32_t qs = load_u32_a2(b + offsetof(Block, qs) + j0);
                for (int k = 0; k < 4; ++k) {
                    const uint32_t byte = byte_of(qs, k);
                    const int lo = int((byte & 0xF) | (((qh >> (j0 + k)) & 1u) << 4));
                    const int hi = int((byte >> 4) | (((qh >> (j0 + k + 16)) & 1u) << 4));
                    if constexpr (T == DType::Q5_0) {
                        v[k] = float(lo - 16) * d;
                        v[4 + k] = float(hi - 16) * d;
                    } else {
                        const float m = half_at(b + offsetof(q::block_q5_1, m));
                        v[k] = mul_add(float(lo), d, m);
                        v[4 + k] = mul_add(float(hi), d, m);
                    }
                }
            }
        }
    } else if constexpr (T == DType::Q4_K || T == DType::Q5_K) {
        // Lane: qs bytes 32 j + i0 .. + 3 of chunk j = lane / 8, i.e. elements 64 j + i0 + k
        // (low nibbles, sub-block 2 j) and 64 j + 32 + i0 + k (high nibbles, sub-block 2 j + 1).
        using Block = std::conditional_t<T == DType::Q4_K, q::block_q4_K, q::block_q5_K>;
        const uint8_t * b = row + step * int64_t(sizeof(Block));
        const int j = lane / 8, i0 = 4 * (lane % 8);
        const float d = half_at(b + offsetof(Block, d)), dmin = half_at(b + offsetof(Block, dmin));
        int sc0, m0, sc1, m1;
        scale_min_k4(2 * j, b + offsetof(Block, scales), sc0, m0);
        scale_min_k4(2 * j + 1, b + offsetof(Block, scales), sc1, m1);
        const float dl0 = d * float(sc0), ml0 = dmin * float(m0);
        const float dl1 = d * float(sc1), ml1 = dmin * float(m1);
        const uint32_t qs = load_u32_a4(b + offsetof(Block, qs) + 32 * j + i0);
        uint32_t qh = 0;
        if constexpr (T == DType::Q5_K) qh = load_u32_a4(b + offsetof(q::block_q5_K, qh) + i0);
        for (int k = 0; k < 4; ++k) {
            const uint32_t byte = byte_of(qs, k);
            int lo = int(byte & 0xF), hi = int(byte >> 4);
            if constexpr (T == DType::Q5_K) {
                // Bit 4 of element 32 s + l (sub-block s) is bit s of qh[l].
                const uint32_t h = byte_of(qh, k);
                lo |= int((h >> (2 * j)) & 1u) << 4;
                hi |= int((h >> (2 * j + 1)) & 1u) << 4;
            }
            v[k] = mul_sub(dl0, float(lo), ml0);
            v[4 + k] = mul_sub(dl1, float(hi), ml1);
        }
        a0 = 64 * j + i0;
        a1 = a0 + 32;
    } else if constexpr (T == DType::Q6_K) {
        // Lane: ql bytes 64 n + m0 .. + 3 (n = lane / 16, m0 = 4 (lane % 16)): their low
        // nibbles are elements 128 n + m0 + k, their high nibbles 128 n + 64 + m0 + k; the top
        // two bits sit in qh[32 n + m0 % 32 + k] at bits 2 g (low) and 2 g + 4 (high), g = m0 / 32.
        const uint8_t * b = row + step * int64_t(sizeof(q::block_q6_K));
        const int n = lane / 16, m0 = 4 * (lane % 16), g = m0 / 32;
        const float d = half_at(b + offsetof(q::block_q6_K, d));
        const int8_t * scales = reinterpret_cast<const int8_t *>(b + offsetof(q::block_q6_K, scales));
        const float dl0 = d * float(scales[(128 * n + m0) / 16]);
        const float dl1 = d * float(scales[(128 * n + 64 + m0) / 16]);
        const uint32_t ql = load_u32_a2(b + offsetof(q::block_q6_K, ql) + 64 * n + m0);
        const uint32_t qh = load_u32_a2(b + offsetof(q::block_q6_K, qh) + 32 * n + m0 % 32);
        for (int k = 0; k < 4; ++k) {
            const uint32_t lb = byte_of(ql, k), hb = byte_of(qh, k);
            const int lo = int((lb & 0xF) | (((hb >> (2 * g)) & 3u) << 4)) - 32;
            const int hi = int((lb >> 4) | (((hb >> (2 * g + 4)) & 3u) << 4)) - 32;
            v[k] = dl0 * float(lo);
            v[4 + k] = dl1 * float(hi);
        }
        a0 = 128 * n + m0;
        a1 = a0 + 64;
    } else if constexpr (T == DType::Q2_K || T == DType::Q3_K) {
        // Lane: qs bytes 32 n + m0 .. + 3 (n = (lane % 16) / 8, m0 = 4 (lane % 8)) at the two
        // shifts s = 2 j for j in {j0, j0 + 1}, j0 = 2 (lane / 16): elements 128 n + 32 j + m0 + k.
        using Block = std::conditional_t<T == DType::Q2_K, q::block_q2_K, q::block_q3_K>;
        const uint8_t * b = row + step * int64_t(sizeof(Block));
        const int n = (lane % 16) / 8, m0 = 4 * (lane % 8), j0 = 2 * (lane / 16);
        const float d = half_at(b + offsetof(Block, d));
        uint32_t qs, hm = 0;
        if constexpr (T == DType::Q2_K) {
            qs = load_u32_a4(b + offsetof(q::block_q2_K, qs) + 32 * n + m0);
        } else {
            qs = load_u32_a2(b + offsetof(q::block_q3_K, qs) + 32 * n + m0);
            hm = load_u32_a2(b + offsetof(q::block_q3_K, hmask) + m0);  // element e: bit e / 32 of hmask[e % 32]
        }
        for (int r = 0; r < 2; ++r) {
            const int j = j0 + r;
            const int sub = (128 * n + 32 * j + m0) / 16;
            float dl, ml = 0.0f;
            if constexpr (T == DType::Q2_K) {
                const int sc = b[offsetof(q::block_q2_K, scales) + sub];
                dl = d * float(sc & 0xF);
                ml = half_at(b + offsetof(q::block_q2_K, dmin)) * float(sc >> 4);
            } else {
                dl = d * float(scale_q3_k(sub, b + offsetof(q::block_q3_K, scales)) - 32);
            }
            for (int k = 0; k < 4; ++k) {
                const int two = int((byte_of(qs, k) >> (2 * j)) & 3u);
                if constexpr (T == DType::Q2_K) {
                    v[4 * r + k] = mul_sub(dl, float(two), ml);
                } else {
                    const int high = int((byte_of(hm, k) >> (4 * n + j)) & 1u);
                    v[4 * r + k] = dl * float((two | (high << 2)) - 4);
                }
            }
        }
        a0 = 128 * n + 32 * j0 + m0;
        a1 = a0 + 32;
    } else {
        static_assert(T == DType::F32, "dequant_step: type without a kernel");
    }
}

// Expands CASE(T) for the runtime weight type (one of kernels_read's types).
#define LR_CUDA_DISPATCH_TYPE(type, CASE)                                   \
    switch (type) {                                                         \
        case DType::F32: CASE(DType::F32); break;                           \
        case DType::F16: CASE(DType::F16); break;                           \
        case DType::BF16: CASE(DType::BF16); break;                         \
        case DType::Q4_0: CASE(DType::Q4_0); break;                         \
        case DType::Q4_1: CASE(DType::Q4_1); break;                         \
        case DType::Q5_0: CASE(DType::Q5_0); break;                         \
        case DType::Q5_1: CASE(DType::Q5_1); break;                         \
        case DType::Q8_0: CASE(DType::Q8_0); break;                         \
        case DType::Q2_K: CASE(DType::Q2_K); break;                         \
        case DType::Q3_K: CASE(DType::Q3_K); break;                         \
        case DType::Q4_K: CASE(DType::Q4_K); break;                         \
        case DType::Q5_K: CASE(DType::Q5_K); break;                         \
        case DType::Q6_K: CASE(DType::Q6_K); break;                         \
        case DType::IQ4_NL: CASE(DType::IQ4_NL); break;                     \
        default: LR_ASSERT(false && "no CUDA kernel for this weight type"); \
    }

}  // namespace lr::cuda
