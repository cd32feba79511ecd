// TQ2_0 (ternary levels -1, 0, 1 under one fp16 scale per 256, dot products with Q8_K) and
// MXFP4 (FP4 E2M1 values under a power-of-two E8M0 scale per 32, dot products with Q8_0).
// Bit-exact with ggml-quants.c and ggml-cpu/quants.c: ggml's operand order throughout.

#include <cmath>

#include "engine/common/fp16.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

// Level of element 128c + 32l + m: bits 2l..2l+1 of qs[32c + m].
int tq2_level(const uint8_t * qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

// The index of the first of the 16 MXFP4 values nearest to x / e, i.e. ggml's
// best_index_mxfp4: |kvalues_mxfp4[i] * e - x| compared in float, strict improvement only.
int best_index_mxfp4(float x, float e) {
    int best_index = 0;
    float best_err = std::fabs(static_cast<float>(kvalues_mxfp4[0]) * e - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kvalues_mxfp4[i]) * e - x);
        if (err < best_err) {
            best_index = i;
            best_err = err;
        }
    }
    return best_index;
}

}  // namespace

void dequantize_row_tq2_0(const block_tq2_0 * x, float * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = fp16_to_fp32(x[i].d);
        for (int e = 0; e < QK_K; ++e) y[e] = static_cast<float>(tq2_level(x[i].qs, e) - 1) * d;
    }
}

// d = amax; levels round(x / d) + 1 with lroundf (half away from zero).
void quantize_row_tq2_0_ref(const float * x, block_tq2_0 * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int c = 0; c < 2; ++c) {
            for (int m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (int l = 0; l < 4; ++l) {
                    const int xi = static_cast<int>(std::lround(x[128 * c + 32 * l + m] * id)) + 1;
                    q = static_cast<uint8_t>(q + ((xi & 3) << (2 * l)));
                }
                y[i].qs[32 * c + m] = q;
            }
        }
    }
}

float vec_dot_tq2_0_q8_K(size_t n, const block_tq2_0 * x, const block_q8_K * y) {
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK_K; ++i) {
        int sumi = 0;
        for (int e = 0; e < QK_K; ++e) sumi += y[i].qs[e] * (tq2_level(x[i].qs, e) - 1);
        const float d = y[i].d * fp16_to_fp32(x[i].d);
        sumf += static_cast<float>(sumi) * d;
    }
    return sumf;
}

void dequantize_row_mxfp4(const block_mxfp4 * x, float * y, size_t n) {
    for (size_t i = 0; i < n / QK_MXFP4; ++i, y += QK_MXFP4) {
        const float d = e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            y[j] = static_cast<float>(kvalues_mxfp4[x[i].qs[j] & 0x0F]) * d;
            y[j + QK_MXFP4 / 2] = static_cast<float>(kvalues_mxfp4[x[i].qs[j] >> 4]) * d;
        }
    }
}

// The scale is the power of two that puts amax in [4, 8) times it (E2M1 reaches 6), stored
// as the E8M0 exponent floor(log2(amax)) - 2 + 127; each value takes the nearest level.
void quantize_row_mxfp4_ref(const float * x, block_mxfp4 * y, size_t n) {
    for (size_t i = 0; i < n / QK_MXFP4; ++i, x += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; ++j) {
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
        }
        const auto e = amax > 0.0f ? static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127) : uint8_t{0};
        const float d = e8m0_to_fp32_half(e);
        y[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            const int x0 = best_index_mxfp4(x[j], d);
            const int x1 = best_index_mxfp4(x[j + QK_MXFP4 / 2], d);
            y[i].qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
        }
    }
}

float vec_dot_mxfp4_q8_0(size_t n, const block_mxfp4 * x, const block_q8_0 * y) {
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK_MXFP4; ++i) {
        const float d = fp16_to_fp32(y[i].d) * e8m0_to_fp32_half(x[i].e);
        int sumi1 = 0;
        int sumi2 = 0;
        for (int j = 0; j < QK_MXFP4 / 2; ++j) {
            sumi1 += y[i].qs[j] * kvalues_mxfp4[x[i].qs[j] & 0xf];
            sumi2 += y[i].qs[j + QK_MXFP4 / 2] * kvalues_mxfp4[x[i].qs[j] >> 4];
        }
        sumf += d * static_cast<float>(sumi1 + sumi2);
    }
    return sumf;
}

}  // namespace lr::quant::detail
