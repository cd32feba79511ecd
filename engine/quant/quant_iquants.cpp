// The i-quants: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (lattice grids with
// separate signs and odd sub-block scales) and IQ4_XS (IQ4_NL levels under 6-bit scales):
// dequantization and dot products with Q8_K activations. Bit-exact with ggml-quants.c and
// ggml-cpu/quants.c (the generic code): every float expression keeps ggml's operand order.
// Quantizers: quant_iq3_quantize.cpp, quant_iq4_xs.cpp.

#include <cstring>

#include "engine/common/fp16.h"
#include "engine/quant/quant_grids.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

// One super-block with its grid lookups and signs applied. Element e is worth
// d * ls[e / 16] * kScale * v[e] (IQ2, IQ3) or d * ls[e / 16] * (v[e] + delta[e / 8] / 8)
// (IQ1), with d the super-block scale.
struct IqUnpacked {
    int8_t v[QK_K];       // [256] signed grid value (magnitude from the grid, sign applied)
    int ls[QK_K / 16];    // [16] odd sub-block scale 2s + 1 of each 16 elements
    int delta[QK_K / 8];  // [32] IQ1 only: +1 or -1 per group of 8 elements
};

// 8 elements from an 8-byte grid entry, negated where `signs` has a bit set.
void put8(int8_t * v, uint64_t entry, uint8_t signs) {
    for (int j = 0; j < 8; ++j) {
        const auto g = static_cast<int8_t>(entry >> (8 * j));
        v[j] = static_cast<int8_t>(signs >> j & 1 ? -g : g);
    }
}

// 4 elements from a 4-byte IQ3 grid entry, negated where bits `shift`.. of `signs` are set.
void put4(int8_t * v, uint32_t entry, uint8_t signs, int shift) {
    for (int j = 0; j < 4; ++j) {
        const auto g = static_cast<int8_t>(entry >> (8 * j));
        v[j] = static_cast<int8_t>(signs >> (shift + j) & 1 ? -g : g);
    }
}

uint32_t load_u32(const void * p) {
    uint32_t u;
    std::memcpy(&u, p, sizeof(u));
    return u;
}

void unpack(const block_iq2_xxs & b, IqUnpacked & u) {
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const uint32_t a0 = load_u32(b.qs + 4 * ib);
        const uint32_t a1 = load_u32(b.qs + 4 * ib + 2);
        for (int l = 0; l < 4; ++l) put8(u.v + 32 * ib + 8 * l, iq2xxs_grid[(a0 >> (8 * l)) & 255], ksigns_iq2xs[(a1 >> (7 * l)) & 127]);
        u.ls[2 * ib] = u.ls[2 * ib + 1] = 2 * int(a1 >> 28) + 1;
    }
}

void unpack(const block_iq2_xs & b, IqUnpacked & u) {
    for (int g = 0; g < QK_K / 8; ++g) put8(u.v + 8 * g, iq2xs_grid[b.qs[g] & 511], ksigns_iq2xs[b.qs[g] >> 9]);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        u.ls[2 * ib] = 2 * (b.scales[ib] & 0xf) + 1;
        u.ls[2 * ib + 1] = 2 * (b.scales[ib] >> 4) + 1;
    }
}

void unpack(const block_iq2_s & b, IqUnpacked & u) {
    const uint8_t * signs = b.qs + QK_K / 8;
    for (int g = 0; g < QK_K / 8; ++g) {
        const int ib = g / 4, l = g % 4;
        put8(u.v + 8 * g, iq2s_grid[b.qs[g] | ((b.qh[ib] << (8 - 2 * l)) & 0x300)], signs[g]);
    }
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        u.ls[2 * ib] = 2 * (b.scales[ib] & 0xf) + 1;
        u.ls[2 * ib + 1] = 2 * (b.scales[ib] >> 4) + 1;
    }
}

void unpack(const block_iq3_xxs & b, IqUnpacked & u) {
    const uint8_t * scales_and_signs = b.qs + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const uint32_t aux = load_u32(scales_and_signs + 4 * ib);
        for (int l = 0; l < 4; ++l) {
            const uint8_t signs = ksigns_iq2xs[(aux >> (7 * l)) & 127];
            put4(u.v + 32 * ib + 8 * l, iq3xxs_grid[b.qs[8 * ib + 2 * l]], signs, 0);
            put4(u.v + 32 * ib + 8 * l + 4, iq3xxs_grid[b.qs[8 * ib + 2 * l + 1]], signs, 4);
        }
        u.ls[2 * ib] = u.ls[2 * ib + 1] = 2 * int(aux >> 28) + 1;
    }
}

