#pragma once
// The work of l2_norm.cu's kernel for one row, shared with the host emulation of the tests:
// CpuBackend::l2_norm's expression, the sum of squares in double in the CPU's order (each
// square rounded to float first), IEEE square root and division: the CPU's bits.

#include <cmath>
#include <cstdint>

#include "engine/backend/cuda/device_util.cuh"

namespace lr::cuda {

//                                          x, out: [n_rows][n_cols] (out may be x)
LR_HD void l2_norm_row(const float * x, int64_t n_cols, float eps, int64_t r, float * out) {
    const float * xr = x + r * n_cols;
    double sum = 0.0;  // ggml_float
    for (int64_t c = 0; c < n_cols; ++c) sum += double(mul_rn(xr[c], xr[c]));
    const float scale = div_rn(1.0f, fmaxf(sqrtf(float(sum)), eps));
    for (int64_t c = 0; c < n_cols; ++c) out[r * n_cols + c] = mul_rn(xr[c], scale);
}

}  // namespace lr::cuda
