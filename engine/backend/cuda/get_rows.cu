// get_rows: whole rows of a weight (the token embedding) as f32, one thread per element,
// with dequant_one: bit-identical to quant::dequantize_row.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/dequant.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

template <DType T>
__global__ void __launch_bounds__(kThreads)
    get_rows_kernel(const uint8_t * w, size_t row_bytes, int64_t n_cols, const int32_t * ids, float * out) {
    const int64_t i = blockIdx.y;  // output row
    const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (c >= n_cols) return;
    const uint8_t * row = w + size_t(ids[i]) * row_bytes;
    out[i * n_cols + c] = dequant_one<T>(row, c);
}

}  // namespace

void launch_get_rows(const WeightRows & w, const int32_t * ids, int64_t n, float * out, cudaStream_t stream) {
    constexpr int64_t kMaxGridY = 65535;
    for (int64_t at = 0; at < n; at += kMaxGridY) {
        const int64_t rows = n - at < kMaxGridY ? n - at : kMaxGridY;
        const dim3 grid(unsigned((w.n_cols + kThreads - 1) / kThreads), unsigned(rows));
        if (grid.x == 0) return;
#define LR_GET_ROWS_CASE(T) get_rows_kernel<T><<<grid, kThreads, 0, stream>>>(w.data, w.row_bytes, w.n_cols, ids + at, out + at * w.n_cols)
        LR_CUDA_DISPATCH_TYPE(w.type, LR_GET_ROWS_CASE)
#undef LR_GET_ROWS_CASE
        LR_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace lr::cuda
