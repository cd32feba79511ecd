// The routed experts' own kernels (moe.cuh): rows gathered into slot order, gpt-oss's
// clamped SwiGLU, and the weighted sum of each token's experts. The products between them
// are the ordinary matvec / GEMM of each expert's rows (cuda_backend.cpp). swiglu_oai uses
// expf (within 2 ulp of the CPU's std::exp); the rest is exact or in the CPU's order.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/moe.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

dim3 grid_for(int64_t n) { return dim3(unsigned((n + kThreads - 1) / kThreads)); }

__global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const float * x, const int32_t * rows, int64_t n, int64_t n_cols, float * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) out[i] = x[int64_t(rows[i / n_cols]) * n_cols + i % n_cols];
}

__global__ void __launch_bounds__(kThreads) swiglu_oai_kernel(const float * gate, const float * up, int64_t n, float * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) out[i] = swiglu_oai_one(gate[i], up[i]);
}

__global__ void __launch_bounds__(kThreads) combine_kernel(const float * y, const int32_t * slot_of, const float * weights, int32_t n_used,
                                                           int64_t n, int64_t n_cols, float * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i >= n) return;
    const int64_t t = i / n_cols;
    out[i] = combine_one(y, slot_of + t * n_used, weights + t * n_used, n_used, n_cols, i % n_cols);
}

}  // namespace

void launch_gather_rows(const float * x, const int32_t * rows, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream) {
    const int64_t n = n_rows * n_cols;
    if (n == 0) return;
    gather_rows_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, rows, n, n_cols, out);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_swiglu_oai(const float * gate, const float * up, int64_t n, float * out, cudaStream_t stream) {
    if (n == 0) return;
    swiglu_oai_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, n, out);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_moe_combine(const float * y, const int32_t * slot_of, const float * weights, int32_t n_used, int64_t n_tokens, int64_t n_cols,
                        float * out, cudaStream_t stream) {
    const int64_t n = n_tokens * n_cols;
    if (n == 0) return;
    combine_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, slot_of, weights, n_used, n, n_cols, out);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
