#pragma once
// One sequence in the cache: its block table per layer, its tokens (the prefix-cache keys),
// its positions and its selection policy with that policy's state. Several sequences share
// one cache (and its tier budgets); full blocks of a common prefix are shared between them.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kvcache/block_pool.h"
#include "kvcache/selection_policy.h"

namespace lr {

// One layer of one sequence: its blocks in slot order, and what its policy gathered per slot.
struct LayerBlocks {
    std::vector<BlockId> ids;
    // [block] attention mass per slot ([n_head_kv][block_tokens], the block's layout), this
    // sequence's (a shared block has one per sequence); empty: none gathered yet.
    std::vector<std::vector<float>> mass;
    uint32_t slots_used = 0;  // the next free slot (the same for every head), counted from ids[0]
    // Blocks a sliding window let go from the front: ids[0] is the sequence's block number
    // `dropped` (a full-attention layer never drops any).
    uint32_t dropped = 0;

    size_t size() const { return ids.size(); }
    void push(BlockId id) {
        ids.push_back(id);
        mass.emplace_back();
    }
    void pop() {
        ids.pop_back();
        mass.pop_back();
    }
    void pop_front() {
        ids.erase(ids.begin());
        mass.erase(mass.begin());
        ++dropped;
    }
    void clear() {
        ids.clear();
        mass.clear();
        dropped = 0;
    }
    // The block at the sequence's block number `depth`, if the layer still holds it.
    const BlockId * at_depth(uint32_t depth) const {
        return depth >= dropped && depth - dropped < ids.size() ? &ids[depth - dropped] : nullptr;
    }
};

// Where the model looked, recorded while the cache observes attention: per full-attention
// layer and position the mass it received, per position the queries that could see it.
// Positions, not slots: an evicted position keeps what it received before.
struct ObservedAttention {
    std::vector<std::vector<float>> mass;  // [full layer][position]
    std::vector<uint32_t> queries;         // [position]
    uint64_t n_queries = 0;

    void cut(uint32_t n_positions) {
        for (std::vector<float> & m : mass) m.resize(std::min<size_t>(m.size(), n_positions));
        queries.resize(std::min<size_t>(queries.size(), n_positions));
    }
};

struct KvSequence {
    std::vector<LayerBlocks> layers;    // [layer]
    std::vector<int32_t> tokens;        // appended so far (prefix-cache keys)
    std::vector<uint64_t> chains;       // prefix chain hash after each full block
    int32_t next_pos = 0;               // position of the next token (the token count, unless renumbered)
    bool pure_prefix = true;            // no eviction, renumbering or re-encoding: persistable, shareable
    std::optional<uint32_t> lost_from;  // set by a data loss: recompute from here
    std::unique_ptr<SelectionPolicy> policy;
    ObservedAttention observed;

    uint32_t n_tokens() const { return uint32_t(tokens.size()); }
    uint64_t mass_bytes() const {
        uint64_t bytes = 0;
        for (const LayerBlocks & l : layers) {
            for (const auto & m : l.mass) bytes += m.size() * sizeof(float);
        }
        return bytes;
    }
};

}  // namespace lr
