// The K-quants: super-blocks of 256 elements split into sub-blocks of 16 or 32, whose
// scales (and mins) are themselves quantized against one or two fp16 super-block scales.
// Q2_K..Q6_K weights and the Q8_K activation format. Bit-exact with ggml-quants.c: every
// float expression keeps ggml's operand order.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/common/fp16.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

// One super-block with its bits unpacked. Element e (row order) belongs to sub-block
// e / (QK_K / n_sub) and is worth d * scale * q - dmin * min.
struct Unpacked {
    int8_t q[QK_K];  // [256] level of each element, offset removed (signed for Q3_K, Q6_K)
    int n_sub = 16;  // 16 sub-blocks of 16, or 8 of 32
    int scale[16];   // [n_sub] integer sub-block scales
    int min[16];     // [n_sub] integer sub-block mins (0 for the symmetric Q3_K, Q6_K)
};

// Element e of a 128-element half h sits at qs[32h + e % 32], bits 2*(e % 128 / 32)..+1.
int two_bits(const uint8_t * qs, int e) {
    const int h = e / 128;
    const int shift = 2 * ((e % 128) / 32);
    return (qs[32 * h + e % 32] >> shift) & 3;
}

// Element e of a 64-element chunk c: low nibble of qs[32c + e % 32] for the first 32,
// high nibble for the next 32.
int nibble_k(const uint8_t * qs, int e) {
    const uint8_t byte = qs[32 * (e / 64) + e % 32];
    return (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
}

void unpack(const block_q2_K & b, Unpacked & u) {
    u.n_sub = 16;
    for (int e = 0; e < QK_K; ++e) u.q[e] = static_cast<int8_t>(two_bits(b.qs, e));
    for (int j = 0; j < 16; ++j) {
        u.scale[j] = b.scales[j] & 0xF;
        u.min[j] = b.scales[j] >> 4;
    }
}

void unpack(const block_q3_K & b, Unpacked & u) {
    u.n_sub = 16;
    for (int e = 0; e < QK_K; ++e) {
        const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
        u.q[e] = static_cast<int8_t>((two_bits(b.qs, e) | (high << 2)) - 4);
    }
    for (int j = 0; j < 16; ++j) {
        u.scale[j] = unpack_scale_q3_K(j, b.scales) - 32;
        u.min[j] = 0;
    }
}

void unpack(const block_q4_K & b, Unpacked & u) {
    u.n_sub = 8;
    for (int e = 0; e < QK_K; ++e) u.q[e] = static_cast<int8_t>(nibble_k(b.qs, e));
    for (int j = 0; j < 8; ++j) {
        uint8_t sc;
        uint8_t m;
        unpack_scale_min_k4(j, b.scales, sc, m);
        u.scale[j] = sc;
        u.min[j] = m;
    }
}

void unpack(const block_q5_K & b, Unpacked & u) {
    u.n_sub = 8;
    for (int e = 0; e < QK_K; ++e) {
        const int high = (b.qh[e % 32] >> (e / 32)) & 1;
        u.q[e] = static_cast<int8_t>(nibble_k(b.qs, e) | (high << 4));
    }
    for (int j = 0; j < 8; ++j) {
        uint8_t sc;
        uint8_t m;
        unpack_scale_min_k4(j, b.scales, sc, m);
        u.scale[j] = sc;
        u.min[j] = m;
    }
}

void unpack(const block_q6_K & b, Unpacked & u) {
    u.n_sub = 16;
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128;
        const int g = (e % 128) / 32;  // which of the four 32-element groups of the half
        const int l = e % 32;
        const uint8_t low_byte = b.ql[64 * h + 32 * (g & 1) + l];
        const int low = g < 2 ? (low_byte & 0xF) : (low_byte >> 4);
        const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
        u.q[e] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
    for (int j = 0; j < 16; ++j) {
        u.scale[j] = b.scales[j];
        u.min[j] = 0;
    }
}

// y[e] = (d * scale) * q - dmin * min, per sub-block: ggml's dequantize order.
void dequantize_asymmetric(const Unpacked & u, float d, float dmin, float * y) {
    const int sub_size = QK_K / u.n_sub;
    for (int j = 0; j < u.n_sub; ++j) {
        const float dl = d * static_cast<float>(u.scale[j]);
        const float ml = dmin * static_cast<float>(u.min[j]);
        for (int k = 0; k < sub_size; ++k) y[j * sub_size + k] = dl * static_cast<float>(u.q[j * sub_size + k]) - ml;
    }
}

// y[e] = (d * scale) * q.
void dequantize_symmetric(const Unpacked & u, float d, float * y) {
    const int sub_size = QK_K / u.n_sub;
    for (int j = 0; j < u.n_sub; ++j) {
        const float dl = d * static_cast<float>(u.scale[j]);
        for (int k = 0; k < sub_size; ++k) y[j * sub_size + k] = dl * static_cast<float>(u.q[j * sub_size + k]);
    }
}

// sum over sub-blocks of scale * (q . q8): exact in int (|sum| < 2^28).
int scaled_int_dot(const Unpacked & u, const int8_t * q8) {
    const int sub_size = QK_K / u.n_sub;
    int isum = 0;
    for (int j = 0; j < u.n_sub; ++j) {
        int sumi = 0;
        for (int k = 0; k < sub_size; ++k) sumi += u.q[j * sub_size + k] * q8[j * sub_size + k];
        isum += u.scale[j] * sumi;
    }
    return isum;
}

// sum over sub-blocks of min * sum(q8), from the activation's 16-element sums.
int min_int_dot(const Unpacked & u, const int16_t * bsums) {
    const int bsums_per_sub = 16 / u.n_sub;
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += bsums[j] * u.min[j / bsums_per_sub];
    return summs;
}

// sum(w * a) over a super-block of an asymmetric type:
// d_a d_w sum_j scale_j (q . q8)_j - d_a dmin_w sum_j min_j sum(q8)_j.
// NOTE: ggml's scalar Q4_K/Q5_K code spreads the integer sum over 8 float lanes; summing it
// in one int and scaling once differs from that only in float rounding.
template <class Block>
float vec_dot_asymmetric(size_t n, const Block * x, const block_q8_K * y) {
    const size_t nb = n / QK_K;
    float sumf = 0.0f;
    Unpacked u;
    for (size_t i = 0; i < nb; ++i) {
        unpack(x[i], u);
        const float dall = y[i].d * fp16_to_fp32(x[i].d);
        const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
        const int isum = scaled_int_dot(u, y[i].qs);
        const int summs = min_int_dot(u, y[i].bsums);
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

template <class Block>
float vec_dot_symmetric(size_t n, const Block * x, const block_q8_K * y) {
    const size_t nb = n / QK_K;
    float sumf = 0.0f;
    Unpacked u;
    for (size_t i = 0; i < nb; ++i) {
        unpack(x[i], u);
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        sumf += d * static_cast<float>(scaled_int_dot(u, y[i].qs));
    }
    return sumf;
}

// The 6-bit scale/min packing of Q4_K and Q5_K (see unpack_scale_min_k4).
void pack_scale_min_k4(const uint8_t * ls, const uint8_t * lm, uint8_t * scales) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
            scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
        }
    }
}

