// The causal depthwise convolution and its SiLU (causal_conv.cuh): a thread per output
// (token, channel), then a thread per channel shifts the state (a second launch, so every
// output has read the state first). Exact but for the expf of the columns past a row's last
// whole vector of 16 (within 2 ulp of the CPU's std::exp).

#include "engine/backend/cuda/causal_conv.cuh"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"

namespace lr::cuda {
namespace {

constexpr int kThreads = 256;

dim3 grid_for(int64_t n) { return dim3(unsigned((n + kThreads - 1) / kThreads)); }

__global__ void __launch_bounds__(kThreads) conv_kernel(const conv::Args a) {
    const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < a.n_tokens * a.n_channels) conv::conv_one(a, i / a.n_channels, i % a.n_channels);
}

__global__ void __launch_bounds__(kThreads) shift_kernel(const conv::Args a) {
    const int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (c < a.n_channels) conv::shift_state(a, c);
}

}  // namespace

void launch_causal_conv_silu(const float * x, int64_t n_tokens, const float * kernel, int64_t n_channels, int64_t width, float * state,
                             float * out, cudaStream_t stream) {
    if (n_tokens == 0 || n_channels == 0) return;
    const conv::Args a{
        .x = x, .kernel = kernel, .state = state, .out = out, .n_tokens = n_tokens, .n_channels = n_channels, .width = width};
    conv_kernel<<<grid_for(n_tokens * n_channels), kThreads, 0, stream>>>(a);
    LR_CUDA_CHECK_LAUNCH();
    shift_kernel<<<grid_for(n_channels), kThreads, 0, stream>>>(a);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
