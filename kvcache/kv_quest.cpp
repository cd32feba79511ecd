// Quest: query-aware block selection. Nothing is dropped; for each decode step, a block's
// per-channel key bounds bound the score any of its keys can reach for the current query
// (sum over channels of max(q*min, q*max)), and attention reads only the blocks with the
// highest bound, plus the sinks and the recent window. The other blocks stay on whatever
// tier holds them, so long contexts run with a bounded device tier and bytes per token.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kvcache/kv_cache.h"

namespace lr {

std::vector<uint32_t> KvCache::quest_blocks(const Sequence & s, uint32_t il, const float * q, uint32_t n_head) const {
    const std::vector<BlockId> & layer = s.blocks[il];
    const uint32_t bt = block_shape_.block_tokens, d = block_shape_.head_dim;
    const uint32_t n_blocks = uint32_t(layer.size());
    const KvSettings & k = config_.settings;
    const uint32_t seen = s.n_committed + uint32_t(s.pending.size());
    const uint32_t budget_blocks = k.quest_blocks > 0 ? k.quest_blocks
                                                      : std::max(1u, uint32_t(k.keep_ratio * double(seen) / bt + 0.999));
    std::vector<uint8_t> take(n_blocks, 0);
    // Sinks and the recent window are always read.
    const uint32_t recent = uint32_t(k.recent_ratio * double(budget_blocks) * bt);
    for (uint32_t b = 0; b < n_blocks; ++b) {
        const BlockMeta & m = pool_.meta(layer[b]);
        for (int32_t p : m.pos) {
            if (p == kInvalidPos) continue;
            if (p < int32_t(k.sink_tokens) || p + int32_t(recent) >= s.next_pos) take[b] = 1;
        }
    }
    // The rest by their bound; blocks without bounds yet (restored from disk) are read.
    const uint32_t group = n_head / block_shape_.n_head_kv;
    std::vector<std::pair<float, uint32_t>> scored;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        if (take[b]) continue;
        const BlockMeta & m = pool_.meta(layer[b]);
        if (m.key_min.empty()) {
            scored.emplace_back(INFINITY, b);
            continue;
        }
        float best = -INFINITY;
        for (uint32_t h = 0; h < n_head; ++h) {
            const uint32_t g = h / group;
            const float * qh = q + size_t(h) * d;
            float bound = 0.0f;
            for (uint32_t c = 0; c < d; ++c) {
                const size_t at = size_t(g) * d + c;
                bound += std::max(qh[c] * m.key_min[at], qh[c] * m.key_max[at]);
            }
            best = std::max(best, bound);
        }
        scored.emplace_back(best, b);
    }
    const uint32_t already = uint32_t(std::count(take.begin(), take.end(), 1));
    const size_t extra = budget_blocks > already ? std::min<size_t>(budget_blocks - already, scored.size()) : 0;
    std::partial_sort(scored.begin(), scored.begin() + std::ptrdiff_t(extra), scored.end(),
                      [](const auto & a, const auto & b) { return a.first > b.first; });
    for (size_t i = 0; i < extra; ++i) take[scored[i].second] = 1;
    std::vector<uint32_t> chosen;
    for (uint32_t b = 0; b < n_blocks; ++b) {
        if (take[b]) chosen.push_back(b);
    }
    return chosen;
}

}  // namespace lr
