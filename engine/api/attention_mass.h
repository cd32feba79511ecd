#pragma once
// Where the model looks: the attention each position of a sequence received, per
// full-attention layer, as the KV cache recorded it while observing (KvCache::
// observe_attention), and which positions each layer still holds. The attention view and
// `eval-kv --attention-out` show it. Plain value.
//
// mass[l][p] sums the softmax weight position p got from every recorded query and query
// head of layer layers[l]: each query and head gives 1 in all (over the positions it
// could see), so the mass of a layer sums to the recorded queries times the query heads.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lr {

struct AttentionMass {
    uint32_t n_positions = 0;       // positions 0 .. n_positions - 1 (the sequence's tokens)
    uint32_t n_query_heads = 0;     // per layer
    uint64_t n_queries = 0;         // queries recorded (tokens evaluated while observing)
    std::vector<uint32_t> layers;   // the full-attention layers, in order
    std::vector<float> mass;        // [layers.size()][n_positions] attention received
    std::vector<float> held;        // [layers.size()][n_positions] share of the layer's KV heads holding it (0: evicted)
    std::vector<uint32_t> queries;  // [n_positions] recorded queries that came at or after the position

    bool empty() const { return layers.empty() || n_positions == 0; }
    float mass_at(size_t l, size_t p) const { return mass[l * n_positions + p]; }
    float held_at(size_t l, size_t p) const { return held[l * n_positions + p]; }
    // The mean weight one query head gave position p in layer l, over the recorded queries
    // that could see it (0 when none): in [0, 1], comparable across positions.
    float mean_at(size_t l, size_t p) const {
        const double n = double(queries[p]) * n_query_heads;
        return n > 0 ? float(mass_at(l, p) / n) : 0.0f;
    }
};

// One bin of consecutive positions of a layer, for heat maps.
struct AttentionBin {
    float mean = 0;  // the mean of mean_at over its positions
    float held = 0;  // the mean share of the layer's KV heads holding them
};

// Layer l's positions in n_bins bins of consecutive positions (a position spans several
// bins when there are fewer positions than bins).
inline std::vector<AttentionBin> attention_bins(const AttentionMass & a, size_t l, uint32_t n_bins) {
    std::vector<AttentionBin> bins(a.n_positions ? n_bins : 0);
    for (uint32_t x = 0; x < bins.size(); ++x) {
        const uint64_t begin = uint64_t(x) * a.n_positions / n_bins;
        const uint64_t end = std::max(begin + 1, uint64_t(x + 1) * a.n_positions / n_bins);
        double mean = 0, held = 0;
        for (uint64_t p = begin; p < end; ++p) {
            mean += a.mean_at(l, p);
            held += a.held_at(l, p);
        }
        bins[x] = {float(mean / double(end - begin)), float(held / double(end - begin))};
    }
    return bins;
}

// The positions [begin, end) of `a` (a document's tokens in a prompt), renumbered from 0.
inline AttentionMass attention_slice(const AttentionMass & a, uint32_t begin, uint32_t end) {
    AttentionMass out;
    if (begin >= end || end > a.n_positions) return out;
    out.n_positions = end - begin;
    out.n_query_heads = a.n_query_heads;
    out.n_queries = a.n_queries;
    out.layers = a.layers;
    out.queries.assign(a.queries.begin() + begin, a.queries.begin() + end);
    for (size_t l = 0; l < a.layers.size(); ++l) {
        const size_t row = l * a.n_positions;
        out.mass.insert(out.mass.end(), a.mass.begin() + std::ptrdiff_t(row + begin), a.mass.begin() + std::ptrdiff_t(row + end));
        out.held.insert(out.held.end(), a.held.begin() + std::ptrdiff_t(row + begin), a.held.begin() + std::ptrdiff_t(row + end));
    }
    return out;
}

}  // namespace lr
