// Quest: query-aware page selection. Nothing is dropped; for each decode step, a page's
// per-channel key bounds bound the score any of its keys can reach for the current query
// (sum over channels of max(q*min, q*max)), and each KV head reads the sinks' page, the new
// token's page (the recent window) and the pages with the highest bound, all within the
// budget (at least the first two). As in the paper, no further share of the budget is
// reserved for recent tokens: the bounds pick them when they matter (measured in
// docs/BENCHMARKS.md). Pages are smaller than the KV blocks the tiers move, so a small budget
// still picks out what matters; the layer fetches the blocks any head reads, and the other
// blocks stay on whatever tier holds them, so long contexts run with a bounded device tier
// and bytes per token.
#include <algorithm>
#include <cmath>

#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "kvcache/kv_cache.h"

namespace lr {

void KvCache::widen_key_bounds(BlockMeta & m, const uint8_t * bytes, uint32_t slot, float * row) const {
    const uint32_t d = block_shape_.head_dim, n_kv = block_shape_.n_head_kv;
    const uint32_t page = config_.settings.quest_page_tokens();
    if (m.key_min.empty()) {
        m.key_min.assign(size_t(block_shape_.block_tokens / page) * n_kv * d, fp32_to_fp16(INFINITY));
        m.key_max.assign(m.key_min.size(), fp32_to_fp16(-INFINITY));
    }
    const KvBlockLayout L = layout_of(m);
    for (uint32_t g = 0; g < n_kv; ++g) {
        if (m.pos[L.pos_index(g, slot)] == kInvalidPos) continue;
        kv_decode_row(m.k_codec, bytes + L.k_row_offset(g, slot), row, d);
        uint16_t * lo = &m.key_min[(size_t(slot / page) * n_kv + g) * d];
        uint16_t * hi = &m.key_max[(size_t(slot / page) * n_kv + g) * d];
        for (uint32_t c = 0; c < d; ++c) {
            if (row[c] < fp16_to_fp32(lo[c])) lo[c] = fp16_round_down(row[c]);
            if (row[c] > fp16_to_fp32(hi[c])) hi[c] = fp16_round_up(row[c]);
        }
    }
}

Status KvCache::bound_restored_blocks(SeqId seq, uint32_t il) {
    Sequence & s = seqs_.at(seq);
    const uint32_t bt = block_shape_.block_tokens;
    std::vector<uint8_t> bytes;
    std::vector<float> row(block_shape_.head_dim);
    for (size_t b = 0; b < s.blocks[il].size() && b * bt < s.slots_used[il]; ++b) {
        const BlockId id = s.blocks[il][b];
        if (!pool_.meta(id).key_min.empty()) continue;
        // One block at a time, so that a device tier of a few blocks is enough.
        LR_RETURN_IF_ERROR(ensure_on_device(std::span(&id, 1), seq, il));
        BlockMeta & m = pool_.meta(id);
        m.pinned = false;
        LR_RETURN_IF_ERROR(read_block(m, bytes));
        const uint32_t end = std::min(bt, s.slots_used[il] - uint32_t(b) * bt);
        for (uint32_t slot = 0; slot < end; ++slot) widen_key_bounds(m, bytes.data(), slot, row.data());
    }
    return {};
}

KvCache::QuestReads KvCache::quest_reads(const Sequence & s, uint32_t il, const float * q, uint32_t n_head) const {
    const std::vector<BlockId> & layer = s.blocks[il];
    const KvSettings & k = config_.settings;
    const uint32_t bt = block_shape_.block_tokens, d = block_shape_.head_dim, n_kv = block_shape_.n_head_kv;
    const uint32_t page = k.quest_page_tokens(), per_block = bt / page;
    const uint32_t used = s.slots_used[il];
    const uint32_t n_pages = (used + page - 1) / page;  // pages with a written slot
    const uint32_t write_page = used / page;            // the new token's (n_pages when it starts one)
    const uint32_t seen = s.n_committed + uint32_t(s.pending.size());
    // The budget counts every page a head reads, the new token's included.
    const uint32_t budget = k.quest_pages > 0 ? k.quest_pages : std::max(1u, uint32_t(std::ceil(k.keep_ratio * double(seen) / page)));
    const uint32_t group = n_head / n_kv;

    // take[g][p]: head g reads page p.
    std::vector<uint8_t> take(size_t(n_kv) * n_pages, 0);
    std::vector<std::pair<float, uint32_t>> ranked;
    std::vector<std::vector<uint32_t>> best(group);
    std::vector<float> q_pos(size_t(group) * d), q_neg(size_t(group) * d), bounds;
    std::vector<uint32_t> candidates;
    for (uint32_t g = 0; g < n_kv; ++g) {
        uint8_t * mine = take.data() + size_t(g) * n_pages;
        uint32_t taken = 1;  // the write page
        auto read = [&](uint32_t p) {
            if (p < n_pages && p != write_page && !mine[p]) {
                mine[p] = 1;
                ++taken;
            }
        };
        for (uint32_t p = 0; p < n_pages && p * page < k.sink_tokens; ++p) read(p);
        // The rest by the bound. Quest ranks per query head: each query head of the group in
        // turn adds its next best page (a maximum over heads would let the heads with the
        // largest queries take every page).
        const uint32_t extra = budget - std::min(budget, taken);
        if (extra == 0) continue;
        // The bounds of every candidate page for each query head of the group: pages outer,
        // so that each page's bounds are read from memory once for the whole group.
        for (uint32_t hq = 0; hq < group; ++hq) {
            const float * qh = q + size_t(g * group + hq) * d;
            for (uint32_t c = 0; c < d; ++c) {
                q_pos[size_t(hq) * d + c] = std::max(qh[c], 0.0f);
                q_neg[size_t(hq) * d + c] = std::min(qh[c], 0.0f);
            }
        }
        candidates.clear();
        bounds.clear();
        for (uint32_t p = 0; p < n_pages; ++p) {
            if (mine[p] || p == write_page) continue;
            candidates.push_back(p);
            const BlockMeta & m = pool_.meta(layer[p / per_block]);
            const size_t at = (size_t(p % per_block) * n_kv + g) * d;
            bounds.resize(bounds.size() + group, INFINITY);
            if (!m.key_min.empty()) page_bounds_(q_pos.data(), q_neg.data(), group, &m.key_min[at], &m.key_max[at], d, &bounds[bounds.size() - group]);
        }
        for (uint32_t hq = 0; hq < group; ++hq) {
            ranked.clear();
            for (size_t i = 0; i < candidates.size(); ++i) ranked.emplace_back(bounds[i * group + hq], candidates[i]);
            const size_t n_best = std::min<size_t>(extra, ranked.size());
            std::partial_sort(ranked.begin(), ranked.begin() + std::ptrdiff_t(n_best), ranked.end(),
                              [](const auto & a, const auto & b) { return a.first > b.first; });
            best[hq].clear();
            for (size_t i = 0; i < n_best; ++i) best[hq].push_back(ranked[i].second);
        }
        for (size_t rank = 0; taken < budget && rank < extra; ++rank) {
            for (uint32_t hq = 0; hq < group && taken < budget; ++hq) {
                if (rank < best[hq].size()) read(best[hq][rank]);
            }
        }
    }

    // The blocks some head reads, with each head's pages as bits; the new token's page is
    // read by every head.
    QuestReads out;
    const uint32_t write_block = used / bt;
    for (uint32_t b = 0; b < layer.size(); ++b) {
        const size_t first = out.pages.size();
        out.pages.resize(first + n_kv, 0);
        bool any = b == write_block;
        for (uint32_t g = 0; g < n_kv; ++g) {
            uint32_t & bits = out.pages[first + g];
            for (uint32_t i = 0; i < per_block; ++i) {
                const uint32_t p = b * per_block + i;
                if (p == write_page || (p < n_pages && take[size_t(g) * n_pages + p])) bits |= 1u << i;
            }
            any = any || bits != 0;
        }
        if (any) {
            out.blocks.push_back(b);
        } else {
            out.pages.resize(first);
        }
    }
    return out;
}

}  // namespace lr
