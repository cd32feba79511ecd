#include "kvcache/layer_budgets.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/common/assert.h"
#include "kvcache/selection_policy.h"

namespace lr {
namespace {

// PyramidKV's ramp, bottom layer first, with mean 1: from 2 - 1/beta down to 1/beta.
std::vector<double> ramp(KvLayerBudget shape, uint32_t n) {
    const double top = 1.0 / kPyramidBeta, bottom = 2.0 - top;
    std::vector<double> w(n);
    for (uint32_t i = 0; i < n; ++i) w[i] = bottom + (top - bottom) * double(i) / double(n - 1);
    if (shape == KvLayerBudget::inverse) std::reverse(w.begin(), w.end());
    return w;
}

}  // namespace

std::vector<uint32_t> layer_budgets(const LayerBudgetRequest & r) {
    std::vector<uint32_t> out(r.n_layers, r.budget);
    const uint32_t floor = std::min(r.floor, r.budget);
    if (r.shape == KvLayerBudget::uniform || r.n_layers < 2 || floor == r.budget) return out;
    const uint32_t n = r.n_layers;
    const uint64_t total = uint64_t(n) * (r.budget - floor);  // the selected parts, over the layers
    const uint32_t room = std::max(r.n_tokens, r.budget) - floor;
    const std::vector<double> w = ramp(r.shape, n);
    // Water-filling: the ramp scaled to the total; a layer over its room is held there and
    // the rest is spread again over the others.
    std::vector<double> part(n, 0.0);
    std::vector<uint8_t> held(n, 0);
    double left = double(total);
    for (bool again = true; again;) {
        again = false;
        double weight = 0;
        for (uint32_t i = 0; i < n; ++i) weight += held[i] ? 0.0 : w[i];
        for (uint32_t i = 0; i < n; ++i) {
            if (held[i]) continue;
            part[i] = left * w[i] / weight;
            if (part[i] > room) {
                part[i] = room;
                held[i] = 1;
                left -= room;
                again = true;
            }
        }
    }
    // Whole tokens: each layer its part rounded down, then one more to the largest remainders
    // (the lower layer first on a tie) until the total is exact.
    std::vector<uint32_t> whole(n);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        whole[i] = std::min(room, uint32_t(std::floor(part[i])));
        sum += whole[i];
    }
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return part[a] - whole[a] > part[b] - whole[b]; });
    for (uint32_t k = 0; sum < total; k = (k + 1) % n) {
        if (whole[order[k]] < room) {
            ++whole[order[k]];
            ++sum;
        }
    }
    // (Round-off may put the rounded-down parts a token over: the smallest remainders give it back.)
    for (uint32_t k = n - 1; sum > total; k = (k + n - 1) % n) {
        if (whole[order[k]] > 0) {
            --whole[order[k]];
            --sum;
        }
    }
    LR_ASSERT(sum == total);
    for (uint32_t i = 0; i < n; ++i) out[i] = floor + whole[i];
    return out;
}

uint32_t layer_budget_floor(const SelectionPolicy & policy, uint32_t budget, bool prompt_end) {
    const SelectionParams p = policy.params(budget, prompt_end);
    return std::min(budget, p.sinks + p.recent);
}

std::vector<uint32_t> layer_budgets(const SelectionPolicy & policy, const KvModelShape & shape, uint32_t budget, uint32_t n_tokens,
                                    bool prompt_end) {
    uint32_t n_full = 0;
    for (uint32_t il = 0; il < shape.n_layer; ++il) n_full += shape.full(il) ? 1 : 0;
    const std::vector<uint32_t> full = layer_budgets({.shape = policy.settings().layer_budget,
                                                      .n_layers = n_full,
                                                      .budget = budget,
                                                      .floor = layer_budget_floor(policy, budget, prompt_end),
                                                      .n_tokens = n_tokens});
    std::vector<uint32_t> out(shape.n_layer, budget);
    for (uint32_t il = 0, i = 0; il < shape.n_layer; ++il) {
        if (shape.full(il)) out[il] = full[i++];
    }
    return out;
}

}  // namespace lr