// Q2_K and Q3_K store 2-bit levels L[0..256) of a super-block as described in block_q2_K.
void pack_two_bits(const uint8_t * L, uint8_t * qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

// The first pass of Q4_K and Q5_K: per sub-block of 32, an asymmetric fit with weights
// av_x + |x| (av_x = rms of the sub-block), then the scales and mins quantized to 6 bits
// against their maxima. Returns the requantized levels in L (0..nmax).
template <class Block>
void quantize_k4_common(const float * x, Block & y, uint8_t * L, int nmax, float rmin, float rdelta, int nstep) {
    uint8_t Laux[32];
    float weights[32];
    float mins[QK_K / 32];
    float scales[QK_K / 32];
    float max_scale = 0.0f;  // the min is subtracted, so scales are >= 0
    float max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float * xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }

    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[QK_K / 32];
    uint8_t lm[QK_K / 32];
    for (int j = 0; j < QK_K / 32; ++j) {
        // NOTE: ggml stores nearest_int into a uint8_t before capping at 63.
        ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
        lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    }
    pack_scale_min_k4(ls, lm, y.scales);
    y.d = fp32_to_fp16(max_scale / 63.f);
    y.dmin = fp32_to_fp16(max_min / 63.f);

    // Requantize against the scales as stored; a sub-block whose scale rounded to 0 keeps
    // the levels of its fit (they do not matter: it dequantizes to -min).
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc;
        uint8_t m;
        unpack_scale_min_k4(j, y.scales, sc, m);
        const float d = fp16_to_fp32(y.d) * static_cast<float>(sc);
        if (d == 0.0f) continue;
        const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        }
    }
}

}  // namespace

