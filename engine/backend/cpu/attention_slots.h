#pragma once
// What both CPU attention drivers (attention_fused.cpp, attention_flash.cpp) ask of a
// view: which slots of a block a KV head reads and which of them a query sees, the items
// the work is cut into, and the queries in and out.
//
// An item is one KV head g, a tile of query tokens [t0, t1) and a chunk [b0, b1) of the
// view's blocks. Its queries are the tile's tokens times the query heads of g (GQA),
// numbered qi = (t - t0) * group + hq.

#include <cstdint>
#include <vector>

#include "engine/backend/cpu/attention.h"

namespace lr::cpu {

// The most queries one item holds (tile tokens x group).
inline constexpr uint32_t kMaxItemQueries = 256;
// The most queries whose weighted sum reads q8 V rows in place (docs/BENCHMARKS.md).
inline constexpr uint32_t kQ8InPlaceQueries = 8;

struct AttentionItem {
    uint32_t g;
    int64_t t0, t1;
    uint32_t b0, b1;
    uint32_t chunk;
    uint32_t n_tokens() const { return uint32_t(t1 - t0); }
};

class AttentionSlots {
public:
    // masked_pos: scratch kept between calls, for the positions under page masks (quest).
    AttentionSlots(const AttentionArgs & a, std::vector<int32_t> & masked_pos);

    const AttentionArgs & args() const { return a_; }
    const PagedKvView & view() const { return view_; }
    uint32_t d() const { return d_; }
    uint32_t bt() const { return bt_; }
    uint32_t n_blocks() const { return n_blocks_; }
    uint32_t n_head_kv() const { return n_head_kv_; }
    int32_t group() const { return group_; }
    size_t n_slots() const { return size_t(n_blocks_) * bt_; }
    bool f16_k() const { return f16_k_; }  // every block's K is f16 (the queries are rounded to f16)
    bool f16_v() const { return f16_v_; }

    // The item of KV head g, query tile `tile` of tile_tokens tokens, and chunk `chunk` of
    // blocks_per_chunk blocks.
    AttentionItem item(uint32_t g, int64_t tile, int64_t tile_tokens, uint32_t chunk, uint32_t blocks_per_chunk) const;

    // The item's queries, q[qi][0..d), rounded to f16 for an all-f16 K (as llama.cpp's f16
    // products round them).
    void load_queries(const AttentionItem & it, const AttentionKernels & k, float * q) const;
    // out[t][h] = rows[qi] for the item's queries.
    void store(const AttentionItem & it, const float * rows) const;

    // The positions of head g's slots in block b, kInvalidPos where empty or not read.
    const int32_t * head_pos(uint32_t b, uint32_t g) const {
        const size_t at = (size_t(b) * n_head_kv_ + g) * bt_;
        return view_.read_pages.empty() ? block_pos(b) + size_t(g) * bt_ : masked_pos_.data() + at;
    }
    // Whether a query at q_pos does not see a key at slot_pos: empty, later, or (sliding
    // window) too old.
    bool masked(int32_t slot_pos, int32_t q_pos) const {
        return slot_pos == kInvalidPos || slot_pos > q_pos || (a_.params.window > 0 && int64_t(q_pos) - slot_pos >= a_.params.window);
    }
    // Whether any slot of block b (head g) may be visible to a query of the item.
    bool block_visible(uint32_t b, uint32_t g, const AttentionItem & it) const;
    // Whether every slot of a block's head is written and visible to every query of the item.
    bool fully_visible(const int32_t * slot_pos, const AttentionItem & it) const;
    // The sink logit of query qi of an item (-inf without sinks).
    float sink(const AttentionItem & it, uint32_t qi) const {
        return sink_logit(a_.params, int64_t(it.g) * group_ + qi % uint32_t(group_));
    }

    // Calls f(s, e) for each run [s, e) of head g's slots in block b that hold a position
    // (written and, under quest, read): the only rows the drivers decode.
    template <class F>
    void for_slot_runs(uint32_t b, uint32_t g, F && f) const {
        const int32_t * pos = head_pos(b, g);
        uint32_t s = 0;
        while (s < bt_) {
            if (pos[s] == kInvalidPos) {
                ++s;
                continue;
            }
            uint32_t e = s + 1;
            while (e < bt_ && pos[e] != kInvalidPos) ++e;
            f(s, e);
            s = e;
        }
    }
    // Decodes the K rows of block b for head g that hold a position into rows[s] (the others
    // are left as they were).
    void decode_keys(uint32_t b, uint32_t g, const AttentionKernels & k, float * rows) const;
    // acc[i] += w[i * w_stride + s] * V row s of block b for head g, for i < n_q and the slots
    // s that hold a position, in order. f32 and f16 rows are read in place, q8 rows too for
    // at most kQ8InPlaceQueries queries; the others are decoded into rows [bt][d] first (the
    // same bits).
    void add_weighted_values(uint32_t b, uint32_t g, const AttentionKernels & k, const float * w, size_t w_stride, uint32_t n_q,
                             float * acc, float * rows) const;
    // Asks L2 for head g's K or V rows of block b: one head's rows of a block are a page or
    // so, apart from the next block's, and the hardware prefetchers start over at every
    // page; a long view's rows come from DRAM. Into L2, not L1: with a block's burst of 128
    // prefetches into L1, decode at 16K slots was 25-30 % slower (bench_cpu_kernels),
    // presumably held on L1's few miss buffers.
    void prefetch_rows(uint32_t b, uint32_t g, bool values) const;

    // The attention mass of view.attn_mass for slot (block, head g, s).
    float & mass_at(size_t slot, uint32_t g) const { return view_.attn_mass[(slot / bt_ * n_head_kv_ + g) * bt_ + slot % bt_]; }
    // Adds tile_mass [n_head_kv][n_tiles][n_slots] (each query tile's mass, summed apart) to
    // the view's, the tiles in order: the result does not depend on which thread ran what.
    void add_tile_mass(ThreadPool & pool, const std::vector<float> & tile_mass, int64_t n_tiles) const;

private:
    const int32_t * block_pos(uint32_t b) const;
    int32_t min_pos(const AttentionItem & it) const;
    int32_t max_pos(const AttentionItem & it) const;

    const AttentionArgs & a_;
    const PagedKvView & view_;
    uint32_t d_, bt_, n_blocks_, n_head_kv_;
    int32_t group_;
    bool f16_k_ = true, f16_v_ = true;
    const std::vector<int32_t> & masked_pos_;
};

}  // namespace lr::cpu
