// RoPE, one thread per (token, rotated pair), looping over the heads. The angle of pair i
// follows the CPU exactly: theta = pos * theta_scale^i by i repeated float
// multiplications (as ggml builds its rope cache), divided by the frequency factor
// (llama3's rope_freqs) and scaled by freq_scale (linear scaling). cos and sin are taken
// in double and rounded, which gives the correctly rounded float the CPU's libm returns
// in all but rare cases; the rotation keeps the CPU's roundings (no FMA).

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"

namespace lr::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) rope_kernel(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, RopeArgs a) {
    const int64_t n_pairs = a.n_rot / 2;
    const int64_t item = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= n_tokens * n_pairs) return;
    const int64_t t = item / n_pairs;
    const int i = int(item % n_pairs);
    float theta = float(pos[t]);
    for (int k = 0; k < i; ++k) theta = __fmul_rn(theta, a.theta_scale);
    const float ff = a.freq_factors ? a.freq_factors[i] : 1.0f;
    const float angle = __fmul_rn(a.freq_scale, __fdiv_rn(theta, ff));
    double sd, cd;
    sincos(double(angle), &sd, &cd);
    const float c = float(cd), s = float(sd);
    const int i0 = 2 * i;
    const int ia = a.neox ? i : i0;
    const int ib = a.neox ? i + a.n_rot / 2 : i0 + 1;
    for (int64_t h = 0; h < n_heads; ++h) {
        float * v = x + (t * n_heads + h) * a.head_dim;
        const float x0 = v[ia], x1 = v[ib];
        v[ia] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
        v[ib] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
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
