// Quest: query-aware block selection. Nothing is dropped; for each decode step, a block's
// per-channel key bounds bound the score any of its keys can reach for the current query
// (sum over channels of max(q*min, q*max)), and attention reads the sinks' block, the
// recent window and the blocks with the highest bound, all within the budget (at least the
// sinks' block and the one the new token goes to). The other blocks stay on whatever tier
// holds them, so long contexts run with a bounded device tier and bytes per token.
#include <algorithm>
#include <cmath>

#include "kvcache/kv_cache.h"

namespace lr {

std::vector<uint32_t> KvCache::quest_blocks(const Sequence & s, uint32_t il, const float * q, uint32_t n_head) const {
    const std::vector<BlockId> & layer = s.blocks[il];
    const uint32_t bt = block_shape_.block_tokens, d = block_shape_.head_dim;
    const uint32_t n_blocks = uint32_t(layer.size());
    const KvSettings & k = config_.settings;
    const uint32_t seen = s.n_committed + uint32_t(s.pending.size());
    // The budget counts every block read: the one the new token goes to (read always, an
    // existing block or a new one), the sinks' and the recent ones included.
    const uint32_t budget_blocks = k.quest_blocks > 0 ? k.quest_blocks
                                                      : std::max(1u, uint32_t(std::ceil(k.keep_ratio * double(seen) / bt)));
    const uint32_t write_block = s.slots_used[il] / bt;
    std::vector<uint8_t> take(n_blocks, 0);
    uint32_t taken = 1;  // the write block
    auto read = [&](uint32_t b) {
        if (b < n_blocks && !take[b]) {
            take[b] = 1;
            if (b != write_block) ++taken;
        }
    };
    read(write_block);
    for (uint32_t b = 0; b < n_blocks && b * bt < k.sink_tokens; ++b) read(b);
    // The recent window: the blocks holding the last recent_ratio of the budget's tokens
    // (newest first), as far as the budget goes.
    const uint32_t recent_tokens = uint32_t(k.recent_ratio * double(budget_blocks) * bt);
    const uint32_t first_recent = s.slots_used[il] > recent_tokens ? (s.slots_used[il] - recent_tokens) / bt : 0;
    for (uint32_t b = std::min(write_block, n_blocks); b-- > first_recent && taken < budget_blocks;) read(b);
    // The rest of the budget by the bound, head by head: Quest ranks blocks per head, and
    // the layer reads their union, so each query head in turn gets its next best block (a
    // maximum over heads would let the heads with the largest queries take every block).
    // Blocks without bounds yet (restored from disk) come first.
    const uint32_t group = n_head / block_shape_.n_head_kv;
    std::vector<uint32_t> candidates;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        if (!take[b]) candidates.push_back(b);
    }
    const size_t extra = budget_blocks > taken ? std::min<size_t>(budget_blocks - taken, candidates.size()) : 0;
    if (extra > 0) {
        std::vector<std::vector<std::pair<float, uint32_t>>> ranked(n_head);
        for (uint32_t h = 0; h < n_head; ++h) {
            const uint32_t g = h / group;
            const float * qh = q + size_t(h) * d;
            for (uint32_t b : candidates) {
                const BlockMeta & m = pool_.meta(layer[b]);
                float bound = INFINITY;
                if (!m.key_min.empty()) {
                    bound = 0.0f;
                    for (uint32_t c = 0; c < d; ++c) {
                        const size_t at = size_t(g) * d + c;
                        bound += std::max(qh[c] * m.key_min[at], qh[c] * m.key_max[at]);
                    }
                }
                ranked[h].emplace_back(bound, b);
            }
            std::partial_sort(ranked[h].begin(), ranked[h].begin() + std::ptrdiff_t(extra), ranked[h].end(),
                              [](const auto & a, const auto & b) { return a.first > b.first; });
        }
        size_t added = 0;
        for (size_t rank = 0; rank < extra && added < extra; ++rank) {
            for (uint32_t h = 0; h < n_head && added < extra; ++h) {
                const uint32_t b = ranked[h][rank].second;
                if (!take[b]) {
                    take[b] = 1;
                    ++added;
                }
            }
        }
    }
    std::vector<uint32_t> chosen;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        if (take[b]) chosen.push_back(b);
    }
    return chosen;
}

}  // namespace lr
