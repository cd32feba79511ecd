#pragma once
// The per-element work of moe.cu, shared with the host emulation of the tests: gpt-oss's
// clamped SwiGLU and the weighted sum of a token's experts, in the CPU's order of operations
// (cpu/expert_ffn.cpp), each rounding explicit.

#include "engine/backend/cuda/device_util.cuh"

namespace lr::cuda {

// ggml's swiglu_oai (alpha 1.702, limit 7): min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
LR_HD float swiglu_oai_one(float g, float u) {
    const float x = fminf(g, 7.0f);
    const float y = fminf(fmaxf(u, -7.0f), 7.0f);
    return mul_rn(div_rn(x, add_rn(1.0f, expf(mul_rn(1.702f, -x)))), add_rn(y, 1.0f));
}

// Column c of sum_j y[slot[j]] * w[j], the experts added in routing order.
//                                          y: [n_slots][n_cols], slot, w: [n_used]
LR_HD float combine_one(const float * y, const int32_t * slot, const float * w, int32_t n_used, int64_t n_cols, int64_t c) {
    float acc = mul_rn(y[int64_t(slot[0]) * n_cols + c], w[0]);
    for (int32_t j = 1; j < n_used; ++j) acc = add_rn(acc, mul_rn(y[int64_t(slot[j]) * n_cols + c], w[j]));
    return acc;
}

}  // namespace lr::cuda
