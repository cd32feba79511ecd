#include "token_selection.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "engine/backend/kv_block_layout.h"

namespace lr {

void select_positions(std::span<const int32_t> positions, std::span<const float> scores, const SelectionParams & params,
                      std::vector<uint8_t> & keep) {
    const size_t n = positions.size();
    keep.assign(n, 0);
    std::vector<uint32_t> held;  // slots holding a position, oldest first
    held.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
        if (positions[i] != kInvalidPos) held.push_back(i);
    }
    // Slots hold positions in order (tokens are appended, compaction keeps the order), so
    // the sort is a check: selection runs per head, per layer, per decoded token.
    const auto by_position = [&](uint32_t a, uint32_t b) { return positions[a] < positions[b]; };
    if (!std::is_sorted(held.begin(), held.end(), by_position)) std::stable_sort(held.begin(), held.end(), by_position);
    if (held.size() <= params.budget) {
        for (uint32_t i : held) keep[i] = 1;
        return;
    }
    uint32_t left = params.budget;
    // Sinks: the first positions of the sequence.
    for (uint32_t i : held) {
        if (left == 0 || positions[i] >= int32_t(params.sinks)) break;
        keep[i] = 1;
        --left;
    }
    // The recent window.
    uint32_t recent = std::min(params.recent, left);
    for (auto it = held.rbegin(); it != held.rend() && recent > 0; ++it) {
        if (keep[*it]) continue;
        keep[*it] = 1;
        --recent;
        --left;
    }
    // The best of the rest; among equal scores the more recent position wins.
    std::vector<uint32_t> rest;
    for (uint32_t i : held) {
        if (!keep[i]) rest.push_back(i);
    }
    const size_t take = std::min<size_t>(left, rest.size());
    // A strict total order (positions are unique), so the set of the first `take` is exact
    // without ordering them: linear, not n log n.
    if (take < rest.size()) {
        std::nth_element(rest.begin(), rest.begin() + std::ptrdiff_t(take), rest.end(), [&](uint32_t a, uint32_t b) {
            return scores[a] != scores[b] ? scores[a] > scores[b] : positions[a] > positions[b];
        });
    }
    for (size_t k = 0; k < take; ++k) keep[rest[k]] = 1;
}

std::vector<float> max_pool_scores(std::span<const int32_t> positions, std::span<const float> scores, uint32_t kernel) {
    const size_t n = positions.size();
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < n; ++i) {
        if (positions[i] != kInvalidPos) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return positions[a] < positions[b]; });
    std::vector<float> pooled(scores.begin(), scores.end());
    const ptrdiff_t half = ptrdiff_t(kernel / 2);
    for (ptrdiff_t k = 0; k < ptrdiff_t(order.size()); ++k) {
        float m = scores[order[size_t(k)]];
        for (ptrdiff_t j = std::max<ptrdiff_t>(0, k - half); j <= std::min<ptrdiff_t>(ptrdiff_t(order.size()) - 1, k + half); ++j) {
            m = std::max(m, scores[order[size_t(j)]]);
        }
        pooled[order[size_t(k)]] = m;
    }
    return pooled;
}

std::vector<float> mean_attention_scores(std::span<const int32_t> positions, std::span<const float> mass, int32_t end,
                                         int32_t first_query) {
    std::vector<float> scores(mass.begin(), mass.end());
    for (size_t i = 0; i < positions.size(); ++i) {
        if (positions[i] != kInvalidPos) scores[i] /= float(std::max(1, end - std::max(positions[i], first_query)));
    }
    return scores;
}

std::vector<float> random_scores(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> s(n);
    for (float & x : s) x = float(rng() >> 40) / float(1 << 24);
    return s;
}

}  // namespace lr
