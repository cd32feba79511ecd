#pragma once
// One ubatch as the cache planned it. KvCache::plan() makes it without changing what the
// cache holds; the graph reads its tokens and positions and asks the cache for each
// layer's view through it; KvCache::apply() makes its tokens part of the sequence, or
// KvCache::discard() drops them. While a layer's view is in use the plan holds its blocks
// pinned on the device tier.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/paged_kv_view.h"
#include "kvcache/block_pool.h"
#include "kvcache/selection_policy.h"

namespace lr {

// What the runtime asks for: the tokens left to evaluate in this call (the plan takes a
// prefix of them).
struct UbatchRequest {
    std::span<const int32_t> tokens;
    uint32_t max_tokens = 0;  // the graph's ubatch capacity
    bool prompt = false;      // the call evaluates a prompt (more than one token), not one decode step
    // The tokens end a document or a turn: the cache snapshots the recurrent states after
    // the last of them, so that a cut there (regenerate, edit after it) recomputes nothing.
    bool ends_turn = false;
};

class UbatchPlan {
public:
    UbatchPlan() = default;
    UbatchPlan(UbatchPlan &&) = default;
    UbatchPlan & operator=(UbatchPlan &&) = default;

    SeqId seq() const { return seq_; }
    std::span<const int32_t> tokens() const { return tokens_; }
    std::span<const int32_t> positions() const { return positions_; }
    uint32_t n_tokens() const { return uint32_t(tokens_.size()); }
    // Whether its views choose what to read by the query (Quest at a decode step).
    bool reads_by_query() const { return policy_.query_aware; }
    // Whether its views gather attention mass: for the policy, or for observation.
    bool collects_mass() const { return policy_.collect_mass || observe_; }

private:
    friend class KvCache;

    SeqId seq_ = 0;
    std::vector<int32_t> tokens_;
    std::vector<int32_t> positions_;
    PolicyUbatch ubatch_;      // as the sequence's policy saw it
    PolicyPlan policy_;        // what the policy asked for
    bool renumber_ = false;    // streaming: each layer's positions are renumbered at its view
    bool warming_up_ = false;  // the sequence is still warming up: nothing is evicted or re-encoded
    bool observe_ = false;     // the cache records attention mass for observation (KvCache::observe_attention)

    // The views, in layer order.
    uint32_t n_viewed_ = 0;
    PinnedBlocks pins_;                 // the current view's blocks
    std::vector<uint32_t> first_slot_;  // [layer] the slot of the first new token
    std::vector<size_t> mass_at_;       // [layer] offset of the layer's attention mass
    // [layer] while observing: the layer's blocks its view held, in view order (a query-aware
    // view reads a subset; the mass is laid out by view block).
    std::vector<std::vector<uint32_t>> observed_blocks_;
    std::vector<BlockId> view_ids_;  // the current view's blocks, in view order
    std::vector<KvBlockRef> view_blocks_;
    std::vector<uint32_t> write_slots_;
    std::vector<uint32_t> read_pages_;
    bool states_advanced_ = false;  // a recurrent layer's state was handed to the graph
    bool ends_turn_ = false;        // it takes the last tokens of a request that ends a turn
    bool persist_states_ = false;   // the recurrent states after it go to the prefix store
};

}  // namespace lr
