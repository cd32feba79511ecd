// RoPE, one thread per (token, rotated pair), looping over the heads; the per-pair code is
// rope.cuh. The angle follows the CPU exactly (ggml's rope cache: repeated float
// multiplications, frequency factors, linear scaling and YaRN's blend), cos and sin are
// taken in double and rounded, and the rotation keeps the CPU's roundings (no FMA).

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/rope.cuh"

namespace lr::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) rope_kernel(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, RopeArgs a) {
    const int64_t n_pairs = a.n_rot / 2;
    const int64_t item = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= n_tokens * n_pairs) return;
    const int64_t t = item / n_pairs;
    const int i = int(item % n_pairs);
    float c, s;
    rope::pair_cos_sin(a, pos[t], i, c, s);
    rope::rotate_pair(a, x, t, n_heads, i, c, s);
}

}  // namespace

void launch_rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, const RopeArgs & a, cudaStream_t stream) {
    LR_ASSERT(a.n_rot % 2 == 0 && a.n_rot <= a.head_dim);
    const int64_t n = n_tokens * (a.n_rot / 2);
    if (n == 0) return;
    rope_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, n_tokens, n_heads, pos, a);
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
