// geglu: one thread per element (geglu.cuh), GELU read from the CPU's f16 table: the same
// bits as the CPU backend.

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/geglu.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    geglu_kernel(const float * gate, const float * up, int64_t n, float * out, const float * table) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) out[i] = geglu_one(gate[i], up[i], table);
}

}  // namespace

void launch_geglu(const float * gate, const float * up, int64_t n, float * out, const float * table, cudaStream_t stream) {
    if (n == 0) return;
    geglu_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(gate, up, n, out, table);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
