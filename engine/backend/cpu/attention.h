#pragma once
// Causal attention of a ubatch's queries over a paged KV view, on the CPU.
//
// attention_reference: llama.cpp's non-flash path, one query at a time, in its roundings
// and orders (with an all-f16 cache: q rounded to f16, softmax weights normalized then
// rounded to f16, and float_dot.h's orders for both products). The oracle.
//
// Sinks (AttentionParams::sinks, gpt-oss): each head's sink logit joins the max and, after
// the keys, the double sum, as ggml's soft_max adds it; the weights (and so the attention
// mass) stay the keys' alone. NOTE: the mass is normalized by the whole sum, sink included:
// it then says how much each key moved the output, so H2O does not rank keys by heads that
// mostly attend to their sink.
//
// attention_fused: the same roundings, computed block by block: for each KV head, the
// K rows of a block are decoded once and scored against all the queries of its group
// (GQA), then the V rows once for the weighted sum. Two passes, so that the weights can
// be normalized before they are rounded: scores, max and sum, then weights and V. The
// q.k products keep float_dot.h's order exactly (when head_dim allows: a multiple of 64
// for one token, of 16 for several); exp and the V sum differ from the reference in the
// last bits. Work is split over KV heads and query tiles, and for decode over chunks of
// the sequence too (their partial results are merged in a fixed order, so results never
// depend on the thread count or timing).
//
// attention_flash: one pass (flash attention, an online softmax): for each KV head and
// query tile, a block's K rows are decoded and scored, the running max, sum and output
// are rescaled where the max rises, and the block's V rows are added with the weights
// exp(score - max); the output is divided by the sum at the end. No score matrix is
// written (a block's scores stay in a few KiB of scratch), every block is read once per
// tile, and decode is one job. Its own float order (flash_scores) and float weights, as
// llama.cpp's flash attention keeps them: within round-off of the reference, not its
// bits. With the attention mass, each item keeps its exps (one pass over K and V still)
// and weighs them once its max and sum are final. Blocks whose K rows are q8 are scored
// in integers against the queries quantized to q8 once per KV head and query tile
// (queries_q8.h), as llama.cpp does for a q8_0 K cache: one vpdpbusd does the work of four
// FMAs, and the queries' rounding (steps of 1/127 of each group's largest value, as the
// K rows have) is the only change from scoring the decoded rows.
//
// attention: what a backend runs. The exact driver while the view is short, so that
// short contexts keep llama.cpp's non-flash bits (the reference-logit oracles); the flash
// driver from kFlashMinSlots slots on, where it is the faster (docs/BENCHMARKS.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/queries_q8.h"
#include "engine/backend/cpu/thread_pool.h"