// ---- dequantize ----------------------------------------------------------------------------

// Q2_K, Q4_K, Q5_K: levels times scale minus min; Q3_K, Q6_K: signed levels times scale.
template <class Block>
void dequantize_asymmetric_blocks(const Block * x, float * y, size_t n) {
    Unpacked u;
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack(x[i], u);
        dequantize_asymmetric(u, fp16_to_fp32(x[i].d), fp16_to_fp32(x[i].dmin), y);
    }
}

template <class Block>
void dequantize_symmetric_blocks(const Block * x, float * y, size_t n) {
    Unpacked u;
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack(x[i], u);
        dequantize_symmetric(u, fp16_to_fp32(x[i].d), y);
    }
}

void dequantize_row_q2_K(const block_q2_K * x, float * y, size_t n) { dequantize_asymmetric_blocks(x, y, n); }
void dequantize_row_q3_K(const block_q3_K * x, float * y, size_t n) { dequantize_symmetric_blocks(x, y, n); }
void dequantize_row_q4_K(const block_q4_K * x, float * y, size_t n) { dequantize_asymmetric_blocks(x, y, n); }
void dequantize_row_q5_K(const block_q5_K * x, float * y, size_t n) { dequantize_asymmetric_blocks(x, y, n); }
void dequantize_row_q6_K(const block_q6_K * x, float * y, size_t n) { dequantize_symmetric_blocks(x, y, n); }

void dequantize_row_q8_K(const block_q8_K * x, float * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        for (int j = 0; j < QK_K; ++j) y[j] = x[i].d * static_cast<float>(x[i].qs[j]);
    }
}

// ---- quantize (ggml's *_ref) ---------------------------------------------------------------

// Per sub-block of 16: an asymmetric 2-bit fit minimizing |x|-weighted absolute error; the
// 4-bit scales and mins are linear in [0, max] (no search), then the levels are recomputed
// against the stored scales.
void quantize_row_q2_K_ref(const float * x, block_q2_K * y, size_t n) {
    constexpr float q4scale = 15.f;
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K];
        uint8_t Laux[16];
        float weights[16];
        float mins[QK_K / 16];
        float scales[QK_K / 16];
        float max_scale = 0.0f;
        float max_min = 0.0f;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }

        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
            y[i].d = fp32_to_fp16(max_scale / q4scale);
        } else {
            std::memset(y[i].scales, 0, sizeof(y[i].scales));
            y[i].d = fp32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
            }
            y[i].dmin = fp32_to_fp16(max_min / q4scale);
        } else {
            y[i].dmin = fp32_to_fp16(0.f);
        }

        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = fp16_to_fp32(y[i].dmin) * static_cast<float>(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
            }
        }
        pack_two_bits(L, y[i].qs);
    }
}

// Per sub-block of 16: a symmetric 3-bit fit (make_q3_quants); the signed 6-bit scales are
// linear with the largest-magnitude scale on -32; levels recomputed against stored scales.
void quantize_row_q3_K_ref(const float * x, block_q3_K * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        int8_t L[QK_K];
        float scales[QK_K / 16];
        float max_scale = 0.0f;
        float amax = 0.0f;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }

        std::memset(y[i].scales, 0, sizeof(y[i].scales));
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                // NOTE: ggml narrows nearest_int to int8_t before clamping; |value| <= 32 here.
                const auto l8 = static_cast<int8_t>(nearest_int(iscale * scales[j]));
                const int l = std::max<int>(-32, std::min<int>(31, l8)) + 32;
                if (j < 8) {
                    y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
                } else {
                    y[i].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
                }
                y[i].scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
            }
            y[i].d = fp32_to_fp16(1 / iscale);
        } else {
            y[i].d = fp32_to_fp16(0.f);
        }

        for (int j = 0; j < QK_K / 16; ++j) {
            const int sc = unpack_scale_q3_K(j, y[i].scales) - 32;
            const float d = fp16_to_fp32(y[i].d) * static_cast<float>(sc);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
            }
        }

        // Bit 2 of each level goes to hmask (element e: bit e / 32 of hmask[e % 32]).
        uint8_t L2[QK_K];
        std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
        for (int e = 0; e < QK_K; ++e) {
            int l = L[e];
            if (l > 3) {
                y[i].hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
                l -= 4;
            }
            L2[e] = static_cast<uint8_t>(l);
        }
        pack_two_bits(L2, y[i].qs);
    }
}

