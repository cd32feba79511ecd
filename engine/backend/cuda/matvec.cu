// Decode: y = W x for one to eight tokens, reading W once (the step is bandwidth bound).
//
// Each warp owns kRowsPerWarp rows. Per step of 256 columns, every lane dequantizes its 8
// elements of each row (dequant_step: the warp's loads of a row are contiguous) and
// multiplies them with the same 8 columns of each token's x, kept in registers across the
// rows, so x is read once per kRowsPerWarp rows. Columns past the last whole step (row
// lengths that are not a multiple of 256: legacy and float types) are taken one element
// per lane. Each lane accumulates in float; the warp sums its lanes with shuffles.
//
// Against the CPU: the products are the same, their order is not (CPU: float_dot.h orders
// for float types, integer block sums for quantized ones), and quantized types multiply
// by x itself where the CPU first quantizes x to q8. Tests bound both differences.
// The per-lane work is in matvec.cuh, which the host emulation of the tests runs as well.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/matvec.cuh"

namespace lr::cuda {
namespace {

using namespace mv;

template <DType T>
__global__ void __launch_bounds__(kWarps * 32) matvec_kernel(const Params p) {
    const int lane = int(threadIdx.x % 32);
    const int64_t row0 = first_row(int64_t(blockIdx.x) * kWarps + threadIdx.x / 32);
    if (row0 >= p.n_rows) return;  // the whole warp leaves together
    float acc[kRowsPerWarp][kMaxTokens];
    lane_sums<T>(p, row0, lane, acc);
    const int n_rows = rows_of(p, row0);
#pragma unroll
    for (int t = 0; t < kMaxTokens; ++t) {
        if (t >= p.n_tokens) break;
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            float v = acc[r][t];
            for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
            if (lane == 0 && r < n_rows) p.y[t * p.y_stride + row0 + r] = v;
        }
    }
}

}  // namespace

bool kernels_read(DType type) {
    switch (type) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::IQ4_NL: return true;
        default: return false;
    }
}

void launch_matvec(const WeightRows & w, const float * x, int64_t n_tokens, float * y, int64_t y_stride, cudaStream_t stream) {
    LR_ASSERT(n_tokens >= 1 && n_tokens <= kMatvecMaxTokens);
    if (w.n_rows == 0) return;
    const Params p{
        .w = w.data,
        .row_bytes = w.row_bytes,
        .n_rows = w.n_rows,
        .n_cols = w.n_cols,
        .x = x,
        .n_tokens = int(n_tokens),
        .y = y,
        .y_stride = y_stride,
        .w_aligned16 = reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && w.row_bytes % 16 == 0,
        .x_vec4 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && w.n_cols % 4 == 0,
    };
    const int64_t rows_per_block = kWarps * kRowsPerWarp;
    const dim3 grid(unsigned((w.n_rows + rows_per_block - 1) / rows_per_block));
#define LR_MATVEC_CASE(T) matvec_kernel<T><<<grid, kWarps * 32, 0, stream>>>(p)
    LR_CUDA_DISPATCH_TYPE(w.type, LR_MATVEC_CASE)
#undef LR_MATVEC_CASE
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
