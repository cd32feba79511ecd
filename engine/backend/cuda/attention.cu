// Paged attention over a PagedKvView, for prefill and decode, with the optional attention
// mass (H2O). The spec is cpu/attention_reference.cpp, which follows llama.cpp's non-flash
// path: scores = scale * q.k (q rounded to f16 when every K block is f16), masked where the
// slot is empty, later than the query or outside its sliding window, softmax normalized
// with the exact max and the double sum, the mass added from the normalized weights, the
// weights rounded to f16 when every V block is f16, then out = sum of weight * v. A head's
// sink logit (gpt-oss) joins its rows' max and sum.
//
// Keeping those roundings needs the whole row of scores before any weight is final, so the
// scores go through global scratch, in five launches per tile of query tokens:
//   scores   grid (query groups, KV heads, chunks of blocks): a block loads its queries once
//            (the (token, query head) pairs of one KV head: GQA), decodes slots_per_pass K
//            rows of its head at a time into shared memory and scores every pair;
//   softmax  one block per (token, head) row: max, exp, double sum (and the sink), normalize;
//   mass     (if asked) one thread per (KV head, slot): adds the weights of its queries in the
//            reference's order (token, then query head);
//   values   like scores, with V rows: each thread accumulates fixed (query, dim) outputs;
//            with several chunks, partial outputs per chunk;
//   reduce   (several chunks) adds the partial outputs in chunk order.
// Everything is in a fixed order, so results never depend on timing. Against the
// reference: the q.k and weight.v sums run in another order, expf is within 2 ulp of the
// CPU's exp, and the double sum is a tree. The kernels' work is in attention.cuh, as
// phases between barriers, which the tests also run on the host.

#include "engine/backend/cuda/attention.cuh"
#include "engine/backend/cuda/cuda_check.h"

namespace lr::cuda {
namespace {

using namespace attn;

__global__ void __launch_bounds__(kThreads) scores_kernel(const Tile a) {
    extern __shared__ float smem[];
    const Cta c{blockIdx.x, blockIdx.y, blockIdx.z};
    const ScoresShared s = scores_shared(a, smem);
    scores_load_queries(a, c, s, threadIdx.x);
    for (uint32_t b = chunk_begin(a, c); b < chunk_end(a, c); ++b) {
        for (uint32_t s0 = 0; s0 < a.bt; s0 += a.slots_per_pass) {
            __syncthreads();  // the previous pass is done with the keys
            scores_load_keys(a, c, s, b, s0, threadIdx.x);
            __syncthreads();
            scores_compute(a, c, s, b, s0, threadIdx.x);
        }
    }
}

// The halving tree of the host emulation (tests/gpu), level by level.
template <class T, class Op>
__device__ T block_reduce(T v, T * shared, Op op) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (uint32_t half = kRowThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + half]);
        __syncthreads();
    }
    const T r = shared[0];
    __syncthreads();  // shared is reused by the next reduction
    return r;
}

__global__ void __launch_bounds__(kRowThreads) softmax_kernel(float * scores, size_t n_slots, const float * sinks, int32_t n_head) {
    __shared__ float fshared[kRowThreads];
    __shared__ double dshared[kRowThreads];
    float * row = scores + size_t(blockIdx.x) * n_slots;
    const float sink = row_sink(sinks, blockIdx.x, n_head);
    const float keys_max = block_reduce(softmax_max_part(row, n_slots, threadIdx.x), fshared, [](float x, float y) { return fmaxf(x, y); });
    const float m = fmaxf(keys_max, sink);
    const double sum = block_reduce(softmax_exp_part(row, n_slots, m, threadIdx.x), dshared, [](double x, double y) { return x + y; });
    softmax_normalize(row, n_slots, inverse_sum(sum + sink_exp(sink, m)), threadIdx.x);
}

__global__ void __launch_bounds__(kRowThreads) mass_kernel(const Tile a) {
    const size_t slot = size_t(blockIdx.x) * kRowThreads + threadIdx.x;
    if (slot < a.n_slots) mass_add(a, blockIdx.y, slot);
}

__global__ void __launch_bounds__(kThreads) values_kernel(const Tile a) {
    extern __shared__ float smem[];
    const Cta c{blockIdx.x, blockIdx.y, blockIdx.z};
    const ValuesShared s = values_shared(a, smem);
    ValuesAcc acc;
    for (float & v : acc.v) v = 0.0f;
    for (uint32_t b = chunk_begin(a, c); b < chunk_end(a, c); ++b) {
        for (uint32_t s0 = 0; s0 < a.bt; s0 += a.slots_per_pass) {
            __syncthreads();
            values_load(a, c, s, b, s0, threadIdx.x);
            __syncthreads();
            values_accumulate(a, c, s, s0, threadIdx.x, acc);
        }
    }
    values_store(a, c, threadIdx.x, acc);
}

__global__ void __launch_bounds__(kRowThreads) reduce_kernel(const Tile a) {
    const int64_t e = int64_t(blockIdx.x) * kRowThreads + threadIdx.x;
    if (e < a.n_tok * a.n_head * int64_t(a.d)) reduce_chunks(a, e);
}

}  // namespace

AttentionPlan attention_plan(const AttentionShape & s) { return attn::plan(s); }

void launch_attention(const AttentionShape & s, const AttentionPlan & plan, const AttentionArgs & args, cudaStream_t stream) {
    if (s.n_tokens == 0) return;
    if (s.n_blocks == 0) {  // nothing to attend to: the reference's sums are empty
        LR_CUDA_CHECK(cudaMemsetAsync(args.out, 0, size_t(s.n_tokens) * s.n_head * s.dims.head_dim * sizeof(float), stream));
        return;
    }
    const size_t scores_smem = scores_shared_bytes(plan, s.dims.head_dim), values_smem = values_shared_bytes(plan, s.dims.head_dim);
    LR_ASSERT(scores_smem <= 48 * 1024 && values_smem <= 48 * 1024);
    for (int64_t t0 = 0; t0 < s.n_tokens; t0 += plan.tile_tokens) {
        const Tile a = make_tile(s, plan, args, t0);
        const dim3 grid(query_ctas(a), unsigned(s.n_head_kv), plan.n_chunks);
        scores_kernel<<<grid, kThreads, scores_smem, stream>>>(a);
        LR_CUDA_CHECK_LAUNCH();
        softmax_kernel<<<unsigned(a.n_tok * s.n_head), kRowThreads, 0, stream>>>(a.scores, a.n_slots, args.sinks, s.n_head);
        LR_CUDA_CHECK_LAUNCH();
        if (a.mass) {
            mass_kernel<<<dim3(unsigned((a.n_slots + kRowThreads - 1) / kRowThreads), unsigned(s.n_head_kv)), kRowThreads, 0, stream>>>(a);
            LR_CUDA_CHECK_LAUNCH();
        }
        values_kernel<<<grid, kThreads, values_smem, stream>>>(a);
        LR_CUDA_CHECK_LAUNCH();
        if (plan.n_chunks > 1) {
            const int64_t n = a.n_tok * s.n_head * int64_t(s.dims.head_dim);
            reduce_kernel<<<unsigned((n + kRowThreads - 1) / kRowThreads), kRowThreads, 0, stream>>>(a);
            LR_CUDA_CHECK_LAUNCH();
        }
    }
}

}  // namespace lr::cuda
