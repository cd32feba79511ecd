// The legacy block types (32 elements, one fp16 scale each): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q8_1, and IQ4_NL (same shape, non-uniform levels). Bit-exact with ggml-quants.c: the
// float expressions below keep ggml's operand order, since a different order rounds
// differently and changes the bytes.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "engine/common/fp16.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

// Bit i of a block's 32 fifth bits (qh is little-endian).
uint32_t load_qh(const uint8_t * qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    return bits;
}

void store_qh(uint8_t * qh, uint32_t bits) { std::memcpy(qh, &bits, sizeof(bits)); }

// The value of largest magnitude in x[0..n), with its sign (first one on ties).
float signed_absmax(const float * x, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// The index of the level of kvalues_iq4nl nearest to x; ties go to the upper level.
// NOTE: this is the form llama.cpp used up to 2025 (the oracle files were made with it):
// a bisection followed by comparing the distances in float.
int best_index_iq4nl(float x) {
    const int8_t * val = kvalues_iq4nl;
    constexpr int n = 16;
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0;
    int mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav]) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

}  // namespace

// ---- dequantize ----------------------------------------------------------------------------

void dequantize_row_q4_0(const block_q4_0 * x, float * y, size_t n) {
    const size_t nb = n / QK4_0;
    for (size_t i = 0; i < nb; ++i, y += QK4_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; ++j) {
            y[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
            y[j + QK4_0 / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const block_q4_1 * x, float * y, size_t n) {
    const size_t nb = n / QK4_1;
    for (size_t i = 0; i < nb; ++i, y += QK4_1) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; ++j) {
            y[j] = static_cast<float>(x[i].qs[j] & 0x0F) * d + m;
            y[j + QK4_1 / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const block_q5_0 * x, float * y, size_t n) {
    const size_t nb = n / QK5_0;
    for (size_t i = 0; i < nb; ++i, y += QK5_0) {
        const float d = fp16_to_fp32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_0 / 2; ++j) {
            const int h0 = static_cast<int>((qh >> j) & 1) << 4;
            const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
            y[j] = static_cast<float>(((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[j + QK5_0 / 2] = static_cast<float>(((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void dequantize_row_q5_1(const block_q5_1 * x, float * y, size_t n) {
    const size_t nb = n / QK5_1;
    for (size_t i = 0; i < nb; ++i, y += QK5_1) {
        const float d = fp16_to_fp32(x[i].d);
        const float m = fp16_to_fp32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_1 / 2; ++j) {
            const int h0 = static_cast<int>((qh >> j) & 1) << 4;
            const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
            y[j] = static_cast<float>((x[i].qs[j] & 0x0F) | h0) * d + m;
            y[j + QK5_1 / 2] = static_cast<float>((x[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void dequantize_row_q8_0(const block_q8_0 * x, float * y, size_t n) {
    const size_t nb = n / QK8_0;
    for (size_t i = 0; i < nb; ++i, y += QK8_0) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

// ggml has no Q8_1 dequantizer (it is only an activation format); s is redundant here.
void dequantize_row_q8_1(const block_q8_1 * x, float * y, size_t n) {
    const size_t nb = n / QK8_1;
    for (size_t i = 0; i < nb; ++i, y += QK8_1) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_1; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

void dequantize_row_iq4_nl(const block_iq4_nl * x, float * y, size_t n) {
    const size_t nb = n / QK4_NL;
    for (size_t i = 0; i < nb; ++i, y += QK4_NL) {
        const float d = fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; ++j) {
            y[j] = d * static_cast<float>(kvalues_iq4nl[x[i].qs[j] & 0x0F]);
            y[j + QK4_NL / 2] = d * static_cast<float>(kvalues_iq4nl[x[i].qs[j] >> 4]);
        }
    }
}

// ---- quantize (ggml's *_ref) ---------------------------------------------------------------

// Symmetric: the element of largest magnitude maps to level -8 exactly (so the positive side
// gets one level less); q = trunc(x/d + 8.5), i.e. round half up, capped at 15.
void quantize_row_q4_0_ref(const float * x, block_q4_0 * y, size_t n) {
    const size_t nb = n / QK4_0;
    for (size_t i = 0; i < nb; ++i, x += QK4_0) {
        const float max = signed_absmax(x, QK4_0);
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j] * id + 8.5f)));
            const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j + QK4_0 / 2] * id + 8.5f)));
            y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// Asymmetric: levels 0..15 span [min, max]; q = trunc((x - min)/d + 0.5).
void quantize_row_q4_1_ref(const float * x, block_q4_1 * y, size_t n) {
    const size_t nb = n / QK4_1;
    for (size_t i = 0; i < nb; ++i, x += QK4_1) {
        float min = FLT_MAX;
        float max = -FLT_MAX;
        for (int j = 0; j < QK4_1; ++j) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>((x[j] - min) * id + 0.5f)));
            const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>((x[j + QK4_1 / 2] - min) * id + 0.5f)));
            y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

// As Q4_0 with 32 levels: the largest magnitude maps to -16.
void quantize_row_q5_0_ref(const float * x, block_q5_0 * y, size_t n) {
    const size_t nb = n / QK5_0;
    for (size_t i = 0; i < nb; ++i, x += QK5_0) {
        const float max = signed_absmax(x, QK5_0);
        const float d = max / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(std::min(31, static_cast<int>(x[j] * id + 16.5f)));
            const auto q1 = static_cast<uint8_t>(std::min(31, static_cast<int>(x[j + QK5_0 / 2] * id + 16.5f)));
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
            qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + QK5_0 / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

// As Q4_1 with 32 levels. NOTE: ggml does not cap q at 31 here; (x - min)/d never rounds
// above 31.5 for finite input, so the cap would change nothing.
void quantize_row_q5_1_ref(const float * x, block_q5_1 * y, size_t n) {
    const size_t nb = n / QK5_1;
    for (size_t i = 0; i < nb; ++i, x += QK5_1) {
        float min = FLT_MAX;
        float max = -FLT_MAX;
        for (int j = 0; j < QK5_1; ++j) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(static_cast<int>((x[j] - min) * id + 0.5f));
            const auto q1 = static_cast<uint8_t>(static_cast<int>((x[j + QK5_1 / 2] - min) * id + 0.5f));
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
            qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + QK5_1 / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

// amax maps to 127; roundf (half away from zero), not nearest-even.
void quantize_row_q8_0_ref(const float * x, block_q8_0 * y, size_t n) {
    const size_t nb = n / QK8_0;
    for (size_t i = 0; i < nb; ++i, x += QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    }
}

// As Q8_0, plus s = d * sum(qs) (the sum of the stored, not the exact, values).
void quantize_row_q8_1_ref(const float * x, block_q8_1 * y, size_t n) {
    const size_t nb = n / QK8_1;
    for (size_t i = 0; i < nb; ++i, x += QK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; ++j) {
            y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

// Activations as llama.cpp's x86 kernels quantize them (quantize_row_q8_0/q8_1 for AVX/AVX2,
// also used by AVX-512 builds): scale 127/amax instead of 1/d, round half to even. The
// difference to the _ref quantizers shows only on exact ties, which is enough to move a
// logit by 1e-2 on a random model.
void quantize_row_q8_0_x86(const float * x, block_q8_0 * y, size_t n) {
    const size_t nb = n / QK8_0;
    for (size_t i = 0; i < nb; ++i, x += QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[i].d = fp32_to_fp16(amax / 127.0f);
        for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
    }
}

void quantize_row_q8_1_x86(const float * x, block_q8_1 * y, size_t n) {
    const size_t nb = n / QK8_1;
    for (size_t i = 0; i < nb; ++i, x += QK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[i].d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; ++j) {
            y[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
    }
}

// What llama-quantize does for IQ4_NL without an importance matrix (ggml's quantize_iq4_nl,
// ntry = 7): the scale of fit_iq4_block; the stored indices are recomputed from the final
// (unrounded) scale.
void quantize_row_iq4_nl_ref(const float * x, block_iq4_nl * y, size_t n) {
    const size_t nb = n / QK4_NL;
    for (size_t i = 0; i < nb; ++i, x += QK4_NL) {
        uint8_t L[QK4_NL];
        const float d = fit_iq4_block(x, L, best_index_iq4nl);
        y[i].d = fp32_to_fp16(d);
        const float id = d != 0.0f ? 1 / d : 0.0f;
        for (int j = 0; j < QK4_NL / 2; ++j) {
            const int l0 = best_index_iq4nl(id * x[j]);
            const int l1 = best_index_iq4nl(id * x[j + QK4_NL / 2]);
            y[i].qs[j] = static_cast<uint8_t>(l0 | (l1 << 4));
        }
    }
}

// ---- dot products with the activation blocks ---------------------------------------------
// Per block: an exact integer dot product of the quants, then one float scaling; blocks
// are accumulated in float in row order. The order of the float multiplications is ggml's.

float vec_dot_q4_0_q8_0(size_t n, const block_q4_0 * x, const block_q8_0 * y) {
    const size_t nb = n / QK8_0;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK4_0 / 2; ++j) {
            sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK4_0 / 2];
        }
        sumf += static_cast<float>(sumi) * fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d);
    }
    return sumf;
}

// sum(w * a) = d_w d_a sum(q_w q_a) + m_w * (d_a sum(q_a)) = ... + m_w * s_a.
float vec_dot_q4_1_q8_1(size_t n, const block_q4_1 * x, const block_q8_1 * y) {
    const size_t nb = n / QK8_1;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK4_1 / 2; ++j) {
            sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + QK4_1 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi) + fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sumf;
}

float vec_dot_q5_0_q8_0(size_t n, const block_q5_0 * x, const block_q8_0 * y) {
    const size_t nb = n / QK8_0;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK5_0 / 2; ++j) {
            const int h0 = static_cast<int>((qh >> j) & 1) << 4;
            const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
            sumi += (((x[i].qs[j] & 0x0F) | h0) - 16) * y[i].qs[j];
            sumi += (((x[i].qs[j] >> 4) | h1) - 16) * y[i].qs[j + QK5_0 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
    }
    return sumf;
}

float vec_dot_q5_1_q8_1(size_t n, const block_q5_1 * x, const block_q8_1 * y) {
    const size_t nb = n / QK8_1;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK5_1 / 2; ++j) {
            const int h0 = static_cast<int>((qh >> j) & 1) << 4;
            const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
            sumi += ((x[i].qs[j] & 0x0F) | h0) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) | h1) * y[i].qs[j + QK5_1 / 2];
        }
        sumf += (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi) + fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sumf;
}

float vec_dot_q8_0_q8_0(size_t n, const block_q8_0 * x, const block_q8_0 * y) {
    const size_t nb = n / QK8_0;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        sumf += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return sumf;
}

float vec_dot_iq4_nl_q8_0(size_t n, const block_iq4_nl * x, const block_q8_0 * y) {
    const size_t nb = n / QK4_NL;
    float sumf = 0.0f;
    for (size_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK4_NL / 2; ++j) {
            sumi += y[i].qs[j] * kvalues_iq4nl[x[i].qs[j] & 0x0F];
            sumi += y[i].qs[j + QK4_NL / 2] * kvalues_iq4nl[x[i].qs[j] >> 4];
        }
        const float d = fp16_to_fp32(y[i].d) * fp16_to_fp32(x[i].d);
        sumf += d * static_cast<float>(sumi);
    }
    return sumf;
}

}  // namespace lr::quant::detail