// Sub-blocks of 32, 4-bit levels: see quantize_k4_common.
void quantize_row_q4_K_ref(const float * x, block_q4_K * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K];
        quantize_k4_common(x, y[i], L, 15, -1.f, 0.1f, 20);
        uint8_t * q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32) {
            for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

// Sub-blocks of 32, 5-bit levels: see quantize_k4_common.
void quantize_row_q5_K_ref(const float * x, block_q5_K * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        uint8_t L[QK_K];
        quantize_k4_common(x, y[i], L, 31, -0.5f, 0.1f, 15);
        std::memset(y[i].qh, 0, sizeof(y[i].qh));
        uint8_t * ql = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, ql += 32) {
            const int sub = j / 32;  // elements j..j+31 are sub-block `sub`, the next 32 sub + 1
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[j + l];
                const int l2 = L[j + l + 32];
                y[i].qh[l] |= static_cast<uint8_t>(((l1 >> 4) << sub) | ((l2 >> 4) << (sub + 1)));
                ql[l] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        }
    }
}

// Per sub-block of 16: a symmetric 6-bit fit (make_qx_quants, 32 levels each side); 8-bit
// scales with the largest-magnitude scale on -128; levels recomputed against stored scales.
void quantize_row_q6_K_ref(const float * x, block_q6_K * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        int8_t L[QK_K];
        float scales[QK_K / 16];
        float max_scale = 0.0f;
        float max_abs_scale = 0.0f;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            const float abs_scale = std::fabs(scales[ib]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[ib];
            }
        }

        if (max_abs_scale < 1e-15f) {  // GROUP_MAX_EPS: an all-(near-)zero super-block
            std::memset(&y[i], 0, sizeof(block_q6_K));
            continue;
        }

        const float iscale = -128.f / max_scale;
        y[i].d = fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        }

        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j]);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
            }
        }

        uint8_t * ql = y[i].ql;
        uint8_t * qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l];
                const int q2 = L[j + l + 32];
                const int q3 = L[j + l + 64];
                const int q4 = L[j + l + 96];
                ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
                ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
                qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

// Activations: the signed max maps to -127 (not -128, which keeps SIMD code simple); d is a
// full float. bsums hold the 16-element sums used for the mins of the weight types.
void quantize_row_q8_K_ref(const float * x, block_q8_K * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float max = 0.0f;
        float amax = 0.0f;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            // NOTE: ggml leaves bsums unwritten here; zero is their value.
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
            y[i].bsums[j] = static_cast<int16_t>(sum);
        }
        y[i].d = 1 / iscale;
    }
}

// ---- dot products with Q8_K activations -----------------------------------------------------

float vec_dot_q2_K_q8_K(size_t n, const block_q2_K * x, const block_q8_K * y) { return vec_dot_asymmetric(n, x, y); }
float vec_dot_q3_K_q8_K(size_t n, const block_q3_K * x, const block_q8_K * y) { return vec_dot_symmetric(n, x, y); }
float vec_dot_q4_K_q8_K(size_t n, const block_q4_K * x, const block_q8_K * y) { return vec_dot_asymmetric(n, x, y); }
float vec_dot_q5_K_q8_K(size_t n, const block_q5_K * x, const block_q8_K * y) { return vec_dot_asymmetric(n, x, y); }
float vec_dot_q6_K_q8_K(size_t n, const block_q6_K * x, const block_q8_K * y) { return vec_dot_symmetric(n, x, y); }

}  // namespace lr::quant::detail
