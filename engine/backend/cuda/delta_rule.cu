// The gated delta rule (delta_rule.cuh). Recurrent form (decode): a thread per row of a
// head's state, every token in turn; the rows of the state are independent there. Chunked
// form (prefill): a block per v head, the chunks in turn, each in seven phases separated by
// barriers, the chunk's matrices in the head's global scratch. The state stays in global
// memory, updated in place. Exact but for expf (within 2 ulp of the CPU's std::exp).

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/delta_rule.cuh"

namespace lr::cuda {
namespace {

using delta::kChunkThreads;
using delta::kRowThreads;

__global__ void __launch_bounds__(kRowThreads) recurrent_kernel(const delta::Args a) {
    const int64_t j = int64_t(blockIdx.y) * kRowThreads + threadIdx.x;
    if (j < a.dv) delta::recurrent_row(a, blockIdx.x, j);
}

__global__ void __launch_bounds__(kChunkThreads) chunked_kernel(const delta::Args a) {
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += a.chunk) {
        const delta::Chunk c = delta::chunk_of(a, blockIdx.x, t0);
        for (int phase = 0; phase < delta::kPhases; ++phase) {
            delta::run_phase(phase, c, int(threadIdx.x), kChunkThreads);
            __syncthreads();
        }
    }
}

}  // namespace

size_t delta_rule_scratch_bytes(const DeltaRuleParams & p) {
    if (p.chunk_tokens == 0) return 0;
    return size_t(p.n_v_heads) * size_t(delta::scratch_floats(p.chunk_tokens, p.head_k_dim, p.head_v_dim)) * sizeof(float);
}

void launch_delta_rule(const DeltaRuleArgs & r, cudaStream_t stream) {
    const DeltaRuleParams & p = r.p;
    if (r.n_tokens == 0) return;
    const delta::Args a{.q = r.q,
                        .k = r.k,
                        .v = r.v,
                        .g = r.g,
                        .beta = r.beta,
                        .state = r.state,
                        .out = r.out,
                        .scratch = r.scratch,
                        .n_tokens = r.n_tokens,
                        .n_k_heads = p.n_k_heads,
                        .n_v_heads = p.n_v_heads,
                        .dk = p.head_k_dim,
                        .dv = p.head_v_dim,
                        .chunk = p.chunk_tokens,
                        .scale = delta::q_scale(p.head_k_dim)};
    if (p.chunk_tokens == 0) {
        const dim3 grid(unsigned(p.n_v_heads), unsigned((p.head_v_dim + kRowThreads - 1) / kRowThreads));
        recurrent_kernel<<<grid, kRowThreads, 0, stream>>>(a);
    } else {
        chunked_kernel<<<unsigned(p.n_v_heads), kChunkThreads, 0, stream>>>(a);
    }
    LR_CUDA_CHECK_LAUNCH();
}

}  // namespace lr::cuda
