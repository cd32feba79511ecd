// The fused (exact) attention driver (attention.h).
//
// Three steps per item (attention_slots.h):
//   scores  decode the K rows of each block once, score every query, mask, local max;
//   exp     subtract the max over all chunks, exp, sum (the first chunk adds the sink's term);
//   values  normalize (sum over all chunks), add the attention mass, round, decode the V
//           rows of each block once and accumulate them into the item's partial output.
// Prefill uses one chunk per item and runs the three steps in one job. Decode with fewer
// than kDecodeItems KV heads cuts the sequence into chunks (from the shape alone, so that
// the result never depends on the thread count), runs each step as a job, and adds the
// chunks' partial outputs in chunk order.

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/attention_slots.h"
#include "engine/backend/cpu/float_dot.h"
#include "engine/common/assert.h"

namespace lr::cpu {
namespace {

// ---- the plan of one call ------------------------------------------------------------------------

struct Plan {
    bool gemm = false;
    int64_t tile_tokens = 0, n_tiles = 0;
    uint32_t n_chunks = 1, blocks_per_chunk = 0;
    uint32_t max_q = 0;  // queries of the largest tile
};

constexpr uint32_t kDecodeItems = 8;

Plan make_plan(const AttentionSlots & v) {
    const int64_t n_tokens = v.args().n_tokens;
    Plan p;
    p.gemm = dot_order(n_tokens, v.d()) == DotOrder::gemm;
    const bool decode = n_tokens <= 4;
    // About 32 queries per item: enough to reuse each decoded block, small score rows.
    p.tile_tokens = decode ? n_tokens : std::max<int64_t>(1, 32 / v.group());
    p.n_tiles = (n_tokens + p.tile_tokens - 1) / p.tile_tokens;
    // Decode: at least kDecodeItems items for the threads to share. NOTE: from the shape
    // only, never from the thread count, so that the sums (and the logits) are the same
    // bits on every machine.
    if (decode && v.n_head_kv() < kDecodeItems) {
        const uint32_t wanted = (kDecodeItems + v.n_head_kv() - 1) / v.n_head_kv();
        p.n_chunks = std::max(1u, std::min(wanted, v.n_blocks() / 4));
    }
    p.blocks_per_chunk = (v.n_blocks() + p.n_chunks - 1) / p.n_chunks;
    p.max_q = uint32_t(p.tile_tokens) * uint32_t(v.group());
    return p;
}

// Per-item views of its scratch.
struct ItemBuffers {
    float * q;       // [n_q][d] the queries (rounded to f16 for an all-f16 K)
    float * rows;    // [bt][d] decoded K or V rows
    float * scores;  // [n_q][stride] scores, then weights; column = slot of the view
    size_t stride;
    float * acc;  // [n_q][d] partial output
};

size_t per_thread_floats(const AttentionSlots & v, const Plan & p, bool own_scores) {
    size_t n = size_t(p.max_q) * v.d() * 2 + size_t(v.bt()) * v.d() + 64;
    if (own_scores) n += size_t(p.max_q) * v.n_slots();
    return n;
}

// The three steps of an item over the slots of a view.
class Runner {
public:
    Runner(const AttentionKernels & k, const AttentionSlots & v, const Plan & p) : k_(k), v_(v), p_(p) {}

    AttentionItem item(uint32_t g, int64_t tile, uint32_t chunk) const {
        return v_.item(g, tile, p_.tile_tokens, chunk, p_.blocks_per_chunk);
    }