void unpack(const block_iq3_s & b, IqUnpacked & u) {
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const uint8_t * qs = b.qs + 8 * ib;
        const int qh = b.qh[ib];
        for (int l = 0; l < 4; ++l) {
            const uint8_t signs = b.signs[4 * ib + l];
            put4(u.v + 32 * ib + 8 * l, iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)], signs, 0);
            put4(u.v + 32 * ib + 8 * l + 4, iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)], signs, 4);
        }
        const int s = ib % 2 ? b.scales[ib / 2] >> 4 : b.scales[ib / 2] & 0xf;
        u.ls[2 * ib] = u.ls[2 * ib + 1] = 2 * s + 1;
    }
}

void unpack(const block_iq1_s & b, IqUnpacked & u) {
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const int qh = b.qh[ib];
        for (int l = 0; l < 4; ++l) put8(u.v + 32 * ib + 8 * l, iq1s_grid[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], 0);
        u.ls[2 * ib] = u.ls[2 * ib + 1] = 2 * ((qh >> 12) & 7) + 1;
        for (int l = 0; l < 4; ++l) u.delta[4 * ib + l] = qh & 0x8000 ? -1 : 1;
    }
}

uint16_t load_u16(const void * p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
    return h;
}

// The fp16 super-block scale of IQ1_M: the top nibbles of its four scale words.
uint16_t iq1m_scale_bits(const block_iq1_m & b) {
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = load_u16(b.scales + 2 * k);
    return static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

void unpack(const block_iq1_m & b, IqUnpacked & u) {
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const uint8_t * qh = b.qh + 2 * ib;
        for (int l = 0; l < 4; ++l) {
            const int h = qh[l / 2] >> (4 * (l % 2));  // this group's nibble
            put8(u.v + 32 * ib + 8 * l, iq1s_grid[b.qs[4 * ib + l] | ((h & 7) << 8)], 0);
            u.delta[4 * ib + l] = h & 8 ? -1 : 1;
        }
        const int sc = load_u16(b.scales + 2 * (ib / 2));
        u.ls[2 * ib] = 2 * ((sc >> (6 * (ib % 2))) & 7) + 1;
        u.ls[2 * ib + 1] = 2 * ((sc >> (6 * (ib % 2) + 3)) & 7) + 1;
    }
}

// The 6-bit scale of sub-block ib of an IQ4_XS block, minus its offset 32.
int iq4xs_scale(const block_iq4_xs & b, int ib) {
    const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf;
    const int high = (b.scales_h >> (2 * ib)) & 3;
    return (low | (high << 4)) - 32;
}

// y = (d * ls * k) * v, which is ggml's d * (0.5 + s) * k' * grid * sign bit for bit: the
// sign is exact, and (0.5 + s) * 2^-n and (2s + 1) * 2^-(n+1) round alike.
template <class Block>
void dequantize_grid_blocks(const Block * x, float * y, size_t n, float k) {
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack(x[i], u);
        const float d = fp16_to_fp32(x[i].d);
        for (int g = 0; g < QK_K / 16; ++g) {
            const float db = d * static_cast<float>(u.ls[g]) * k;
            for (int j = 0; j < 16; ++j) y[16 * g + j] = db * static_cast<float>(u.v[16 * g + j]);
        }
    }
}

// y = (d * ls) * (grid + delta / 8), ggml's order.
void dequantize_iq1(const IqUnpacked & u, float d, float * y) {
    for (int g = 0; g < QK_K / 16; ++g) {
        const float dl = d * static_cast<float>(u.ls[g]);
        for (int j = 0; j < 16; ++j) {
            const int e = 16 * g + j;
            const float delta = u.delta[e / 8] < 0 ? -kIq1Delta : kIq1Delta;
            y[e] = dl * (static_cast<float>(u.v[e]) + delta);
        }
    }
}

// sum over 16-element groups of ls * (v . q8): exact in int (|sum| < 2^24).
int scaled_int_dot(const IqUnpacked & u, const int8_t * q8) {
    int isum = 0;
    for (int g = 0; g < QK_K / 16; ++g) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) sumi += u.v[16 * g + j] * q8[16 * g + j];
        isum += u.ls[g] * sumi;
    }
    return isum;
}

// sum over 16-element groups of ls * (sum of delta * q8): the delta term of IQ1_S/IQ1_M.
int scaled_delta_dot(const IqUnpacked & u, const int8_t * q8) {
    int isum = 0;
    for (int g = 0; g < QK_K / 16; ++g) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) sumi += u.delta[(16 * g + j) / 8] * q8[16 * g + j];
        isum += u.ls[g] * sumi;
    }
    return isum;
}

// ggml: sumf += (d_w * d_a) * bsum per super-block, then k * sumf.
template <class Block>
float vec_dot_grid(size_t n, const Block * x, const block_q8_K * y, float k) {
    float sumf = 0.0f;
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i) {
        unpack(x[i], u);
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        sumf += d * static_cast<float>(scaled_int_dot(u, y[i].qs));
    }
    return k * sumf;
}

