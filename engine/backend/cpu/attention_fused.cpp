// The fused attention driver (attention.h) and its scalar kernels.
//
// An item is one KV head g, a tile of query tokens and a chunk of the view's blocks. Its
// queries are the tile's tokens times the query heads of g (GQA), numbered
// qi = (t - t0) * group + hq. Three steps, per item:
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
#include <cstring>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/assert.h"
#include "engine/common/fp16.h"

namespace lr::cpu {
namespace {

// ---- scalar kernels ----------------------------------------------------------------------------

void copy_scalar(const float * src, float * dst, uint32_t n, bool to_f16) {
    for (uint32_t i = 0; i < n; ++i) dst[i] = to_f16 ? fp16_to_fp32(fp32_to_fp16(src[i])) : src[i];
}

void decode_rows_scalar(KvCodec codec, const uint8_t * rows, size_t row_bytes, uint32_t n, uint32_t d, float * dst) {
    for (uint32_t s = 0; s < n; ++s) kv_decode_row(codec, rows + s * row_bytes, dst + size_t(s) * d, d);
}

void scores_scalar(const void * k, KvCodec k_codec, size_t k_row_bytes, uint32_t n_k, const float * q, uint32_t n_q, uint32_t d, bool gemm,
                   bool f64_tail, float scale, float * scores, size_t stride) {
    const DotOrder order = gemm ? DotOrder::gemm : DotOrder::gemv;
    const auto dot = f64_tail ? dot_f16_as_f32 : dot_f32;
    std::vector<float> row(d);
    for (uint32_t s = 0; s < n_k; ++s) {
        kv_decode_row(k_codec, static_cast<const uint8_t *>(k) + s * k_row_bytes, row.data(), d);
        for (uint32_t i = 0; i < n_q; ++i) scores[i * stride + s] = dot(d, q + size_t(i) * d, row.data(), order) * scale;
    }
}

float max_scalar(const float * x, uint32_t n) {
    float m = -INFINITY;
    for (uint32_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    return m;
}

double exp_sum_scalar(float * x, uint32_t n, float max) {
    double sum = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = x[i] == -INFINITY ? 0.0f : std::exp(x[i] - max);
        sum += x[i];
    }
    return sum;
}

void normalize_scalar(float * x, uint32_t n, float inv_sum, bool round_f16, float * mass) {
    for (uint32_t i = 0; i < n; ++i) {
        const float w = x[i] * inv_sum;
        if (mass && w != 0.0f) mass[i] += w;
        x[i] = round_f16 ? fp16_to_fp32(fp32_to_fp16(w)) : w;
    }
}

void weighted_sum_scalar(const float * v, uint32_t n, const float * w, size_t w_stride, uint32_t n_q, uint32_t d, float * acc) {
    for (uint32_t i = 0; i < n_q; ++i) {
        float * a = acc + size_t(i) * d;
        for (uint32_t s = 0; s < n; ++s) {
            const float ws = w[i * w_stride + s];
            for (uint32_t j = 0; j < d; ++j) a[j] = std::fma(ws, v[size_t(s) * d + j], a[j]);
        }
    }
}

// ---- the plan of one call ------------------------------------------------------------------------

struct Plan {
    uint32_t d = 0, bt = 0, n_blocks = 0, n_head_kv = 0;
    int32_t group = 0;
    size_t n_slots = 0;
    bool f16_k = true, f16_v = true;
    bool gemm = false;
    int64_t tile_tokens = 0, n_tiles = 0;
    uint32_t n_chunks = 1, blocks_per_chunk = 0;
    uint32_t max_q = 0;  // queries of the largest tile
};

constexpr uint32_t kDecodeItems = 8;
constexpr uint32_t kMaxQueries = 256;  // queries of one item: tile tokens x group

Plan make_plan(const AttentionArgs & a) {
    const PagedKvView & view = *a.view;
    Plan p;
    p.d = view.shape.head_dim;
    p.bt = view.shape.block_tokens;
    p.n_blocks = view.n_blocks();
    p.n_head_kv = uint32_t(a.params.n_head_kv);
    p.group = a.params.n_head / a.params.n_head_kv;
    p.n_slots = size_t(p.n_blocks) * p.bt;
    for (const KvBlockRef & b : view.blocks) {
        p.f16_k = p.f16_k && b.k_codec == KvCodec::f16;
        p.f16_v = p.f16_v && b.v_codec == KvCodec::f16;
    }
    p.gemm = dot_order(a.n_tokens, p.d) == DotOrder::gemm;
    const bool decode = a.n_tokens <= 4;
    // About 32 queries per item: enough to reuse each decoded block, small score rows.
    p.tile_tokens = decode ? a.n_tokens : std::max<int64_t>(1, 32 / p.group);
    p.n_tiles = (a.n_tokens + p.tile_tokens - 1) / p.tile_tokens;
    // Decode: at least kDecodeItems items for the threads to share. NOTE: from the shape
    // only, never from the thread count, so that the sums (and the logits) are the same
    // bits on every machine.
    if (decode && p.n_head_kv < kDecodeItems) {
        const uint32_t wanted = (kDecodeItems + p.n_head_kv - 1) / p.n_head_kv;
        p.n_chunks = std::max(1u, std::min(wanted, p.n_blocks / 4));
    }
    p.blocks_per_chunk = (p.n_blocks + p.n_chunks - 1) / p.n_chunks;
    p.max_q = uint32_t(p.tile_tokens) * uint32_t(p.group);
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

size_t per_thread_floats(const Plan & p, bool own_scores) {
    size_t n = size_t(p.max_q) * p.d * 2 + size_t(p.bt) * p.d + 64;
    if (own_scores) n += size_t(p.max_q) * p.n_slots;
    return n;
}

class Runner {
public:
    Runner(const AttentionKernels & k, const AttentionArgs & a, const Plan & p, AttentionScratch & s)
        : k_(k), a_(a), view_(*a.view), p_(p), s_(s) {
        // Slots a head does not read (quest) are, for it, empty: one masked copy of the
        // positions, so that every step below sees them so.
        if (view_.read_pages.empty()) return;
        s_.masked_pos.resize(size_t(p_.n_blocks) * p_.n_head_kv * p_.bt);
        for (uint32_t b = 0; b < p_.n_blocks; ++b) {
            const int32_t * pos = block_pos(b);
            for (uint32_t g = 0; g < p_.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < p_.bt; ++sl) {
                    const size_t at = size_t(g) * p_.bt + sl;
                    s_.masked_pos[size_t(b) * p_.n_head_kv * p_.bt + at] = view_.reads(b, g, sl) ? pos[at] : kInvalidPos;
                }
            }
        }
    }

    struct Item {
        uint32_t g;
        int64_t t0, t1;
        uint32_t b0, b1;
        uint32_t chunk;
        uint32_t n_q() const { return uint32_t(t1 - t0); }
    };

    Item item(uint32_t g, int64_t tile, uint32_t chunk) const {
        Item it{g,
                tile * p_.tile_tokens,
                std::min(a_.n_tokens, (tile + 1) * p_.tile_tokens),
                chunk * p_.blocks_per_chunk,
                std::min(p_.n_blocks, (chunk + 1) * p_.blocks_per_chunk),
                chunk};
        return it;
    }

    void load_queries(const Item & it, float * q) const {
        const uint32_t d = p_.d;
        for (int64_t t = it.t0; t < it.t1; ++t) {
            for (int32_t hq = 0; hq < p_.group; ++hq) {
                const float * src = a_.q + (t * a_.params.n_head + int64_t(it.g) * p_.group + hq) * d;
                float * dst = q + (size_t(t - it.t0) * p_.group + hq) * d;
                k_.copy(src, dst, d, p_.f16_k);
            }
        }
    }

    const int32_t * block_pos(uint32_t b) const {
        const KvBlockLayout L = view_.layout(b);
        return reinterpret_cast<const int32_t *>(view_.blocks[b].data + L.pos_offset()) + L.pos_index(0, 0);
    }

    // The positions of head g's slots in block b, kInvalidPos where empty or not read.
    const int32_t * head_pos(uint32_t b, uint32_t g) const {
        const size_t at = (size_t(b) * p_.n_head_kv + g) * p_.bt;
        return view_.read_pages.empty() ? block_pos(b) + size_t(g) * p_.bt : s_.masked_pos.data() + at;
    }

    // Whether a query at q_pos does not see a key at slot_pos: empty, later, or (sliding
    // window) too old.
    bool masked(int32_t slot_pos, int32_t q_pos) const {
        return slot_pos == kInvalidPos || slot_pos > q_pos || (a_.params.window > 0 && int64_t(q_pos) - slot_pos >= a_.params.window);
    }

    // Whether any slot of block b (head g) may be visible to a query of the item: a
    // position at most the latest query's and within the window of the earliest one.
    bool block_visible(uint32_t b, uint32_t g, const Item & it) const {
        const int32_t * pos = head_pos(b, g);
        const int32_t lo = min_pos(it), hi = max_pos(it);
        for (uint32_t s = 0; s < p_.bt; ++s) {
            if (pos[s] == kInvalidPos || pos[s] > hi) continue;
            if (a_.params.window <= 0 || int64_t(pos[s]) + a_.params.window > lo) return true;
        }
        return false;
    }

    int32_t min_pos(const Item & it) const {
        int32_t m = INT32_MAX;
        for (int64_t t = it.t0; t < it.t1; ++t) m = std::min(m, a_.pos[t]);
        return m;
    }

    // Whether every slot of a block's head is written and visible to every query of the item.
    bool fully_visible(const int32_t * slot_pos, const Item & it) const {
        const int32_t lo = min_pos(it), hi = max_pos(it);
        for (uint32_t s = 0; s < p_.bt; ++s) {
            if (masked(slot_pos[s], lo) || masked(slot_pos[s], hi)) return false;
        }
        return true;
    }

    int32_t max_pos(const Item & it) const {
        int32_t m = INT32_MIN;
        for (int64_t t = it.t0; t < it.t1; ++t) m = std::max(m, a_.pos[t]);
        return m;
    }

    // Calls f(s, e) for each run [s, e) of head g's slots in block b that hold a position
    // (written and, under quest, read): the only rows the steps below touch.
    template <class F>
    void for_slot_runs(uint32_t b, uint32_t g, F && f) const {
        const int32_t * pos = head_pos(b, g);
        uint32_t s = 0;
        while (s < p_.bt) {
            if (pos[s] == kInvalidPos) {
                ++s;
                continue;
            }
            uint32_t e = s + 1;
            while (e < p_.bt && pos[e] != kInvalidPos) ++e;
            f(s, e);
            s = e;
        }
    }

    // Decodes the K or V rows of block b for head g that hold a position (the others are
    // left as they were: never read).
    void decode_block(uint32_t b, uint32_t g, bool values, float * rows) const {
        const KvBlockLayout L = view_.layout(b);
        const KvCodec codec = values ? L.v_codec : L.k_codec;
        const size_t row_bytes = values ? L.v_row_bytes() : L.k_row_bytes();
        const uint8_t * first = view_.blocks[b].data + (values ? L.v_row_offset(g, 0) : L.k_row_offset(g, 0));
        for_slot_runs(b, g, [&](uint32_t s, uint32_t e) {
            k_.decode_rows(codec, first + s * row_bytes, row_bytes, e - s, p_.d, rows + size_t(s) * p_.d);
        });
    }

    // The sink logit of query i of an item (-inf without sinks).
    float sink(const Item & it, uint32_t i) const { return sink_logit(a_.params, int64_t(it.g) * p_.group + i % uint32_t(p_.group)); }

    // scores of the item's queries over its blocks; returns nothing, writes the local max
    // of each query to `max_out` [n_q]. The local max starts at the sink: every chunk's
    // does, and the max over chunks is the same.
    void scores(const Item & it, const ItemBuffers & B, float * max_out) const {
        const uint32_t n_q = it.n_q() * uint32_t(p_.group);
        for (uint32_t i = 0; i < n_q; ++i) max_out[i] = sink(it, i);
        for (uint32_t b = it.b0; b < it.b1; ++b) {
            float * sc = B.scores + size_t(b) * p_.bt;
            if (!block_visible(b, it.g, it)) continue;  // never read: see for_visible_runs
            // f32 and f16 rows are scored in place, the quantized codecs decoded first; only
            // slots with a position (the others are masked below): a quest head scores just
            // the pages it reads.
            const KvBlockLayout L = view_.layout(b);
            const bool in_place = L.k_codec == KvCodec::f32 || L.k_codec == KvCodec::f16;
            if (!in_place) decode_block(b, it.g, false, B.rows);
            const uint8_t * k = in_place ? view_.blocks[b].data + L.k_row_offset(it.g, 0) : reinterpret_cast<const uint8_t *>(B.rows);
            const KvCodec codec = in_place ? L.k_codec : KvCodec::f32;
            const size_t row_bytes = in_place ? L.k_row_bytes() : p_.d * sizeof(float);
            for_slot_runs(b, it.g, [&](uint32_t s, uint32_t e) {
                k_.scores(k + s * row_bytes, codec, row_bytes, e - s, B.q, n_q, p_.d, p_.gemm, p_.f16_k, a_.params.scale, sc + s, B.stride);
            });
            const int32_t * pos = head_pos(b, it.g);
            if (fully_visible(pos, it)) {
                for (uint32_t i = 0; i < n_q; ++i) max_out[i] = std::max(max_out[i], k_.max(sc + i * B.stride, p_.bt));
                continue;
            }
            for (int64_t t = it.t0; t < it.t1; ++t) {
                for (int32_t hq = 0; hq < p_.group; ++hq) {
                    const uint32_t i = uint32_t(t - it.t0) * uint32_t(p_.group) + uint32_t(hq);
                    float * row = sc + i * B.stride;
                    float m = max_out[i];
                    for (uint32_t s = 0; s < p_.bt; ++s) {
                        if (masked(pos[s], a_.pos[t])) {
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
    void for_visible_runs(const Item & it, F && f) const {
        uint32_t b = it.b0;
        while (b < it.b1) {
            if (!block_visible(b, it.g, it)) {
                ++b;
                continue;
            }
            uint32_t e = b + 1;
            while (e < it.b1 && block_visible(e, it.g, it)) ++e;
            f(b, e);
            b = e;
        }
    }

    // exp(score - max[i]) over the item's visible slots; writes each query's sum to sum_out,
    // with the sink's term in the first chunk's.
    void exps(const Item & it, const ItemBuffers & B, const float * max, double * sum_out) const {
        const uint32_t n_q = it.n_q() * uint32_t(p_.group);
        for (uint32_t i = 0; i < n_q; ++i) sum_out[i] = 0.0;
        for_visible_runs(it, [&](uint32_t b0, uint32_t b1) {
            const size_t first = size_t(b0) * p_.bt, n = size_t(b1 - b0) * p_.bt;
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
        for (uint32_t i = 0; i < n_q; ++i) sum_out[i] += sink_exp(sink(it, i), max[i]);
    }

    // Normalizes, adds the mass (to the view's attn_mass when `mass` is null and it is
    // collected, else to mass[slot]), rounds, and accumulates V into B.acc (zeroed here).
    void values(const Item & it, const ItemBuffers & B, const double * sum, float * mass) const {
        float * const view_mass = view_.attn_mass;
        const uint32_t n_q = it.n_q() * uint32_t(p_.group);
        const uint32_t d = p_.d, bt = p_.bt;
        float inv_sum[kMaxQueries];
        for (uint32_t i = 0; i < n_q; ++i) inv_sum[i] = sum[i] > 0 ? float(1.0 / sum[i]) : 0.0f;
        std::fill_n(B.acc, size_t(n_q) * d, 0.0f);
        for_visible_runs(it, [&](uint32_t b0, uint32_t b1) {
            const size_t first = size_t(b0) * bt, n = size_t(b1 - b0) * bt;
            for (uint32_t i = 0; i < n_q; ++i) {
                float * row = B.scores + i * B.stride + first;
                if (mass) {
                    k_.normalize(row, uint32_t(n), inv_sum[i], p_.f16_v, mass + first);
                } else {
                    // The view's mass is laid out per block: normalize block by block.
                    for (uint32_t b = b0; b < b1; ++b) {
                        const size_t at = size_t(b - b0) * bt;
                        k_.normalize(row + at, bt, inv_sum[i], p_.f16_v, view_mass ? &mass_at(first + at, it.g) : nullptr);
                    }
                }
            }
            // Slots in order, skipping those without a position (their weight is zero).
            for (uint32_t b = b0; b < b1; ++b) {
                decode_block(b, it.g, true, B.rows);
                for_slot_runs(b, it.g, [&](uint32_t s, uint32_t e) {
                    k_.weighted_sum(B.rows + size_t(s) * d, e - s, B.scores + size_t(b) * bt + s, B.stride, n_q, d, B.acc);
                });
            }
        });
    }

    // out[t][h] = acc rows of the item.
    void store(const Item & it, const float * acc) const {
        for (int64_t t = it.t0; t < it.t1; ++t) {
            for (int32_t hq = 0; hq < p_.group; ++hq) {
                const size_t i = size_t(t - it.t0) * p_.group + hq;
                std::memcpy(a_.out + (t * a_.params.n_head + int64_t(it.g) * p_.group + hq) * p_.d, acc + i * p_.d, p_.d * sizeof(float));
            }
        }
    }

    // The attention mass of view.attn_mass for slot (block, head g, s).
    float & mass_at(size_t slot, uint32_t g) const { return view_.attn_mass[(slot / p_.bt * p_.n_head_kv + g) * p_.bt + slot % p_.bt]; }

private:
    const AttentionKernels & k_;
    const AttentionArgs & a_;
    const PagedKvView & view_;
    const Plan & p_;
    AttentionScratch & s_;
};

}  // namespace

const AttentionKernels & scalar_attention_kernels() {
    static const AttentionKernels k{copy_scalar,    decode_rows_scalar, scores_scalar,      max_scalar,
                                    exp_sum_scalar, normalize_scalar,   weighted_sum_scalar};
    return k;
}

#if !defined(LONGREAD_HAVE_AVX2_KERNELS)
// Builds without the AVX2 translation units (non-x86): the name still links.
const AttentionKernels & avx2_attention_kernels() { return scalar_attention_kernels(); }
#endif

const AttentionKernels & attention_kernels(CpuIsa isa) {
#if defined(LONGREAD_HAVE_AVX2_KERNELS)
    if (runs_avx2(isa)) return avx2_attention_kernels();
#endif
    (void)isa;
    return scalar_attention_kernels();
}

void attention_fused(ThreadPool & pool, const AttentionKernels & k, const AttentionArgs & a, AttentionScratch & scratch) {
    const PagedKvView & view = *a.view;
    LR_ASSERT(a.params.n_head % a.params.n_head_kv == 0 && uint32_t(a.params.n_head_kv) == view.shape.n_head_kv);
    LR_ASSERT(uint32_t(a.params.head_dim) == view.shape.head_dim);
    if (a.n_tokens <= 0) return;
    const int n_threads = pool.n_threads();
    const Plan p = make_plan(a);
    LR_ASSERT(p.max_q <= kMaxQueries);
    Runner run(k, a, p, scratch);
    const uint32_t d = p.d;

    if (p.n_chunks == 1) {
        // Prefill, or decode with enough KV heads: one job, each item does every step.
        const bool mass = view.attn_mass != nullptr;
        // NOTE: with several query tiles, each tile's mass is summed apart and the tiles are
        // added in order afterwards, so the result does not depend on which thread ran what.
        const bool tiled_mass = mass && p.n_tiles > 1;
        if (tiled_mass) scratch.mass.assign(size_t(p.n_head_kv) * size_t(p.n_tiles) * p.n_slots, 0.0f);
        scratch.per_thread.resize(size_t(n_threads));
        const size_t floats = per_thread_floats(p, true);
        for (auto & buf : scratch.per_thread) {
            if (buf.size() < floats) buf.resize(floats);
        }
        pool.run(int64_t(p.n_head_kv) * p.n_tiles, [&](int64_t job, int ith) {
            const uint32_t g = uint32_t(job % p.n_head_kv);
            const int64_t tile = job / p.n_head_kv;
            const Runner::Item it = run.item(g, tile, 0);
            float * base = scratch.per_thread[size_t(ith)].data();
            ItemBuffers B{};
            B.q = base;
            B.acc = B.q + size_t(p.max_q) * d;
            B.rows = B.acc + size_t(p.max_q) * d;
            B.scores = B.rows + size_t(p.bt) * d;
            B.stride = p.n_slots;
            run.load_queries(it, B.q);
            float max[kMaxQueries];
            double sum[kMaxQueries];
            run.scores(it, B, max);
            run.exps(it, B, max, sum);
            // One tile: this item owns head g's slots and adds to the view's mass directly.
            float * item_mass = tiled_mass ? scratch.mass.data() + (size_t(g) * size_t(p.n_tiles) + size_t(tile)) * p.n_slots : nullptr;
            run.values(it, B, sum, item_mass);
            run.store(it, B.acc);
        });
        if (tiled_mass) {
            pool.run(p.n_head_kv, [&](int64_t g, int) {
                for (size_t s = 0; s < p.n_slots; ++s) {
                    float total = 0.0f;
                    for (int64_t t = 0; t < p.n_tiles; ++t)
                        total += scratch.mass[(size_t(g) * size_t(p.n_tiles) + size_t(t)) * p.n_slots + s];
                    if (total != 0.0f) run.mass_at(s, uint32_t(g)) += total;
                }
            });
        }
        return;
    }

    // Decode over chunks of the sequence: three jobs, then the merge.
    const uint32_t n_q = p.max_q;
    const size_t n_items = size_t(p.n_head_kv) * p.n_chunks;
    scratch.scores.resize(size_t(p.n_head_kv) * n_q * p.n_slots);
    scratch.chunk_stats.resize(n_items * n_q);
    scratch.chunk_sums.resize(n_items * n_q);
    scratch.partial.resize(n_items * n_q * d);
    scratch.per_thread.resize(size_t(n_threads));
    const size_t floats = per_thread_floats(p, false);
    for (auto & buf : scratch.per_thread) {
        if (buf.size() < floats) buf.resize(floats);
    }
    auto buffers = [&](uint32_t g, uint32_t chunk, int ith) {
        float * base = scratch.per_thread[size_t(ith)].data();
        ItemBuffers B{};
        B.q = base;
        B.rows = base + size_t(n_q) * d;
        B.scores = scratch.scores.data() + size_t(g) * n_q * p.n_slots;
        B.stride = p.n_slots;
        B.acc = scratch.partial.data() + (size_t(g) * p.n_chunks + chunk) * n_q * d;
        return B;
    };
    auto stats = [&](uint32_t g, uint32_t chunk) { return scratch.chunk_stats.data() + (size_t(g) * p.n_chunks + chunk) * n_q; };
    auto sums = [&](uint32_t g, uint32_t chunk) { return scratch.chunk_sums.data() + (size_t(g) * p.n_chunks + chunk) * n_q; };

    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        const Runner::Item it = run.item(g, 0, chunk);
        const ItemBuffers B = buffers(g, chunk, ith);
        run.load_queries(it, B.q);
        run.scores(it, B, stats(g, chunk));
    });
    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        float max[kMaxQueries];
        for (uint32_t i = 0; i < n_q; ++i) {
            max[i] = -INFINITY;
            for (uint32_t c = 0; c < p.n_chunks; ++c) max[i] = std::max(max[i], stats(g, c)[i]);
        }
        run.exps(run.item(g, 0, chunk), buffers(g, chunk, ith), max, sums(g, chunk));
    });
    pool.run(int64_t(n_items), [&](int64_t job, int ith) {
        const uint32_t g = uint32_t(job / p.n_chunks), chunk = uint32_t(job % p.n_chunks);
        double sum[kMaxQueries];
        for (uint32_t i = 0; i < n_q; ++i) {
            sum[i] = 0.0;
            for (uint32_t c = 0; c < p.n_chunks; ++c) sum[i] += sums(g, c)[i];
        }
        // Chunks own disjoint slots: their mass updates never race.
        run.values(run.item(g, 0, chunk), buffers(g, chunk, ith), sum, nullptr);
    });
    // Merge the chunks' partial outputs, in chunk order.
    std::vector<float> merged(size_t(n_q) * d);
    for (uint32_t g = 0; g < p.n_head_kv; ++g) {
        std::fill(merged.begin(), merged.end(), 0.0f);
        for (uint32_t c = 0; c < p.n_chunks; ++c) {
            const float * part = scratch.partial.data() + (size_t(g) * p.n_chunks + c) * n_q * d;
            for (size_t i = 0; i < merged.size(); ++i) merged[i] += part[i];
        }
        run.store(run.item(g, 0, 0), merged.data());
    }
}

}  // namespace lr::cpu
