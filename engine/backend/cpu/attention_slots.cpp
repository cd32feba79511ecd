#include "engine/backend/cpu/attention_slots.h"

#include <algorithm>
#include <cstring>

#include "engine/common/assert.h"

namespace lr::cpu {

AttentionSlots::AttentionSlots(const AttentionArgs & a, std::vector<int32_t> & masked_pos)
    : a_(a), view_(*a.view), d_(view_.shape.head_dim), bt_(view_.shape.block_tokens), n_blocks_(view_.n_blocks()),
      n_head_kv_(uint32_t(a.params.n_head_kv)), group_(a.params.n_head / a.params.n_head_kv), masked_pos_(masked_pos) {
    LR_ASSERT(a.params.n_head % a.params.n_head_kv == 0 && n_head_kv_ == view_.shape.n_head_kv);
    LR_ASSERT(uint32_t(a.params.head_dim) == d_);
    for (const KvBlockRef & b : view_.blocks) {
        f16_k_ = f16_k_ && b.k_codec == KvCodec::f16;
        f16_v_ = f16_v_ && b.v_codec == KvCodec::f16;
    }
    // Slots a head does not read (quest) are, for it, empty: one masked copy of the
    // positions, so that every step of the drivers sees them so.
    if (view_.read_pages.empty()) return;
    masked_pos.resize(n_slots() * n_head_kv_);
    for (uint32_t b = 0; b < n_blocks_; ++b) {
        const int32_t * pos = block_pos(b);
        for (uint32_t g = 0; g < n_head_kv_; ++g) {
            for (uint32_t sl = 0; sl < bt_; ++sl) {
                const size_t at = size_t(g) * bt_ + sl;
                masked_pos[size_t(b) * n_head_kv_ * bt_ + at] = view_.reads(b, g, sl) ? pos[at] : kInvalidPos;
            }
        }
    }
}

AttentionItem AttentionSlots::item(uint32_t g, int64_t tile, int64_t tile_tokens, uint32_t chunk, uint32_t blocks_per_chunk) const {
    return {g,
            tile * tile_tokens,
            std::min(a_.n_tokens, (tile + 1) * tile_tokens),
            chunk * blocks_per_chunk,
            std::min(n_blocks_, (chunk + 1) * blocks_per_chunk),
            chunk};
}

void AttentionSlots::load_queries(const AttentionItem & it, const AttentionKernels & k, float * q) const {
    for (int64_t t = it.t0; t < it.t1; ++t) {
        for (int32_t hq = 0; hq < group_; ++hq) {
            const float * src = a_.q + (t * a_.params.n_head + int64_t(it.g) * group_ + hq) * d_;
            k.copy(src, q + (size_t(t - it.t0) * group_ + hq) * d_, d_, f16_k_);
        }
    }
}

void AttentionSlots::store(const AttentionItem & it, const float * rows) const {
    for (int64_t t = it.t0; t < it.t1; ++t) {
        for (int32_t hq = 0; hq < group_; ++hq) {
            const size_t i = size_t(t - it.t0) * group_ + hq;
            std::memcpy(a_.out + (t * a_.params.n_head + int64_t(it.g) * group_ + hq) * d_, rows + i * d_, d_ * sizeof(float));
        }
    }
}

const int32_t * AttentionSlots::block_pos(uint32_t b) const {
    const KvBlockLayout L = view_.layout(b);
    return reinterpret_cast<const int32_t *>(view_.blocks[b].data + L.pos_offset()) + L.pos_index(0, 0);
}

int32_t AttentionSlots::min_pos(const AttentionItem & it) const {
    int32_t m = INT32_MAX;
    for (int64_t t = it.t0; t < it.t1; ++t) m = std::min(m, a_.pos[t]);
    return m;
}

int32_t AttentionSlots::max_pos(const AttentionItem & it) const {
    int32_t m = INT32_MIN;
    for (int64_t t = it.t0; t < it.t1; ++t) m = std::max(m, a_.pos[t]);
    return m;
}

// A position at most the latest query's and within the window of the earliest one.
bool AttentionSlots::block_visible(uint32_t b, uint32_t g, const AttentionItem & it) const {
    const int32_t * pos = head_pos(b, g);
    const int32_t lo = min_pos(it), hi = max_pos(it);
    for (uint32_t s = 0; s < bt_; ++s) {
        if (pos[s] == kInvalidPos || pos[s] > hi) continue;
        if (a_.params.window <= 0 || int64_t(pos[s]) + a_.params.window > lo) return true;
    }
    return false;
}

bool AttentionSlots::fully_visible(const int32_t * slot_pos, const AttentionItem & it) const {
    // Seen by every query: written, not after the earliest query, within the latest's
    // window (what masked() for the earliest or the latest comes to). One pass without
    // branches, which the compiler vectorizes.
    const int32_t lo = min_pos(it), hi = max_pos(it);
    const int64_t window = a_.params.window;
    bool all = true;
    for (uint32_t s = 0; s < bt_; ++s) {
        const int32_t p = slot_pos[s];
        all &= p != kInvalidPos && p <= lo && (window <= 0 || int64_t(hi) - p < window);
    }
    return all;
}

void AttentionSlots::decode_keys(uint32_t b, uint32_t g, const AttentionKernels & k, float * rows) const {
    const KvBlockLayout L = view_.layout(b);
    const size_t row_bytes = L.k_row_bytes();
    const uint8_t * first = view_.blocks[b].data + L.k_row_offset(g, 0);
    for_slot_runs(b, g, [&](uint32_t s, uint32_t e) {
        k.decode_rows(L.k_codec, first + s * row_bytes, row_bytes, e - s, d_, rows + size_t(s) * d_);
    });
}

void AttentionSlots::add_weighted_values(uint32_t b, uint32_t g, const AttentionKernels & k, const float * w, size_t w_stride, uint32_t n_q,
                                         float * acc, float * rows) const {
    const KvBlockLayout L = view_.layout(b);
    const size_t row_bytes = L.v_row_bytes();
    const uint8_t * first = view_.blocks[b].data + L.v_row_offset(g, 0);
    // A q8 row widens at three instructions per 8 values, once per 4 queries in place: for
    // more than two such passes (prefill tiles) decoding the rows once is cheaper.
    const bool in_place = L.v_codec == KvCodec::f32 || L.v_codec == KvCodec::f16 || (L.v_codec == KvCodec::q8 && n_q <= kQ8InPlaceQueries);
    for_slot_runs(b, g, [&](uint32_t s, uint32_t e) {
        const uint8_t * run = first + s * row_bytes;
        if (in_place) return k.weighted_sum(run, L.v_codec, row_bytes, e - s, w + s, w_stride, n_q, d_, acc);
        k.decode_rows(L.v_codec, run, row_bytes, e - s, d_, rows);
        k.weighted_sum(rows, KvCodec::f32, d_ * sizeof(float), e - s, w + s, w_stride, n_q, d_, acc);
    });
}

void AttentionSlots::add_tile_mass(ThreadPool & pool, const std::vector<float> & tile_mass, int64_t n_tiles) const {
    const size_t n = n_slots();
    pool.run(n_head_kv_, [&](int64_t g, int) {
        for (size_t s = 0; s < n; ++s) {
            float total = 0.0f;
            for (int64_t t = 0; t < n_tiles; ++t) total += tile_mass[(size_t(g) * size_t(n_tiles) + size_t(t)) * n + s];
            if (total != 0.0f) mass_at(s, uint32_t(g)) += total;
        }
    });
}

void AttentionSlots::prefetch_rows(uint32_t b, uint32_t g, bool values) const {
    const KvBlockLayout L = view_.layout(b);
    const uint8_t * first = view_.blocks[b].data + (values ? L.v_row_offset(g, 0) : L.k_row_offset(g, 0));
    const size_t bytes = (values ? L.v_row_bytes() : L.k_row_bytes()) * bt_;
    for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(first + at, 0, 2);  // prefetcht1
}

}  // namespace lr::cpu
