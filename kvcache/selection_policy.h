#pragma once
// The lossy side of the cache, one object per policy and per sequence: which positions
// survive when a sequence is over its budget, and which pages a query reads. The cache asks
// its sequence's policy when it plans a ubatch (what to collect, whether views depend on
// the query, what to evict once the ubatch is applied) and when it evicts (how to rank one
// head's positions); nothing outside kvcache/ asks which policy is on.
//
//   none       keeps everything
//   h2o        heavy hitters by attention mass per query that has seen them + recent + sinks
//   snapkv     at the end of a prompt, top positions by the observation window's pooled mass;
//              then keeps growing, or continues as h2o (--then h2o)
//   streaming  sinks + a sliding window; renumbers positions to run past the context
//   quest      keeps everything; each KV head reads the pages whose key bounds score highest
//   random     sinks + recent + random positions: the baseline the others must beat

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/api/kv_settings.h"
#include "kvcache/block_pool.h"
#include "kvcache/page_bounds.h"
#include "kvcache/token_selection.h"

namespace lr {

struct LayerBlocks;

// What the policy asks of one ubatch, decided before it runs.
struct PolicyPlan {
    bool collect_mass = false;          // views record attention mass (folded in at apply)
    bool query_aware = false;           // views read the pages the query needs (Quest)
    std::optional<uint32_t> evict_to;   // after the ubatch, each head keeps at most this many
    bool select_at_prompt_end = false;  // the prompt ends here: select the whole prompt (SnapKV)
};

// The ubatch as the policy sees it.
struct PolicyUbatch {
    uint32_t n_held = 0;    // tokens of the sequence before it
    uint32_t n_tokens = 0;  // its tokens
    int32_t first_pos = 0;  // its first position
    bool prompt = false;    // part of a multi-token prompt (else one decode step)
    uint32_t n_after = 0;   // tokens of the prompt after it
};

// One head of one layer, ranked for eviction.
struct HeadScores {
    std::span<const int32_t> positions;  // [slots] kInvalidPos for an empty slot
    std::span<const float> mass;         // [slots] attention mass gathered (zeros when none)
    int32_t end = 0;                     // the position after the newest query
    uint32_t layer = 0, head = 0;
    uint32_t n_held = 0;      // tokens of the sequence before this ubatch
    bool prompt_end = false;  // the selection at the end of a prompt
};

// Which pages each KV head reads in one layer (Quest).
struct PageReads {
    std::vector<uint32_t> blocks;  // of the layer, ascending: those some head reads
    std::vector<uint32_t> pages;   // [blocks][n_head_kv]: bit i = the head reads page i of the block
};

class SelectionPolicy {
public:
    // max_tokens: the positions a sequence may hold (streaming keeps its window within it).
    static std::unique_ptr<SelectionPolicy> create(const KvSettings & settings, const KvBlockShape & shape, uint32_t max_tokens);
    virtual ~SelectionPolicy() = default;

    const KvSettings & settings() const { return settings_; }
    // The adaptive mode's recent window (h2o and random read it at each selection).
    void set_recent_ratio(double ratio) { settings_.recent_ratio = ratio; }

    // The most tokens of a prompt (n_left of them left) the next ubatch takes; SnapKV gives
    // its observation window ubatches of their own.
    virtual uint32_t ubatch_tokens(uint32_t n_left, uint32_t max_tokens, bool prompt) const;
    // Whether positions renumber instead of running out (streaming).
    virtual bool renumbers() const { return false; }
    virtual PolicyPlan plan(const PolicyUbatch & ubatch) const = 0;
    // The ubatch planned as `ubatch` is part of the sequence now.
    virtual void applied(const PolicyUbatch & ubatch, const PolicyPlan & plan) {
        (void)ubatch;
        (void)plan;
    }
    // What selection keeps of a head: sinks, recent window, budget.
    virtual SelectionParams params(uint32_t budget, bool prompt_end) const;
    // Scores of a head's slots (higher survives first), into out[slots].
    virtual void score(const HeadScores & head, std::vector<float> & out) const;
    // Whether blocks keep attention mass between ubatches (compaction carries it along).
    virtual bool keeps_mass() const { return false; }
    // Whether blocks keep per-page key bounds (Quest).
    virtual bool keeps_key_bounds() const { return false; }
    // The pages each head reads among a layer's blocks for the query q ([n_head][head_dim]
    // of the ubatch's last token; n_seen tokens with it): for query_aware views only.
    virtual PageReads page_reads(const LayerBlocks & layer, const BlockPool & pool, uint32_t n_seen, const float * q,
                                 uint32_t n_head) const;

    // (Abstract: only the policies below construct one.)
    SelectionPolicy(const KvSettings & settings, const KvBlockShape & shape) : settings_(settings), shape_(shape) {}

protected:
    KvSettings settings_;
    KvBlockShape shape_;
};

}  // namespace lr
