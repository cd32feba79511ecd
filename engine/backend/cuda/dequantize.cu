// The prefill GEMM's inputs: weight rows dequantized to f16 (one warp per 256-column step
// of a row, dequant_step, then rounded to nearest f16), and activations rounded to f16 or
// bf16. cuBLAS then multiplies them on tensor cores with f32 accumulation.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/dequant.cuh"

namespace lr::cuda {
namespace {

constexpr int kWarps = 4;

// Warp `item` of the grid takes row r0 + item / n_steps, step item % n_steps; the last step
// of a row may be partial (legacy types), then its lanes take one element at a time.
template <DType T>
__global__ void __launch_bounds__(kWarps * 32)
    dequantize_f16_kernel(const uint8_t * w, size_t row_bytes, int64_t n_cols, int64_t r0, int64_t n_rows, bool aligned16, __half * out) {
    const int lane = int(threadIdx.x % 32);
    const int64_t n_steps = (n_cols + 255) / 256;
    const int64_t item = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (item >= n_rows * n_steps) return;
    const int64_t r = item / n_steps, step = item % n_steps;
    const uint8_t * row = w + size_t(r0 + r) * row_bytes;
    __half * dst = out + r * n_cols;
    if ((step + 1) * 256 <= n_cols) {
        float v[8];
        int a0 = 0, a1 = 0;
        dequant_step<T>(row, step, lane, aligned16, v, a0, a1);
        for (int k = 0; k < 4; ++k) {
            dst[step * 256 + a0 + k] = __float2half_rn(v[k]);
            dst[step * 256 + a1 + k] = __float2half_rn(v[4 + k]);
        }
    } else {
        for (int64_t c = step * 256 + lane; c < n_cols; c += 32) dst[c] = __float2half_rn(dequant_one<T>(row, c));
    }
}

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) round_f16_kernel(const float * x, int64_t n, __half * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) out[i] = __float2half_rn(x[i]);
}

__global__ void __launch_bounds__(kThreads) round_bf16_kernel(const float * x, int64_t n, __nv_bfloat16 * out) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16_rn(x[i]);
}

}  // namespace

void launch_dequantize_f16(const WeightRows & w, int64_t r0, int64_t r1, void * out, cudaStream_t stream) {
    const int64_t n_rows = r1 - r0;
    const int64_t n_items = n_rows * ((w.n_cols + 255) / 256);
    if (n_items <= 0) return;
    const dim3 grid(unsigned((n_items + kWarps - 1) / kWarps));
    const bool aligned16 = reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && w.row_bytes % 16 == 0;
    auto * dst = static_cast<__half *>(out);
#define LR_DEQUANT_CASE(T) \
    dequantize_f16_kernel<T><<<grid, kWarps * 32, 0, stream>>>(w.data, w.row_bytes, w.n_cols, r0, n_rows, aligned16, dst)
    LR_CUDA_DISPATCH_TYPE(w.type, LR_DEQUANT_CASE)
#undef LR_DEQUANT_CASE
    LR_CUDA_CHECK_LAUNCH();
}

void launch_round_activations(const float * x, int64_t n, bool bf16, void * out, cudaStream_t stream) {
    if (n == 0) return;
    const dim3 grid(unsigned((n + kThreads - 1) / kThreads));
    if (bf16) {
        round_bf16_kernel<<<grid, kThreads, 0, stream>>>(x, n, static_cast<__nv_bfloat16 *>(out));
    } else {
        round_f16_kernel<<<grid, kThreads, 0, stream>>>(x, n, static_cast<__half *>(out));
    }
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