    // scores of the item's queries over its blocks; returns nothing, writes the local max
    // of each query to `max_out` [n_q]. The local max starts at the sink: every chunk's
    // does, and the max over chunks is the same.
    void scores(const AttentionItem & it, const ItemBuffers & B, float * max_out) const {
        const AttentionArgs & a = v_.args();
        const uint32_t n_q = it.n_tokens() * uint32_t(v_.group()), bt = v_.bt();
        for (uint32_t i = 0; i < n_q; ++i) max_out[i] = v_.sink(it, i);
        for (uint32_t b = it.b0; b < it.b1; ++b) {
            float * sc = B.scores + size_t(b) * bt;
            if (!v_.block_visible(b, it.g, it)) continue;  // never read: see for_visible_runs
            // f32 and f16 rows are scored in place, the quantized codecs decoded first; only
            // slots with a position (the others are masked below): a quest head scores just
            // the pages it reads.
            const KvBlockLayout L = v_.view().layout(b);
            const bool in_place = L.k_codec == KvCodec::f32 || L.k_codec == KvCodec::f16;
            if (!in_place) v_.decode_keys(b, it.g, k_, B.rows);
            const uint8_t * k = in_place ? v_.view().blocks[b].data + L.k_row_offset(it.g, 0) : reinterpret_cast<const uint8_t *>(B.rows);
            const KvCodec codec = in_place ? L.k_codec : KvCodec::f32;
            const size_t row_bytes = in_place ? L.k_row_bytes() : v_.d() * sizeof(float);
            v_.for_slot_runs(b, it.g, [&](uint32_t s, uint32_t e) {
                k_.scores(k + s * row_bytes, codec, row_bytes, e - s, B.q, n_q, v_.d(), p_.gemm, v_.f16_k(), a.params.scale, sc + s,
                          B.stride);
            });
            const int32_t * pos = v_.head_pos(b, it.g);
            if (v_.fully_visible(pos, it)) {
                for (uint32_t i = 0; i < n_q; ++i) max_out[i] = std::max(max_out[i], k_.max(sc + i * B.stride, bt));
                continue;
            }
            for (int64_t t = it.t0; t < it.t1; ++t) {
                for (int32_t hq = 0; hq < v_.group(); ++hq) {
                    const uint32_t i = uint32_t(t - it.t0) * uint32_t(v_.group()) + uint32_t(hq);
                    float * row = sc + i * B.stride;
                    float m = max_out[i];
                    for (uint32_t s = 0; s < bt; ++s) {
                        if (v_.masked(pos[s], a.pos[t])) {
                            row[s] = -INFINITY;
                        } else {
                            m = std::max(m, row[s]);
                        }
                    }
                    max_out[i] = m;
                }
            }
        }
    }

    // Calls f(b0, b1) for each run of consecutive blocks of the item with a slot visible to
    // it. The other blocks' weights are all zero: the later steps skip them (their scores
    // are never written).
    template <class F>
    void for_visible_runs(const AttentionItem & it, F && f) const {
        uint32_t b = it.b0;
        while (b < it.b1) {
            if (!v_.block_visible(b, it.g, it)) {
                ++b;
                continue;
            }
            uint32_t e = b + 1;
            while (e < it.b1 && v_.block_visible(e, it.g, it)) ++e;
            f(b, e);
            b = e;
        }
    }

    // exp(score - max[i]) over the item's visible slots; writes each query's sum to sum_out,
    // with the sink's term in the first chunk's.
    void exps(const AttentionItem & it, const ItemBuffers & B, const float * max, double * sum_out) const {
        const uint32_t n_q = it.n_tokens() * uint32_t(v_.group());
        for (uint32_t i = 0; i < n_q; ++i) sum_out[i] = 0.0;
        for_visible_runs(it, [&](uint32_t b0, uint32_t b1) {
            const size_t first = size_t(b0) * v_.bt(), n = size_t(b1 - b0) * v_.bt();
            for (uint32_t i = 0; i < n_q; ++i) {
                float * row = B.scores + i * B.stride + first;
                if (max[i] == -INFINITY) {
                    std::fill_n(row, n, 0.0f);
                } else {
                    sum_out[i] += k_.exp_sum(row, uint32_t(n), max[i]);
                }
            }
        });
        if (it.chunk != 0) return;
        for (uint32_t i = 0; i < n_q; ++i) sum_out[i] += sink_exp(v_.sink(it, i), max[i]);
    }

