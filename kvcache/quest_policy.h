#pragma once
// Quest: query-aware page selection. Nothing is dropped; at each decode step a page's
// per-channel key bounds bound the score any of its keys can reach for the current query
// (sum over channels of max(q*min, q*max)), and each KV head reads the sinks' page, the new
// token's page and the pages with the highest bound, all within the budget (at least the
// first two). As in the paper, no further share of the budget is reserved for recent
// tokens: the bounds pick them when they matter (measured in docs/BENCHMARKS.md). Pages are
// smaller than the KV blocks the tiers move, so a small budget still picks out what
// matters; a layer fetches the blocks any head reads, and the other blocks stay on
// whatever tier holds them, so long contexts run with a bounded device tier.

#include <memory>

#include "kvcache/selection_policy.h"

namespace lr {

std::unique_ptr<SelectionPolicy> make_quest_policy(const KvSettings & settings, const KvBlockShape & shape);

}  // namespace lr
