#pragma once
// The (token, choice) pairs of a routed ubatch grouped by expert, for the backends' moe_ffn:
// slots in expert order, tokens ascending within an expert, so that each expert's tokens
// are contiguous rows of one product and each chosen expert's weights are read once.

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"

namespace lr {

struct ExpertGroups {
    std::vector<int32_t> slot_of;      // [n_tokens * n_used] the slot of each (token, choice)
    std::vector<int32_t> slot_token;   // [n_slots] the token of each slot
    std::vector<int32_t> slot_expert;  // [n_slots] the expert of each slot
    std::vector<int32_t> begin;        // [n_expert + 1] the first slot of each expert
    std::vector<int32_t> active;       // the experts some token chose, ascending

    int64_t n_slots() const { return int64_t(slot_token.size()); }
    int32_t first(int32_t e) const { return begin[size_t(e)]; }
    int32_t count(int32_t e) const { return begin[size_t(e) + 1] - begin[size_t(e)]; }
    int32_t max_count() const;  // the most slots of one expert

    // Regroups for a new ubatch (keeps the vectors' capacity). Asserts every id < n_expert.
    void assign(const ExpertRoutes & routes, int64_t n_tokens, int32_t n_expert);
};

}  // namespace lr
