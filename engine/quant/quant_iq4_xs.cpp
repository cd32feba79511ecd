// The IQ4_XS quantizer without an importance matrix (ggml's quantize_iq4_xs with
// quant_weights == NULL, i.e. quantize_row_iq4_xs_ref): per 32 elements a weighted fit of a
// scale on the IQ4_NL levels, then the 8 scales quantized to 6 bits against one fp16
// super-block scale and the levels recomputed with the stored scales. Bit-exact with ggml:
// its operand order, and its branchless nearest-level search.

#include <cmath>
#include <cstring>

#include "engine/common/fp16.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

// The index of the level of kvalues_iq4nl nearest to x, ties to the upper level: ggml's
// best_index_int8, which compares 2x with the sum of neighbouring levels (both exact).
// NOTE: IQ4_NL keeps the older search (quant_legacy.cpp) its oracle files were made with;
// the two differ only where x is within float rounding of a midpoint.
int best_index_iq4(float x) {
    const float x2 = x + x;
    int idx = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = idx + step;
        idx = x2 >= static_cast<float>(kvalues_iq4nl[j - 1] + kvalues_iq4nl[j]) ? j : idx;
    }
    return idx;
}

constexpr int kNtry = 7;

}  // namespace

float fit_iq4_block(const float * xb, uint8_t * L, int (*best_index)(float)) {
    float weight[32];
    for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float ax = std::fabs(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < 1e-15f) {  // GROUP_MAX_EPS
        std::memset(L, 0, 32);
        return 0.0f;
    }
    const float v0 = kvalues_iq4nl[0];
    float d = -max / v0;
    float id = 1 / d;
    float sumqx = 0.0f;
    float sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const int l = best_index(id * xb[j]);
        L[j] = static_cast<uint8_t>(l);
        const float q = kvalues_iq4nl[l];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
        id = static_cast<float>(itry + kvalues_iq4nl[0]) / max;
        sumqx = 0.0f;
        sumq2 = 0.0f;
        for (int j = 0; j < 32; ++j) {
            const float q = kvalues_iq4nl[best_index(id * xb[j])];
            sumqx += weight[j] * q * xb[j];
            sumq2 += weight[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

namespace {

void quantize_block(const float * x, block_iq4_xs & y) {
    uint8_t L[QK_K];
    float scales[QK_K / 32];
    float max_scale = 0.0f;
    float amax_scale = 0.0f;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        scales[ib] = fit_iq4_block(x + 32 * ib, L + 32 * ib, best_index_iq4);
        const float abs_d = std::fabs(scales[ib]);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = scales[ib];
        }
    }

    // The signed max maps to -32; an all-zero super-block keeps d = -0 (as ggml writes it).
    const float d = -max_scale / 32;
    y.d = fp32_to_fp16(d);
    y.scales_h = 0;
    const float id = d != 0.0f ? 1 / d : 0.0f;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        int l = nearest_int(id * scales[ib]);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        const float dl = d * static_cast<float>(l);
        const float idl = dl != 0.0f ? 1 / dl : 0.0f;
        for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(best_index_iq4(idl * x[32 * ib + j]));
        l += 32;
        const auto l_l = static_cast<uint8_t>(l & 0xf);
        const auto l_h = static_cast<uint16_t>(l >> 4);
        if (ib % 2 == 0) {
            y.scales_l[ib / 2] = l_l;
        } else {
            y.scales_l[ib / 2] = static_cast<uint8_t>(y.scales_l[ib / 2] | (l_l << 4));
        }
        y.scales_h = static_cast<uint16_t>(y.scales_h | (l_h << (2 * ib)));
    }
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        for (int j = 0; j < 16; ++j) y.qs[16 * ib + j] = static_cast<uint8_t>(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
    }
}

}  // namespace

void quantize_row_iq4_xs_ref(const float * x, block_iq4_xs * y, size_t n) {
    for (size_t i = 0; i < n / QK_K; ++i) quantize_block(x + QK_K * i, y[i]);
}

}  // namespace lr::quant::detail
