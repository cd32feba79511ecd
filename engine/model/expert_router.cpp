#include "engine/model/expert_router.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/common/assert.h"

namespace lr {
namespace {

// ggml_soft_max of n values in place.
void softmax(float * v, uint32_t n) {
    const float max = *std::max_element(v, v + n);
    double sum = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
        v[i] = std::exp(v[i] - max);
        sum += double(v[i]);
    }
    const auto inv = float(1.0 / sum);
    for (uint32_t i = 0; i < n; ++i) v[i] *= inv;
}

}  // namespace

void route_experts(const RouterParams & p, const float * logits, int64_t n_tokens, int32_t * ids, float * weights) {
    LR_ASSERT(p.n_used > 0 && p.n_used <= p.n_expert);
    std::vector<float> scores(p.n_expert);
    std::vector<int32_t> order(p.n_expert);
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::copy_n(logits + t * p.n_expert, p.n_expert, scores.begin());
        if (p.gating == ExpertGating::softmax) softmax(scores.data(), p.n_expert);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scores[size_t(a)] > scores[size_t(b)]; });

        int32_t * id = ids + t * p.n_used;
        float * w = weights + t * p.n_used;
        for (uint32_t j = 0; j < p.n_used; ++j) {
            id[j] = order[j];
            w[j] = scores[size_t(order[j])];
        }
        if (p.gating == ExpertGating::softmax_weight) softmax(w, p.n_used);
        if (p.norm_weights) {
            double sum = 0.0;  // ggml_sum_rows
            for (uint32_t j = 0; j < p.n_used; ++j) sum += double(w[j]);
            const float clamped = std::max(float(sum), 6.103515625e-5f);
            for (uint32_t j = 0; j < p.n_used; ++j) w[j] /= clamped;
        }
        if (p.weights_scale != 0.0f && p.weights_scale != 1.0f) {
            for (uint32_t j = 0; j < p.n_used; ++j) w[j] *= p.weights_scale;
        }
    }
}

}  // namespace lr