    // Normalizes, adds the mass (to the view's attn_mass when `mass` is null and it is
    // collected, else to mass[slot]), rounds, and accumulates V into B.acc (zeroed here).
    void values(const AttentionItem & it, const ItemBuffers & B, const double * sum, float * mass) const {
        float * const view_mass = v_.view().attn_mass;
        const uint32_t n_q = it.n_tokens() * uint32_t(v_.group());
        const uint32_t d = v_.d(), bt = v_.bt();
        float inv_sum[kMaxItemQueries];
        for (uint32_t i = 0; i < n_q; ++i) inv_sum[i] = sum[i] > 0 ? float(1.0 / sum[i]) : 0.0f;
        std::fill_n(B.acc, size_t(n_q) * d, 0.0f);
        for_visible_runs(it, [&](uint32_t b0, uint32_t b1) {
            const size_t first = size_t(b0) * bt, n = size_t(b1 - b0) * bt;
            for (uint32_t i = 0; i < n_q; ++i) {
                float * row = B.scores + i * B.stride + first;
                if (mass) {
                    k_.normalize(row, uint32_t(n), inv_sum[i], v_.f16_v(), mass + first);
                } else {
                    // The view's mass is laid out per block: normalize block by block.
                    for (uint32_t b = b0; b < b1; ++b) {
                        const size_t at = size_t(b - b0) * bt;
                        k_.normalize(row + at, bt, inv_sum[i], v_.f16_v(), view_mass ? &v_.mass_at(first + at, it.g) : nullptr);
                    }
                }
            }
            // Slots in order, skipping those without a position (their weight is zero).
            for (uint32_t b = b0; b < b1; ++b) {
                v_.add_weighted_values(b, it.g, k_, B.scores + size_t(b) * bt, B.stride, n_q, B.acc, B.rows);
            }
        });
    }

private:
    const AttentionKernels & k_;
    const AttentionSlots & v_;
    const Plan & p_;
};

}  // namespace

void attention_fused(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch) {
    const PagedKvView & view = *a.view;
    if (a.n_tokens <= 0) return;
    const int n_threads = pool.n_threads();
    const AttentionSlots v(a, scratch.masked_pos);
    const Plan p = make_plan(v);
    LR_ASSERT(p.max_q <= kMaxItemQueries);
    const Runner run(k, v, p);
    const uint32_t d = v.d(), n_head_kv = v.n_head_kv();
    const size_t n_slots = v.n_slots();

    if (p.n_chunks == 1) {
        // Prefill, or decode with enough KV heads: one job, each item does every step.
        const bool mass = view.attn_mass != nullptr;
        // NOTE: with several query tiles, each tile's mass is summed apart and the tiles are
        // added in order afterwards, so the result does not depend on which thread ran what.
        const bool tiled_mass = mass && p.n_tiles > 1;
        if (tiled_mass) scratch.mass.assign(size_t(n_head_kv) * size_t(p.n_tiles) * n_slots, 0.0f);
        scratch.per_thread.resize(size_t(n_threads));
        const size_t floats = per_thread_floats(v, p, true);
        for (auto & buf : scratch.per_thread) {
            if (buf.size() < floats) buf.resize(floats);
        }
        pool.run(int64_t(n_head_kv) * p.n_tiles, [&](int64_t job, int ith) {
            const uint32_t g = uint32_t(job % n_head_kv);
            const int64_t tile = job / n_head_kv;
            const AttentionItem it = run.item(g, tile, 0);
            float * base = scratch.per_thread[size_t(ith)].data();
            ItemBuffers B{};
            B.q = base;
            B.acc = B.q + size_t(p.max_q) * d;
            B.rows = B.acc + size_t(p.max_q) * d;
            B.scores = B.rows + size_t(v.bt()) * d;
            B.stride = n_slots;
            v.load_queries(it, k, B.q);
            float max[kMaxItemQueries];
            double sum[kMaxItemQueries];
            run.scores(it, B, max);
            run.exps(it, B, max, sum);
            // One tile: this item owns head g's slots and adds to the view's mass directly.
            float * item_mass = tiled_mass ? scratch.mass.data() + (size_t(g) * size_t(p.n_tiles) + size_t(tile)) * n_slots : nullptr;
            run.values(it, B, sum, item_mass);
            v.store(it, B.acc);
        });
        if (tiled_mass) v.add_tile_mass(pool, scratch.mass, p.n_tiles);
        return;
    }

    // Decode over chunks of the sequence: three jobs, then the merge.
    const uint32_t n_q = p.max_q;
    const size_t n_items = size_t(n_head_kv) * p.n_chunks;
    scratch.scores.resize(size_t(n_head_kv) * n_q * n_slots);
    scratch.chunk_stats.resize(n_items * n_q);
    scratch.chunk_sums.resize(n_items * n_q);
    scratch.partial.resize(n_items * n_q * d);
    scratch.per_thread.resize(size_t(n_threads));
    const size_t floats = per_thread_floats(v, p, false);
    for (auto & buf : scratch.per_thread) {
        if (buf.size() < floats) buf.resize(floats);
    }
    auto buffers = [&](uint32_t g, uint32_t chunk, int ith) {
        float * base = scratch.per_thread[size_t(ith)].data();
        ItemBuffers B{};
        B.q = base;
        B.rows = base + size_t(n_q) * d;
        B.scores = scratch.scores.data() + size_t(g) * n_q * n_slots;
        B.stride = n_slots;
        B.acc = scratch.partial.data() + (size_t(g) * p.n_chunks + chunk) * n_q * d;
        return B;
    };
    auto stats = [&](uint32_t g, uint32_t chunk) { return scratch.chunk_stats.data() + (size_t(g) * p.n_chunks + chunk) * n_q; };
    auto sums = [&](uint32_t g, uint32_t chunk) { return scratch.chunk_sums.data() + (size_t(g) * p.n_chunks + chunk) * n_q; };

    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        const AttentionItem it = run.item(g, 0, chunk);
        const ItemBuffers B = buffers(g, chunk, ith);
        v.load_queries(it, k, B.q);
        run.scores(it, B, stats(g, chunk));
    });
    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        float max[kMaxItemQueries];
        for (uint32_t i = 0; i < n_q; ++i) {
            max[i] = -INFINITY;
            for (uint32_t c = 0; c < p.n_chunks; ++c) max[i] = std::max(max[i], stats(g, c)[i]);
        }
        run.exps(run.item(g, 0, chunk), buffers(g, chunk, ith), max, sums(g, chunk));
    });
    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        double sum[kMaxItemQueries];
        for (uint32_t i = 0; i < n_q; ++i) {
            sum[i] = 0.0;
            for (uint32_t c = 0; c < p.n_chunks; ++c) sum[i] += sums(g, c)[i];
        }
        // Chunks own disjoint slots: their mass updates never race.
        run.values(run.item(g, 0, chunk), buffers(g, chunk, ith), sum, nullptr);
    });
    // Merge the chunks' partial outputs, in chunk order.
    std::vector<float> merged(size_t(n_q) * d);
    for (uint32_t g = 0; g < n_head_kv; ++g) {
        std::fill(merged.begin(), merged.end(), 0.0f);
        for (uint32_t c = 0; c < p.n_chunks; ++c) {
            const float * part = scratch.partial.data() + (size_t(g) * p.n_chunks + c) * n_q * d;
            for (size_t i = 0; i < merged.size(); ++i) merged[i] += part[i];
        }
        v.store(run.item(g, 0, 0), merged.data());
    }
}

}  // namespace lr::cpu
