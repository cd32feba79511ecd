#include "engine/backend/expert_groups.h"

#include <algorithm>

#include "engine/common/assert.h"

namespace lr {

int32_t ExpertGroups::max_count() const {
    int32_t most = 0;
    for (int32_t e : active) most = std::max(most, count(e));
    return most;
}

void ExpertGroups::assign(const ExpertRoutes & routes, int64_t n_tokens, int32_t n_expert) {
    const int64_t n = n_tokens * routes.n_used;
    begin.assign(size_t(n_expert) + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
        const int32_t e = routes.ids_host[i];
        LR_ASSERT(e >= 0 && e < n_expert);
        ++begin[size_t(e) + 1];
    }
    active.clear();
    for (int32_t e = 0; e < n_expert; ++e) {
        if (begin[size_t(e) + 1] > 0) active.push_back(e);
        begin[size_t(e) + 1] += begin[size_t(e)];
    }
    // Counting sort: the next free slot of each expert, filled in token order.
    std::vector<int32_t> next(begin.begin(), begin.end() - 1);
    slot_of.resize(size_t(n));
    slot_token.resize(size_t(n));
    slot_expert.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
        const int32_t e = routes.ids_host[i];
        const int32_t slot = next[size_t(e)]++;
        slot_of[size_t(i)] = slot;
        slot_token[size_t(slot)] = int32_t(i / routes.n_used);
        slot_expert[size_t(slot)] = e;
    }
}

}  // namespace lr
