#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/common/assert.h"

namespace lr {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t n_top) {
    LR_ASSERT(!logits.empty() && token >= 0 && size_t(token) < logits.size());
    LR_ASSERT(n_top >= 0 && size_t(n_top) <= logits.size());
    // -inf logits (masked tokens) get -inf; the maximum is finite unless all are masked.
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float x : logits) sum += std::exp(double(x) - double(max));
    const double log_z = double(max) + std::log(sum);
    auto logprob = [&](int32_t id) { return float(double(logits[size_t(id)]) - log_z); };

    TokenLogprobs out{.token = token, .logprob = logprob(token), .top = {}};
    if (n_top == 0) return out;
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    auto more_likely = [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    };
    std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), more_likely);
    out.top.reserve(size_t(n_top));
    for (int32_t i = 0; i < n_top; ++i) out.top.emplace_back(ids[size_t(i)], logprob(ids[size_t(i)]));
    return out;
}

}  // namespace lr
