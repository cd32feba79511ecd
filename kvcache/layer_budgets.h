#pragma once
// Per-layer budgets: how a policy's budget is spread over the layers that evict (the
// full-attention ones; sliding, shared and recurrent layers keep what they keep). The total
// is the uniform budget times those layers, exactly. Every layer keeps at least the sinks
// and the recent window the policy keeps at the uniform budget; only the rest, the positions
// the policy selects by score, moves between layers:
//   uniform  every layer the uniform budget (the same positions as without the setting)
//   pyramid  PyramidKV's arithmetic ramp over the layers, bottom first: the top layer's
//            selected part is 1/20 of the mean (the paper's beta = 20), the bottom's
//            2 - 1/20 of it, so the top selects 1/39 of what the bottom does
//   inverse  the same ramp upside down: lower layers compressed more, upper ones kept more
// No layer keeps more than the sequence's tokens; what a layer cannot take goes to the others
// in proportion to the ramp. Streaming's budget is all sinks and window, so every shape is
// uniform for it; none and quest evict nothing.

#include <cstdint>
#include <vector>

#include "engine/api/kv_settings.h"
#include "kvcache/kv_cache_config.h"

namespace lr {

class SelectionPolicy;

// The top layer's share of the mean selected part, 1 / kPyramidBeta (PyramidKV's beta).
inline constexpr double kPyramidBeta = 20;

struct LayerBudgetRequest {
    KvLayerBudget shape = KvLayerBudget::uniform;
    uint32_t n_layers = 0;  // layers that evict
    uint32_t budget = 0;    // the uniform budget of each
    uint32_t floor = 0;     // the least a layer keeps (sinks + recent window; at most budget)
    uint32_t n_tokens = 0;  // the most a layer can keep: the sequence's tokens (at least budget)
};

// [n_layers] budgets, bottom layer first, summing to n_layers x budget, each within
// [min(floor, budget), max(n_tokens, budget)]; pyramid never rises going up, inverse never falls.
std::vector<uint32_t> layer_budgets(const LayerBudgetRequest & request);

// The least a layer keeps under `policy` at a uniform budget: its sinks and recent window.
uint32_t layer_budget_floor(const SelectionPolicy & policy, uint32_t budget, bool prompt_end);

// The budget of each layer of `shape` ([n_layer]; a layer that does not evict gets `budget`,
// unused) for a sequence of n_tokens that `policy` evicts to `budget` (the selection at a
// prompt's end: prompt_end).
std::vector<uint32_t> layer_budgets(const SelectionPolicy & policy, const KvModelShape & shape, uint32_t budget, uint32_t n_tokens,
                                    bool prompt_end);

}  // namespace lr
