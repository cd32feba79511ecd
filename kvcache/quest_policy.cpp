#include "kvcache/quest_policy.h"

#include <algorithm>
#include <cmath>

#include "kvcache/kv_sequence.h"

namespace lr {
namespace {

class Quest final : public SelectionPolicy {
public:
    using SelectionPolicy::SelectionPolicy;
    // Views depend on the query at each decode step (a prompt reads every block).
    PolicyPlan plan(const PolicyUbatch & u) const override { return {.query_aware = u.n_tokens == 1}; }
    bool keeps_key_bounds() const override { return true; }
    PageReads page_reads(const LayerBlocks & layer, const BlockPool & pool, uint32_t n_seen, const float * q,
                         uint32_t n_head) const override;

private:
    const PageBounds page_bounds_ = best_page_bounds();  // the fastest this CPU runs
};

PageReads Quest::page_reads(const LayerBlocks & layer, const BlockPool & pool, uint32_t n_seen, const float * q, uint32_t n_head) const {
    const KvSettings & k = settings_;
    const uint32_t bt = shape_.block_tokens, d = shape_.head_dim, n_kv = shape_.n_head_kv;
    const uint32_t page = k.quest_page_tokens(), per_block = bt / page;
    const uint32_t used = layer.slots_used;
    const uint32_t n_pages = (used + page - 1) / page;  // pages with a written slot
    const uint32_t write_page = used / page;            // the new token's (n_pages when it starts one)
    // The budget counts every page a head reads, the new token's included.
    const uint32_t budget = k.quest_pages > 0 ? k.quest_pages : std::max(1u, uint32_t(std::ceil(k.keep_ratio * double(n_seen) / page)));
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
            const BlockMeta & m = pool.meta(layer.ids[p / per_block]);
            const size_t at = (size_t(p % per_block) * n_kv + g) * d;
            bounds.resize(bounds.size() + group, INFINITY);
            if (!m.key_min.empty())
                page_bounds_(q_pos.data(), q_neg.data(), group, &m.key_min[at], &m.key_max[at], d, &bounds[bounds.size() - group]);
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
    PageReads out;
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

}  // namespace

std::unique_ptr<SelectionPolicy> make_quest_policy(const KvSettings & settings, const KvBlockShape & shape) {
    return std::make_unique<Quest>(settings, shape);
}

}  // namespace lr
