// add, add_bias, swiglu, scale, scale_tokens, softcap and sigmoid_mul: one thread per
// element. add, add_bias and the scales are exact; swiglu takes the CPU's ggml_expf (the same
// bits) for the whole vectors of 16 of a row and expf for the rest (gates.cuh), softcap tanhf,
// sigmoid_mul expf (expf and tanhf within 2 ulp of the CPU's std::exp and std::tanh), the
// rest in the CPU's order.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/gates.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

dim3 grid_for(int64_t n) { return dim3(unsigned((n + kThreads - 1) / kThreads)); }

__global__ void __launch_bounds__(kThreads) add_kernel(float * x, const float * y, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] += y[i];
}

__global__ void __launch_bounds__(kThreads) add_bias_kernel(float * x, const float * b, int64_t n, int64_t n_cols) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] += b[i % n_cols];
}

// silu(g) * u = g / (1 + exp(-g)) * u, divided then multiplied as the CPU does.
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const float * gate, const float * up, int64_t n, int64_t n_cols, float * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i >= n) return;
    out[i] = __fmul_rn(silu_of_column(gate[i], i % n_cols, n_cols), up[i]);
}

__global__ void __launch_bounds__(kThreads) scale_kernel(float * x, int64_t n, float s) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] = __fmul_rn(x[i], s);
}

__global__ void __launch_bounds__(kThreads) scale_tokens_kernel(float * x, int64_t n, int64_t n_cols, const float * scale) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] = __fmul_rn(x[i], scale[i / n_cols]);
}

// cap * tanh(x * (1 / cap)), multiplied as the CPU does.
__global__ void __launch_bounds__(kThreads) softcap_kernel(float * x, int64_t n, float inv, float cap) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] = __fmul_rn(tanhf(__fmul_rn(x[i], inv)), cap);
}

__global__ void __launch_bounds__(kThreads) sigmoid_mul_kernel(float * x, const float * gate, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) x[i] = sigmoid_mul_one(x[i], gate[i]);
}

}  // namespace

void launch_scale(float * x, int64_t n, float s, cudaStream_t stream) {
    if (n == 0) return;
    scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, s);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale, cudaStream_t stream) {
    const int64_t n = n_tokens * n_cols;
    if (n == 0) return;
    scale_tokens_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, n_cols, scale);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_softcap(float * x, int64_t n, float cap, cudaStream_t stream) {
    if (n == 0) return;
    softcap_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, 1.0f / cap, cap);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_add(float * x, const float * y, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    add_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_add_bias(float * x, const float * b, int64_t n_rows, int64_t n_cols, cudaStream_t stream) {
    const int64_t n = n_rows * n_cols;
    if (n == 0) return;
    add_bias_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, b, n, n_cols);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_sigmoid_mul(float * x, const float * gate, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    sigmoid_mul_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, gate, n);
    LR_CUDA_CHECK_LAUNCH();
}

void launch_swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream) {
    const int64_t n = n_rows * n_cols;
    if (n == 0) return;
    swiglu_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, n, n_cols, out);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda

namespace lr::cuda {
namespace {
__global__ void self_test_kernel(int * out) { *out = 42; }
}  // namespace

cudaError_t launch_self_test(int * out, cudaStream_t stream) {
    self_test_kernel<<<1, 1, 0, stream>>>(out);
    return cudaGetLastError();
}

}  // namespace lr::cuda