namespace lr::cpu {

struct AttentionArgs {
    const float * q = nullptr;  // [n_tokens][n_head][head_dim]
    int64_t n_tokens = 0;
    const int32_t * pos = nullptr;  // [n_tokens]
    const PagedKvView * view = nullptr;
    AttentionParams params;
    float * out = nullptr;  // [n_tokens][n_head][head_dim]
};

void attention_reference(ThreadPool & pool, const AttentionArgs & a);

// Head h's sink logit; -inf without sinks (a sink of -inf adds nothing).
inline float sink_logit(const AttentionParams & p, int64_t h) { return p.sinks ? p.sinks[h] : -INFINITY; }
// The sink's term of a softmax sum whose max (the sink included) is `max`.
inline double sink_exp(float sink, float max) { return sink == -INFINITY ? 0.0 : double(std::exp(sink - max)); }

// The inner loops of attention_fused, per ISA.
struct AttentionKernels {
    // dst[i] = src[i] for i < n, rounded to f16 and back if to_f16 (the queries).
    void (*copy)(const float * src, float * dst, uint32_t n, bool to_f16);
    // dst[s][0..d) = kv_decode_row(codec, rows + s * row_bytes), for s in [0, n).
    void (*decode_rows)(KvCodec codec, const uint8_t * rows, size_t row_bytes, uint32_t n, uint32_t d, float * dst);
    // scores[i][s] = scale * q[i] . k[s] for i < n_q, s < n_k, in float_dot.h's order: gemm
    // (d % 16 == 0), else gemv with the tail after the last 64 summed in double (f64_tail,
    // dot_f16_as_f32) or float (dot_f32). Row s of k is at k + s * k_row_bytes, in k_codec:
    // f32 or f16 (other codecs are decoded to f32 first).
    void (*scores)(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, bool gemm,
                   bool f64_tail, float scale, float * scores, size_t stride);
    // The largest of x[0..n).
    float (*max)(const float * x, uint32_t n);
    // x[i] = exp(x[i] - max) for i < n (exp(-inf) = 0); returns the sum in double, in order.
    double (*exp_sum)(float * x, uint32_t n, float max);
    // x[i] = the softmax weight x[i] * inv_sum, for i < n; adds it to mass[i] when mass is not
    // null and the weight is not zero; then rounds x[i] to f16 if round_f16.
    void (*normalize)(float * x, uint32_t n, float inv_sum, bool round_f16, float * mass);
    // acc[i][0..d) += w[i][s] * v[s][0..d) for i < n_q, s < n, one fused multiply-add per
    // term, s in order (v must be finite: zero weights are not skipped). Row s of v is at
    // v + s * v_row_bytes in v_codec: f32, f16 or q8, widened as kv_decode_row does (q4 rows
    // are decoded to f32 first).
    void (*weighted_sum)(const void * v, KvCodec v_codec, size_t v_row_bytes, uint32_t n, const float * w, size_t w_stride, uint32_t n_q,
                         uint32_t d, float * acc);
    // s[i][j] = scale * q[i] . k[j] for i < n_q, j < n_k, row j of k at k + j * row_bytes in
    // f32 or f16: eight lanes of fused multiply-adds, lane l summing the terms c = l mod 8
    // in order, then ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), every ISA the same bits.
    void (*flash_scores)(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d,
                         float scale, float * s, size_t stride);
    // s[i][j] = scale * q[i] . k[j] for i < q.n_q, j < n_k, row j of k a q8 row at
    // k + j * row_bytes: per group, the integer sum of the values exactly, then
    // acc = fma(float(sum), k_scale * q_scale, acc) over the groups in order; every ISA the
    // same bits.
    void (*flash_scores_q8)(const uint8_t * k, size_t row_bytes, uint32_t n_k, const QueriesQ8 & q, float scale, float * s, size_t stride);
};

const AttentionKernels & scalar_attention_kernels();
const AttentionKernels & avx2_attention_kernels();
const AttentionKernels & avx512_attention_kernels();
const AttentionKernels & attention_kernels(CpuIsa isa);

// Scratch the fused kernel reuses between calls.
struct AttentionScratch {
    std::vector<std::vector<float>> per_thread;  // [n_threads]
    std::vector<QueriesQ8> queries_q8;           // flash, q8 K rows: [n_head_kv][n_tiles]
    std::vector<float> scores;                   // decode chunks: [n_head_kv][n_q][n_slots]; flash: kept weights
    std::vector<float> block_max;                // flash, chunks, mass: [item][block][n_q]
    std::vector<float> chunk_stats;              // [n_head_kv][n_chunks][n_q] max, then sum
    std::vector<double> chunk_sums;
    std::vector<float> partial;       // [n_head_kv][n_chunks][n_q][head_dim]
    std::vector<float> mass;          // prefill with attention mass: [n_head_kv][n_tiles][n_slots]
    std::vector<int32_t> masked_pos;  // with page masks (quest): [n_blocks][n_head_kv][bt], unread = empty
};

void attention_fused(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch);
void attention_flash(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch);

inline constexpr size_t kFlashMinSlots = 2048;
void attention(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch);

}  // namespace lr::cpu
