#pragma once
// One sequence in the cache: its block table per layer, its tokens (the prefix-cache keys),
// its positions and its selection policy with that policy's state. Several sequences share
// one cache (and its tier budgets); full blocks of a common prefix are shared between them.

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
    uint32_t slots_used = 0;  // the next free slot (the same for every head)

    size_t size() const { return ids.size(); }
    void push(BlockId id) {
        ids.push_back(id);
        mass.emplace_back();
    }
    void pop() {
        ids.pop_back();
        mass.pop_back();
    }
    void clear() {
        ids.clear();
        mass.clear();
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
