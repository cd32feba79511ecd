#pragma once
// The work of attention.cu's kernels, as per-thread phases that the kernels separate with
// __syncthreads() and that the host emulation of the tests (tests/gpu) runs thread by
// thread, in the same order: the indexing is the same code on both. See attention.cu for
// the design.

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/kv_codec.cuh"
#include "engine/common/assert.h"

namespace lr::cuda::attn {

constexpr uint32_t kThreads = 128;       // scores and values blocks
constexpr uint32_t kRowThreads = 256;    // softmax, mass and reduce blocks
constexpr uint32_t kQueryFloats = 2048;  // queries_per_cta * head_dim, at most
constexpr uint32_t kMaxQueriesPerCta = 128;
constexpr int kMaxAcc = int(kQueryFloats / kThreads);  // outputs per thread in `values`
constexpr size_t kSharedBytes = 44 * 1024;             // below the 48 KiB default
constexpr size_t kScoresBudget = size_t(256) << 20;
constexpr size_t kPartialBudget = size_t(64) << 20;

// What every kernel of one tile of query tokens needs.
struct Tile {
    const float * q;              // [n_tokens][n_head][d] (whole call)
    const int32_t * pos;          // [n_tokens] (whole call)
    const KvDevBlock * blocks;    // [n_blocks]
    const uint32_t * read_pages;  // [n_blocks][n_head_kv] or nullptr (every slot read)
    float * scores;               // [n_tok][n_head][n_slots]: scores, then weights
    float * mass;                 // [n_blocks][n_head_kv][bt] or nullptr
    float * out;                  // [n_tokens][n_head][d] (whole call)
    float * partial;              // [n_chunks][n_tok][n_head][d]
    int64_t t0, n_tok;            // this tile's tokens
    int32_t n_head, n_head_kv, group;
    uint32_t d, bt, cg, n_blocks, page_tokens;
    size_t n_slots;
    float scale;
    int32_t window;  // > 0: sliding window (AttentionShape::window)
    bool f16_k, f16_v;
    uint32_t queries_per_cta, slots_per_pass, n_chunks, blocks_per_chunk;
};

// A block's coordinates in the (query groups, KV heads, chunks) grid of scores and values.
struct Cta {
    uint32_t x, g, chunk;
};

LR_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
LR_HD uint32_t min32(uint32_t a, uint32_t b) { return a < b ? a : b; }

// Query pair qi of KV head g, counted from the tile's first token: token t = qi / group,
// head h = g * group + qi % group (the query heads that share g: GQA).
struct Query {
    int64_t t;
    int32_t h;
};
LR_HD Query query_of(const Tile & a, uint32_t g, int64_t qi) { return {qi / a.group, int32_t(g) * a.group + int32_t(qi % a.group)}; }

// The position of slot s of block b for head g: kInvalidPos where empty or not read.
LR_HD int32_t slot_position(const Tile & a, uint32_t b, uint32_t g, uint32_t s) {
    const KvDevBlock & blk = a.blocks[b];
    if (a.read_pages && (a.read_pages[size_t(b) * a.n_head_kv + g] >> (s / a.page_tokens) & 1u) == 0) return kInvalidPos;
    return reinterpret_cast<const int32_t *>(blk.data + blk.pos_offset)[size_t(g) * a.bt + s];
}

LR_HD uint32_t chunk_begin(const Tile & a, const Cta & c) { return c.chunk * a.blocks_per_chunk; }
LR_HD uint32_t chunk_end(const Tile & a, const Cta & c) { return min32(a.n_blocks, (c.chunk + 1) * a.blocks_per_chunk); }

// The queries of a block: [q_begin, q_begin + nq) of the tile's n_tok * group.
struct QueryRange {
    int64_t q_begin;
    uint32_t nq;
};
LR_HD QueryRange queries_of(const Tile & a, const Cta & c) {
    const int64_t q_begin = int64_t(c.x) * a.queries_per_cta;
    return {q_begin, uint32_t(min64(a.queries_per_cta, a.n_tok * a.group - q_begin))};
}

// ---- scores ----------------------------------------------------------------------------------------

struct ScoresShared {
    float * qs;      // [queries_per_cta][d]
    float * ks;      // [slots_per_pass][d + 1] (padded: no bank conflicts)
    int32_t * spos;  // [slots_per_pass]
};
LR_HD ScoresShared scores_shared(const Tile & a, float * smem) {
    ScoresShared s;
    s.qs = smem;
    s.ks = s.qs + size_t(a.queries_per_cta) * a.d;
    s.spos = reinterpret_cast<int32_t *>(s.ks + size_t(a.slots_per_pass) * (a.d + 1));
    return s;
}
inline size_t scores_shared_bytes(const AttentionPlan & p, uint32_t d) {
    return (size_t(p.queries_per_cta) * d + size_t(p.slots_per_pass) * (d + 1)) * sizeof(float) + p.slots_per_pass * sizeof(int32_t);
}

// The block's queries, rounded to f16 when every K is f16 (as llama.cpp's f16 cache).
LR_HD void scores_load_queries(const Tile & a, const Cta & c, const ScoresShared & s, uint32_t tid) {
    const QueryRange qr = queries_of(a, c);
    for (uint32_t idx = tid; idx < qr.nq * a.d; idx += kThreads) {
        const Query q = query_of(a, c.g, qr.q_begin + idx / a.d);
        const float v = a.q[((a.t0 + q.t) * a.n_head + q.h) * int64_t(a.d) + idx % a.d];
        s.qs[idx] = a.f16_k ? __half2float(__float2half_rn(v)) : v;
    }
}

// K rows [s0, s0 + ns) of block b, head g, decoded; empty slots are zeros, never decoded.
LR_HD void scores_load_keys(const Tile & a, const Cta & c, const ScoresShared & s, uint32_t b, uint32_t s0, uint32_t tid) {
    const KvDevBlock & blk = a.blocks[b];
    const uint32_t ns = min32(a.slots_per_pass, a.bt - s0);
    for (uint32_t idx = tid; idx < ns * a.d; idx += kThreads) {
        const uint32_t sl = idx / a.d, j = idx % a.d;
        const uint8_t * row = blk.data + (size_t(c.g) * a.bt + s0 + sl) * blk.k_row_bytes;
        s.ks[sl * (a.d + 1) + j] = slot_position(a, b, c.g, s0 + sl) == kInvalidPos ? 0.0f : kv_decode_one(blk.k_codec, row, j, a.cg);
    }
    if (tid < ns) s.spos[tid] = slot_position(a, b, c.g, s0 + tid);
}

// Whether a query at q_pos sees a key at slot_pos: written, not later, and (sliding window)
// not too old.
LR_HD bool visible(const Tile & a, int32_t slot_pos, int32_t q_pos) {
    return slot_pos != kInvalidPos && slot_pos <= q_pos && (a.window <= 0 || int64_t(q_pos) - slot_pos < a.window);
}

// scores[t][h][slot] = scale * q.k, or -inf where the slot is empty, after the query or
// outside its window.
LR_HD void scores_compute(const Tile & a, const Cta & c, const ScoresShared & s, uint32_t b, uint32_t s0, uint32_t tid) {
    const QueryRange qr = queries_of(a, c);
    const uint32_t S = a.slots_per_pass, ns = min32(S, a.bt - s0);
    for (uint32_t pi = tid; pi < qr.nq * S; pi += kThreads) {
        const uint32_t qi = pi / S, sl = pi % S;
        if (sl >= ns) continue;
        const Query q = query_of(a, c.g, qr.q_begin + qi);
        const int32_t sp = s.spos[sl];
        float score = -INFINITY;
        if (visible(a, sp, a.pos[a.t0 + q.t])) {
            float dot = 0.0f;
            for (uint32_t j = 0; j < a.d; ++j) dot = fmaf(s.qs[qi * a.d + j], s.ks[sl * (a.d + 1) + j], dot);
            score = dot * a.scale;
        }
        a.scores[(q.t * a.n_head + q.h) * a.n_slots + size_t(b) * a.bt + s0 + sl] = score;
    }
}

// ---- softmax of one row (kRowThreads threads, two block reductions) -------------------------------

LR_HD float softmax_max_part(const float * row, size_t n, uint32_t tid) {
    float m = -INFINITY;
    for (size_t i = tid; i < n; i += kRowThreads) m = fmaxf(m, row[i]);
    return m;
}
// row[i] = exp(row[i] - max) (0 where masked); returns this thread's part of the sum.
LR_HD double softmax_exp_part(float * row, size_t n, float max, uint32_t tid) {
    double sum = 0.0;
    for (size_t i = tid; i < n; i += kRowThreads) {
        const float e = row[i] == -INFINITY ? 0.0f : expf(row[i] - max);
        row[i] = e;
        sum += double(e);
    }
    return sum;
}
// The sink logit of row r = token * n_head + head of a tile's scores (-inf without sinks):
// it joins the row's max, and its term the sum after the keys', as in the CPU reference.
LR_HD float row_sink(const float * sinks, int64_t r, int32_t n_head) { return sinks ? sinks[r % n_head] : -INFINITY; }
LR_HD double sink_exp(float sink, float max) { return sink == -INFINITY ? 0.0 : double(expf(sink - max)); }
LR_HD float inverse_sum(double sum) { return sum > 0.0 ? float(1.0 / sum) : 0.0f; }
// The weights, unrounded (the mass takes them so).
LR_HD void softmax_normalize(float * row, size_t n, float inv_sum, uint32_t tid) {
    for (size_t i = tid; i < n; i += kRowThreads) row[i] = row[i] * inv_sum;
}

// ---- mass: one thread per (KV head, slot) ---------------------------------------------------------

// Adds the weights of the tile's queries of head g to the slot's mass, in the reference's
// order (token, then query head); zero weights add nothing.
LR_HD void mass_add(const Tile & a, uint32_t g, size_t slot) {
    float * m = a.mass + ((slot / a.bt) * a.n_head_kv + g) * a.bt + slot % a.bt;
    float acc = *m;
    for (int64_t t = 0; t < a.n_tok; ++t) {
        for (int32_t hq = 0; hq < a.group; ++hq) {
            const float w = a.scores[(t * a.n_head + int32_t(g) * a.group + hq) * a.n_slots + slot];
            if (w != 0.0f) acc += w;
        }
    }
    *m = acc;
}

// ---- values ----------------------------------------------------------------------------------------

struct ValuesShared {
    float * ws;  // [queries_per_cta][slots_per_pass] weights
    float * vs;  // [slots_per_pass][d] values
};
LR_HD ValuesShared values_shared(const Tile & a, float * smem) { return {smem, smem + size_t(a.queries_per_cta) * a.slots_per_pass}; }
inline size_t values_shared_bytes(const AttentionPlan & p, uint32_t d) {
    return (size_t(p.queries_per_cta) * p.slots_per_pass + size_t(p.slots_per_pass) * d) * sizeof(float);
}

// A thread's outputs: (query, dim) pairs tid, tid + kThreads, ...
struct ValuesAcc {
    float v[kMaxAcc];
};

// V rows [s0, s0 + ns) of block b (zeros for empty slots) and the block's queries' weights
// for them (rounded to f16 when every V is f16; 0 past ns).
LR_HD void values_load(const Tile & a, const Cta & c, const ValuesShared & s, uint32_t b, uint32_t s0, uint32_t tid) {
    const KvDevBlock & blk = a.blocks[b];
    const uint32_t S = a.slots_per_pass, ns = min32(S, a.bt - s0);
    for (uint32_t idx = tid; idx < ns * a.d; idx += kThreads) {
        const uint32_t sl = idx / a.d, j = idx % a.d;
        const uint8_t * row = blk.data + blk.v_offset + (size_t(c.g) * a.bt + s0 + sl) * blk.v_row_bytes;
        s.vs[sl * a.d + j] = slot_position(a, b, c.g, s0 + sl) == kInvalidPos ? 0.0f : kv_decode_one(blk.v_codec, row, j, a.cg);
    }
    const QueryRange qr = queries_of(a, c);
    for (uint32_t idx = tid; idx < qr.nq * S; idx += kThreads) {
        const uint32_t qi = idx / S, sl = idx % S;
        float w = 0.0f;
        if (sl < ns) {
            const Query q = query_of(a, c.g, qr.q_begin + qi);
            w = a.scores[(q.t * a.n_head + q.h) * a.n_slots + size_t(b) * a.bt + s0 + sl];
            if (a.f16_v) w = __half2float(__float2half_rn(w));
        }
        s.ws[idx] = w;
    }
}

LR_HD void values_accumulate(const Tile & a, const Cta & c, const ValuesShared & s, uint32_t s0, uint32_t tid, ValuesAcc & acc) {
    const QueryRange qr = queries_of(a, c);
    const uint32_t S = a.slots_per_pass, ns = min32(S, a.bt - s0);
    LR_UNROLL
    for (int k = 0; k < kMaxAcc; ++k) {
        const uint32_t p = tid + uint32_t(k) * kThreads;
        if (p >= qr.nq * a.d) break;
        const uint32_t qi = p / a.d, j = p % a.d;
        float v = acc.v[k];
        for (uint32_t sl = 0; sl < ns; ++sl) {
            const float w = s.ws[qi * S + sl];
            if (w != 0.0f) v = fmaf(w, s.vs[sl * a.d + j], v);  // as the reference: zero weights add nothing
        }
        acc.v[k] = v;
    }
}

// The outputs, or with several chunks the chunk's partial outputs.
LR_HD void values_store(const Tile & a, const Cta & c, uint32_t tid, const ValuesAcc & acc) {
    const QueryRange qr = queries_of(a, c);
    LR_UNROLL
    for (int k = 0; k < kMaxAcc; ++k) {
        const uint32_t p = tid + uint32_t(k) * kThreads;
        if (p >= qr.nq * a.d) break;
        const Query q = query_of(a, c.g, qr.q_begin + p / a.d);
        const uint32_t j = p % a.d;
        if (a.n_chunks == 1) {
            a.out[((a.t0 + q.t) * a.n_head + q.h) * int64_t(a.d) + j] = acc.v[k];
        } else {
            a.partial[((int64_t(c.chunk) * a.n_tok + q.t) * a.n_head + q.h) * int64_t(a.d) + j] = acc.v[k];
        }
    }
}

// ---- reduce: one thread per output element of the tile ---------------------------------------------

LR_HD void reduce_chunks(const Tile & a, int64_t e) {
    const int64_t per_chunk = a.n_tok * a.n_head * int64_t(a.d);
    float sum = 0.0f;
    for (uint32_t c = 0; c < a.n_chunks; ++c) sum += a.partial[c * per_chunk + e];
    a.out[a.t0 * a.n_head * int64_t(a.d) + e] = sum;
}

// ---- the plan (host) --------------------------------------------------------------------------------

inline AttentionPlan plan(const AttentionShape & s) {
    AttentionPlan p;
    const uint32_t d = s.dims.head_dim, bt = s.dims.block_tokens;
    const size_t n_slots = size_t(s.n_blocks) * bt;
    const int64_t group = s.n_head / s.n_head_kv;
    p.queries_per_cta = std::clamp(kQueryFloats / d, 1u, kMaxQueriesPerCta);
    // Shared memory: the queries, then as many K rows (padded) as fit, at most 32.
    const size_t q_bytes = size_t(p.queries_per_cta) * d * sizeof(float);
    const size_t per_slot = (size_t(d) + 1) * sizeof(float) + sizeof(int32_t);
    LR_ASSERT(q_bytes + per_slot <= kSharedBytes);  // head_dim up to ~5000
    p.slots_per_pass = uint32_t(std::min<size_t>({32, bt, (kSharedBytes - q_bytes) / per_slot}));
    // Query tokens per pass: the scores of a pass stay within their budget.
    const size_t row_bytes = size_t(s.n_head) * std::max<size_t>(n_slots, 1) * sizeof(float);
    p.tile_tokens = std::clamp<int64_t>(int64_t(kScoresBudget / row_bytes), 1, std::max<int64_t>(s.n_tokens, 1));
    // Chunks of the sequence: enough blocks for every multiprocessor (decode has few
    // queries), within the partial outputs' budget.
    const int64_t q_ctas = (p.tile_tokens * group + p.queries_per_cta - 1) / p.queries_per_cta * s.n_head_kv;
    const int64_t wanted = (4 * int64_t(s.n_sm) + q_ctas - 1) / q_ctas;
    const size_t partial_per_chunk = size_t(p.tile_tokens) * s.n_head * d * sizeof(float);
    const int64_t affordable = std::max<int64_t>(1, int64_t(kPartialBudget / partial_per_chunk));
    const int64_t n_chunks = std::clamp<int64_t>(std::min(wanted, affordable), 1, std::max<int64_t>(s.n_blocks, 1));
    p.blocks_per_chunk = uint32_t((s.n_blocks + n_chunks - 1) / n_chunks);
    p.n_chunks = p.blocks_per_chunk == 0 ? 1 : (s.n_blocks + p.blocks_per_chunk - 1) / p.blocks_per_chunk;
    p.scores_bytes = size_t(p.tile_tokens) * row_bytes;
    p.partial_bytes = p.n_chunks > 1 ? size_t(p.n_chunks) * partial_per_chunk : 0;
    return p;
}

// The tile of tokens [t0, t0 + n_tok) of a call.
inline Tile make_tile(const AttentionShape & s, const AttentionPlan & plan, const AttentionArgs & args, int64_t t0) {
    return Tile{
        .q = args.q,
        .pos = args.pos,
        .blocks = args.blocks,
        .read_pages = args.read_pages,
        .scores = args.scores,
        .mass = s.mass ? args.mass : nullptr,
        .out = args.out,
        .partial = args.partial,
        .t0 = t0,
        .n_tok = std::min(plan.tile_tokens, s.n_tokens - t0),
        .n_head = s.n_head,
        .n_head_kv = s.n_head_kv,
        .group = s.n_head / s.n_head_kv,
        .d = s.dims.head_dim,
        .bt = s.dims.block_tokens,
        .cg = s.dims.codec_group,
        .n_blocks = s.n_blocks,
        .page_tokens = s.page_tokens,
        .n_slots = size_t(s.n_blocks) * s.dims.block_tokens,
        .scale = s.scale,
        .window = s.window,
        .f16_k = s.f16_k,
        .f16_v = s.f16_v,
        .queries_per_cta = plan.queries_per_cta,
        .slots_per_pass = plan.slots_per_pass,
        .n_chunks = plan.n_chunks,
        .blocks_per_chunk = plan.blocks_per_chunk,
    };
}

// Blocks of the scores and values grids along x (query groups of one KV head).
inline uint32_t query_ctas(const Tile & a) { return uint32_t((a.n_tok * a.group + a.queries_per_cta - 1) / a.queries_per_cta); }

}  // namespace lr::cuda::attn
