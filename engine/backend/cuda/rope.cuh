#pragma once
// The work of rope.cu's kernel for one (token, rotated pair): the angle as the CPU
// computes it (cpu_backend.cpp, ggml's rope cache with YaRN), then the rotation. Shared
// with the host emulation of the tests (tests/gpu), which checks it against the CPU.

#include <cmath>

#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/device_util.cuh"

namespace lr::cuda::rope {

// cos and sin of `angle`: the device takes them in double and rounds, which gives the
// correctly rounded float the CPU's libm returns in all but rare cases.
LR_HD void cos_sin(float angle, float & c, float & s) {
#if defined(__CUDA_ARCH__)
    double sd, cd;
    sincos(double(angle), &sd, &cd);
    c = float(cd), s = float(sd);
#else
    c = std::cos(angle), s = std::sin(angle);
#endif
}

// The cos and sin of pair i at position p, times the magnitude.
LR_HD void pair_cos_sin(const RopeArgs & a, int32_t p, int i, float & c, float & s) {
    // theta = p * theta_scale^i by i repeated float multiplications, as ggml's rope cache.
    float theta = float(p);
    for (int k = 0; k < i; ++k) theta = mul_rn(theta, a.theta_scale);
    const float ff = a.freq_factors ? a.freq_factors[i] : 1.0f;
    const float extrap = div_rn(theta, ff);
    const float interp = mul_rn(a.freq_scale, extrap);
    float angle = interp;
    if (a.ext_factor != 0.0f) {
        const float y = div_rn(sub_rn(float(i), a.corr_low), fmaxf(0.001f, sub_rn(a.corr_high, a.corr_low)));
        const float mix = mul_rn(sub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y))), a.ext_factor);
        angle = add_rn(mul_rn(interp, sub_rn(1.0f, mix)), mul_rn(extrap, mix));
    }
    cos_sin(angle, c, s);
    c = mul_rn(c, a.mscale);
    s = mul_rn(s, a.mscale);
}

// Rotates pair i of every head of token t.                 x: [n_tokens][n_heads][head_dim]
LR_HD void rotate_pair(const RopeArgs & a, float * x, int64_t t, int64_t n_heads, int i, float c, float s) {
    const int ia = a.neox ? i : 2 * i;
    const int ib = a.neox ? i + a.n_rot / 2 : 2 * i + 1;
    for (int64_t h = 0; h < n_heads; ++h) {
        float * v = x + (t * n_heads + h) * a.head_dim;
        const float x0 = v[ia], x1 = v[ib];
        v[ia] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
        v[ib] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
    }
}

}  // namespace lr::cuda::rope