// ggml: sumf += d_w * d_a * (sumi + 1/8 * sumi1) per super-block.
float vec_dot_iq1(float d_w, const IqUnpacked & u, const block_q8_K & y) {
    const int sumi = scaled_int_dot(u, y.qs);
    const int sumi1 = scaled_delta_dot(u, y.qs);
    return d_w * y.d * (static_cast<float>(sumi) + kIq1Delta * static_cast<float>(sumi1));
}

}  // namespace

// ---- dequantize ----------------------------------------------------------------------------

void dequantize_row_iq2_xxs(const block_iq2_xxs * x, float * y, size_t n) { dequantize_grid_blocks(x, y, n, 0.125f); }
void dequantize_row_iq2_xs(const block_iq2_xs * x, float * y, size_t n) { dequantize_grid_blocks(x, y, n, 0.125f); }
void dequantize_row_iq2_s(const block_iq2_s * x, float * y, size_t n) { dequantize_grid_blocks(x, y, n, 0.125f); }
void dequantize_row_iq3_xxs(const block_iq3_xxs * x, float * y, size_t n) { dequantize_grid_blocks(x, y, n, 0.25f); }
void dequantize_row_iq3_s(const block_iq3_s * x, float * y, size_t n) { dequantize_grid_blocks(x, y, n, 1.0f); }

void dequantize_row_iq1_s(const block_iq1_s * x, float * y, size_t n) {
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack(x[i], u);
        dequantize_iq1(u, fp16_to_fp32(x[i].d), y);
    }
}

void dequantize_row_iq1_m(const block_iq1_m * x, float * y, size_t n) {
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack(x[i], u);
        dequantize_iq1(u, fp16_to_fp32(iq1m_scale_bits(x[i])), y);
    }
}

void dequantize_row_iq4_xs(const block_iq4_xs * x, float * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ++ib, y += 32) {
            const float dl = d * static_cast<float>(iq4xs_scale(x[i], ib));
            const uint8_t * qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xf]);
                y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
            }
        }
    }
}

// ---- dot products with Q8_K activations -----------------------------------------------------

float vec_dot_iq2_xxs_q8_K(size_t n, const block_iq2_xxs * x, const block_q8_K * y) { return vec_dot_grid(n, x, y, 0.125f); }
float vec_dot_iq2_xs_q8_K(size_t n, const block_iq2_xs * x, const block_q8_K * y) { return vec_dot_grid(n, x, y, 0.125f); }
float vec_dot_iq2_s_q8_K(size_t n, const block_iq2_s * x, const block_q8_K * y) { return vec_dot_grid(n, x, y, 0.125f); }
float vec_dot_iq3_xxs_q8_K(size_t n, const block_iq3_xxs * x, const block_q8_K * y) { return vec_dot_grid(n, x, y, 0.25f); }
float vec_dot_iq3_s_q8_K(size_t n, const block_iq3_s * x, const block_q8_K * y) { return vec_dot_grid(n, x, y, 1.0f); }

float vec_dot_iq1_s_q8_K(size_t n, const block_iq1_s * x, const block_q8_K * y) {
    float sumf = 0.0f;
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i) {
        unpack(x[i], u);
        sumf += vec_dot_iq1(fp16_to_fp32(x[i].d), u, y[i]);
    }
    return sumf;
}

float vec_dot_iq1_m_q8_K(size_t n, const block_iq1_m * x, const block_q8_K * y) {
    float sumf = 0.0f;
    IqUnpacked u;
    for (size_t i = 0; i < n / QK_K; ++i) {
        unpack(x[i], u);
        sumf += vec_dot_iq1(fp16_to_fp32(iq1m_scale_bits(x[i])), u, y[i]);
    }
    return sumf;
}

// ggml scales each 32-element sub-block in float: sumf += (d_w d_a (ls - 32)) * sumi.
float vec_dot_iq4_xs_q8_K(size_t n, const block_iq4_xs * x, const block_q8_K * y) {
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK_K; ++i) {
        const float d4d8 = fp16_to_fp32(x[i].d) * y[i].d;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const uint8_t * qs = x[i].qs + 16 * ib;
            const int8_t * q8 = y[i].qs + 32 * ib;
            int sumi = 0;
            for (int j = 0; j < 16; ++j) {
                sumi += q8[j] * kvalues_iq4nl[qs[j] & 0xf];
                sumi += q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
            }
            sumf += d4d8 * static_cast<float>(iq4xs_scale(x[i], ib)) * static_cast<float>(sumi);
        }
    }
    return sumf;
}

}  // namespace lr::quant::detail
