// The L2 norm of rows (l2_norm.cuh): a thread per row, in the CPU's order, so the CPU's bits.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/l2_norm.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) l2_norm_kernel(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) {
    const int64_t r = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (r < n_rows) l2_norm_row(x, n_cols, eps, r, out);
}

}  // namespace

void launch_l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out, cudaStream_t stream) {
    if (n_rows == 0) return;
    l2_norm_kernel<<<unsigned((n_rows + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, n_rows, n_cols, eps, out);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
