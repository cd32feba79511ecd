// RMSNorm, one block per row: the sum of squares in double as the CPU (and ggml) compute it
// (each square rounded to float first, then widened), reduced in a fixed tree, so only the
// order of the double additions differs from the CPU; the scaling is the CPU's expression.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const float * x, const float * w, float eps, int64_t n, float * out) {
    __shared__ double partial[kThreads];
    const float * xr = x + int64_t(blockIdx.x) * n;
    float * outr = out + int64_t(blockIdx.x) * n;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += double(__fmul_rn(xr[i], xr[i]));
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    // scale = 1 / sqrt(mean + eps), in float with IEEE division and square root.
    const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(float(partial[0] / double(n)), eps)));
    for (int64_t i = threadIdx.x; i < n; i += kThreads) outr[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

}  // namespace

void launch_rms_norm(const float * x, const float * w, float eps, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream) {
    if (n_rows == 0) return;
    rms_norm_kernel<<<unsigned(n_rows), kThreads, 0, stream>>>(x, w, eps, n_cols, out);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
