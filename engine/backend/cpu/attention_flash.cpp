// The one-pass (flash) attention driver (attention.h).
//
// An item (attention_slots.h) keeps, for each of its queries, a running max m, the sum l
// of exp(score - m) over the keys so far (in double; the first chunk starts from the
// sink), and the output o = sum of exp(score - m) v. Each block it sees: score the K rows,
// mask, raise m where the block's max is larger (scaling l and o by exp(m_old - m_new)),
// exp, add to l, add the V rows to o. Items are KV head x query tile x chunk of blocks;
// chunks come from the shape only (so the bits never depend on the thread count) and are
// merged in order: m = max m_c, l = sum exp(m_c - m) l_c, o = sum exp(m_c - m) o_c. The
// output is o / l.
//
// With the attention mass collected, an item keeps its blocks' exps and each block's m;
// once m and l are final, a slot's weight for query i is exp_i * exp(m_block - m) / l,
// summed over the queries into the mass (per query tile, the tiles added in order).

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/attention_slots.h"
#include "engine/common/assert.h"

namespace lr::cpu {
namespace {

struct Plan {
    int64_t tile_tokens = 0, n_tiles = 0;
    uint32_t n_chunks = 1, blocks_per_chunk = 0;
    uint32_t max_q = 0;  // queries of the largest tile
};

constexpr uint32_t kTileQueries = 32;    // a block's decoded rows serve this many queries
constexpr uint32_t kMinItems = 32;       // items enough for 16 threads to share
constexpr uint32_t kMinChunkBlocks = 8;  // a chunk's merge is worth its blocks

Plan make_plan(const AttentionSlots & v) {
    const int64_t n_tokens = v.args().n_tokens;
    Plan p;
    p.tile_tokens = std::min<int64_t>(n_tokens, std::max<int64_t>(1, kTileQueries / uint32_t(v.group())));
    p.n_tiles = (n_tokens + p.tile_tokens - 1) / p.tile_tokens;
    // Few heads and tiles (decode, short ubatches): cut the sequence too. NOTE: from the
    // shape only, never from the thread count.
    const int64_t items = int64_t(v.n_head_kv()) * p.n_tiles;
    if (items < kMinItems) {
        const int64_t wanted = (kMinItems + items - 1) / items;
        p.n_chunks = uint32_t(std::max<int64_t>(1, std::min<int64_t>(wanted, v.n_blocks() / kMinChunkBlocks)));
    }
    p.blocks_per_chunk = (v.n_blocks() + p.n_chunks - 1) / p.n_chunks;
    p.n_chunks = (v.n_blocks() + p.blocks_per_chunk - 1) / p.blocks_per_chunk;  // none empty
    p.max_q = uint32_t(p.tile_tokens) * uint32_t(v.group());
    return p;
}

// An item's running state: m [n_q], l [n_q], o [n_q][d].
struct Running {
    float * m;
    double * l;
    float * o;
};

// Where an item's scores and then exps go: block b's at w + (b - b0) * bt when they are
// kept for the mass (with each block's m in block_max [blocks][n_q]), else at w; rows
// `stride` apart.
struct Weights {
    float * w;
    size_t stride;
    float * block_max;  // null: not kept
};

void scale_row(float * x, uint32_t n, float f) {
    for (uint32_t i = 0; i < n; ++i) x[i] *= f;
}

// One item, from the sink (first chunk) or nothing, over its blocks. scratch: q [max_q][d],
// K and V rows [2][bt][d]; q8: its queries quantized (null when no K rows are q8).
void run_item(const AttentionKernels & k, const AttentionSlots & v, const AttentionItem & it, float * scratch, uint32_t max_q,
              const Running & r, const Weights & W, const QueriesQ8 * q8) {
    const AttentionArgs & a = v.args();
    const uint32_t d = v.d(), bt = v.bt(), group = uint32_t(v.group());
    const uint32_t n_q = it.n_tokens() * group;
    float * q = scratch;
    float * k_rows = q + size_t(max_q) * d;
    float * v_rows = k_rows + size_t(bt) * d;
    v.load_queries(it, k, q);
    for (uint32_t i = 0; i < n_q; ++i) {
        r.m[i] = it.chunk == 0 ? v.sink(it, i) : -INFINITY;
        r.l[i] = r.m[i] == -INFINITY ? 0.0 : 1.0;  // exp(sink - sink)
    }
    std::fill_n(r.o, size_t(n_q) * d, 0.0f);
    for (uint32_t b = it.b0; b < it.b1; ++b) {
        float * s = W.w + (W.block_max ? size_t(b - it.b0) * bt : 0);
        float * block_max = W.block_max ? W.block_max + size_t(b - it.b0) * n_q : nullptr;
        if (!v.block_visible(b, it.g, it)) {
            if (block_max) std::fill_n(block_max, n_q, -INFINITY);  // no weights
            continue;
        }
        if (b + 1 < it.b1) {
            v.prefetch_rows(b + 1, it.g, false);
            v.prefetch_rows(b + 1, it.g, true);
        }
        // f32 and f16 K rows are scored in place, q8 rows in integers, the others decoded
        // first. Every slot is scored: those without a position are masked below (whatever
        // their score was) and their V rows are skipped.
        const KvBlockLayout L = v.view().layout(b);
        const uint8_t * k_rows_in_place = v.view().blocks[b].data + L.k_row_offset(it.g, 0);
        if (L.k_codec == KvCodec::f32 || L.k_codec == KvCodec::f16) {
            k.flash_scores(k_rows_in_place, L.k_codec, L.k_row_bytes(), bt, q, n_q, d, a.params.scale, s, W.stride);
        } else if (L.k_codec == KvCodec::q8) {
            k.flash_scores_q8(k_rows_in_place, L.k_row_bytes(), bt, *q8, a.params.scale, s, W.stride);
        } else {
            v.decode_keys(b, it.g, k, k_rows);
            k.flash_scores(k_rows, KvCodec::f32, d * sizeof(float), bt, q, n_q, d, a.params.scale, s, W.stride);
        }
        const int32_t * pos = v.head_pos(b, it.g);
        if (!v.fully_visible(pos, it)) {
            for (uint32_t i = 0; i < n_q; ++i) {
                const int32_t q_pos = a.pos[it.t0 + i / group];
                for (uint32_t sl = 0; sl < bt; ++sl) {
                    if (v.masked(pos[sl], q_pos)) s[i * W.stride + sl] = -INFINITY;
                }
            }
        }
        for (uint32_t i = 0; i < n_q; ++i) {
            float * row = s + i * W.stride;
            const float row_max = k.max(row, bt);
            if (row_max > r.m[i]) {
                if (r.m[i] != -INFINITY) {
                    const float f = std::exp(r.m[i] - row_max);
                    r.l[i] *= double(f);
                    scale_row(r.o + size_t(i) * d, d, f);
                }
                r.m[i] = row_max;
            }
            if (r.m[i] == -INFINITY) {
                std::fill_n(row, bt, 0.0f);  // nothing seen yet: no weights
            } else {
                r.l[i] += k.exp_sum(row, bt, r.m[i]);
            }
            if (block_max) block_max[i] = r.m[i];
        }
        v.add_weighted_values(b, it.g, k, s, W.stride, n_q, r.o, v_rows);
    }
}

// Adds the item's weights, its exps scaled by exp(block m - m) / l with its final m and l,
// summed over its queries in order, to mass [n_slots] (its head's and tile's).
void add_item_mass(const AttentionSlots & v, const AttentionItem & it, const Weights & W, const float * m, const double * l, float * mass) {
    const uint32_t bt = v.bt(), n_q = it.n_tokens() * uint32_t(v.group());
    float f[kMaxItemQueries];
    for (uint32_t b = it.b0; b < it.b1; ++b) {
        const float * block_max = W.block_max + size_t(b - it.b0) * n_q;
        bool any = false;
        for (uint32_t i = 0; i < n_q; ++i) {
            f[i] = block_max[i] == -INFINITY || l[i] <= 0 ? 0.0f : float(double(std::exp(block_max[i] - m[i])) / l[i]);
            any = any || f[i] != 0.0f;
        }
        if (!any) continue;
        const float * w = W.w + size_t(b - it.b0) * bt;
        float * out = mass + size_t(b) * bt;
        for (uint32_t sl = 0; sl < bt; ++sl) {
            float total = 0.0f;
            for (uint32_t i = 0; i < n_q; ++i) total += w[i * W.stride + sl] * f[i];
            out[sl] += total;
        }
    }
}

}  // namespace

void attention_flash(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch) {
    const PagedKvView & view = *a.view;
    if (a.n_tokens <= 0) return;
    const AttentionSlots v(a, scratch.masked_pos);
    const Plan p = make_plan(v);
    LR_ASSERT(p.max_q <= kMaxItemQueries);
    const uint32_t d = v.d(), bt = v.bt(), n_head_kv = v.n_head_kv();
    const size_t n_items = size_t(n_head_kv) * size_t(p.n_tiles) * p.n_chunks;
    const bool mass = view.attn_mass != nullptr;
    const bool chunked = p.n_chunks > 1;
    const size_t item_slots = size_t(p.blocks_per_chunk) * bt;

    // Every item's running state stays until the merge: [item][max_q] m and l, [item][max_q][d] o.
    scratch.chunk_stats.resize(n_items * p.max_q);
    scratch.chunk_sums.resize(n_items * p.max_q);
    scratch.partial.resize(n_items * p.max_q * d);
    // Weights: a block's at a time per thread; with the mass, an item's whole, per thread
    // (one chunk: its mass is added as it ends) or per item (chunks: after the merge).
    const bool thread_keeps = mass && !chunked;
    const size_t thread_weights = size_t(p.max_q) * (thread_keeps ? item_slots : bt);
    const size_t floats = size_t(p.max_q) * d + 2 * size_t(bt) * d + thread_weights +
                          (thread_keeps ? size_t(p.blocks_per_chunk) * p.max_q : 0);
    scratch.per_thread.resize(size_t(pool.n_threads()));
    for (auto & buf : scratch.per_thread) {
        if (buf.size() < floats) buf.resize(floats, 0.0f);
    }
    if (mass) {
        scratch.mass.assign(size_t(n_head_kv) * size_t(p.n_tiles) * v.n_slots(), 0.0f);
        if (chunked) {
            scratch.scores.resize(n_items * p.max_q * item_slots);
            scratch.block_max.resize(n_items * p.blocks_per_chunk * p.max_q);
        }
    }
    auto running = [&](size_t item) {
        return Running{scratch.chunk_stats.data() + item * p.max_q, scratch.chunk_sums.data() + item * p.max_q,
                       scratch.partial.data() + item * p.max_q * d};
    };
    auto weights = [&](size_t item, int ith) {
        float * thread_w = scratch.per_thread[size_t(ith)].data() + size_t(p.max_q) * d + 2 * size_t(bt) * d;
        if (!mass) return Weights{thread_w, bt, nullptr};
        if (!chunked) return Weights{thread_w, item_slots, thread_w + thread_weights};
        return Weights{scratch.scores.data() + item * p.max_q * item_slots, item_slots,
                       scratch.block_max.data() + item * p.blocks_per_chunk * p.max_q};
    };
    // item = (tile * n_head_kv + g) * n_chunks + chunk
    auto item_of = [&](size_t item) {
        const uint32_t chunk = uint32_t(item % p.n_chunks);
        const size_t head_tile = item / p.n_chunks;
        return v.item(uint32_t(head_tile % n_head_kv), int64_t(head_tile / n_head_kv), p.tile_tokens, chunk, p.blocks_per_chunk);
    };
    auto tile_mass = [&](const AttentionItem & it) {
        return scratch.mass.data() + (size_t(it.g) * size_t(p.n_tiles) + size_t(it.t0 / p.tile_tokens)) * v.n_slots();
    };
    // The queries for q8 K rows, quantized once per head and tile (its chunks share them).
    const bool q8_keys = std::any_of(view.blocks.begin(), view.blocks.end(), [](const KvBlockRef & b) { return b.k_codec == KvCodec::q8; });
    if (q8_keys) {
        scratch.queries_q8.resize(size_t(n_head_kv) * size_t(p.n_tiles));
        pool.run(int64_t(n_head_kv) * p.n_tiles, [&](int64_t head_tile, int ith) {
            const AttentionItem it = item_of(size_t(head_tile) * p.n_chunks);
            float * q = scratch.per_thread[size_t(ith)].data();
            v.load_queries(it, k, q);
            scratch.queries_q8[size_t(head_tile)].quantize(q, it.n_tokens() * uint32_t(v.group()), d);
        });
    }
    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const AttentionItem it = item_of(size_t(job));
        const Running r = running(size_t(job));
        const Weights W = weights(size_t(job), ith);
        const QueriesQ8 * q8 = q8_keys ? &scratch.queries_q8[size_t(job) / p.n_chunks] : nullptr;
        run_item(k, v, it, scratch.per_thread[size_t(ith)].data(), p.max_q, r, W, q8);
        if (thread_keeps) add_item_mass(v, it, W, r.m, r.l, tile_mass(it));  // one chunk: m and l are final
    });

    // Merge each (head, tile)'s chunks in order, divide by the sum, store; the final m and
    // l replace the first chunk's.
    pool.run(int64_t(n_head_kv) * p.n_tiles, [&](int64_t head_tile, int ith) {
        const size_t first = size_t(head_tile) * p.n_chunks;
        const AttentionItem it = item_of(first);
        const uint32_t n_q = it.n_tokens() * uint32_t(v.group());
        float * out = scratch.per_thread[size_t(ith)].data();  // the items are done: the scratch is free
        for (uint32_t i = 0; i < n_q; ++i) {
            float m = -INFINITY;
            for (uint32_t c = 0; c < p.n_chunks; ++c) m = std::max(m, running(first + c).m[i]);
            float * o = out + size_t(i) * d;
            std::fill_n(o, d, 0.0f);
            double l = 0.0;
            for (uint32_t c = 0; c < p.n_chunks && m != -INFINITY; ++c) {
                const Running rc = running(first + c);
                if (rc.m[i] == -INFINITY) continue;
                const float f = std::exp(rc.m[i] - m);  // 1 exactly for the chunk that holds the max
                l += double(f) * rc.l[i];
                const float * oc = rc.o + size_t(i) * d;
                for (uint32_t j = 0; j < d; ++j) o[j] += f * oc[j];
            }
            // Nothing seen and no sink: zeros, as the reference gives.
            scale_row(o, d, l > 0 ? float(1.0 / l) : 0.0f);
            running(first).m[i] = m;
            running(first).l[i] = l;
        }
        v.store(it, out);
    });
    if (!mass) return;
    if (chunked) {
        // Chunks own disjoint slots of their tile's mass.
        pool.run(int64_t(n_items), [&](int64_t job, int) {
            const AttentionItem it = item_of(size_t(job));
            const Running final = running(size_t(job) / p.n_chunks * p.n_chunks);
            add_item_mass(v, it, weights(size_t(job), 0), final.m, final.l, tile_mass(it));
        });
    }
    v.add_tile_mass(pool, scratch.mass, p.n_tiles);
}

void attention(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch) {
    if (size_t(a.view->n_blocks()) * a.view->shape.block_tokens >= kFlashMinSlots) {
        attention_flash(pool, k, a, scratch);
    } else {
        attention_fused(pool, k, a, scratch);
    }
}

}  // namespace lr::cpu
