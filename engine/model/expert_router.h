#pragma once
// The router of a mixture-of-experts layer: from each token's router logits, which experts
// run and with which weights, as llama.cpp's build_moe_ffn chooses them.
//
//   softmax         (qwen3moe) probabilities = softmax over every logit; the n_used most
//                   probable experts; weights = their probabilities, divided by their sum
//                   when norm_weights (the sum clamped to at least 2^-14, as llama.cpp).
//   softmax_weight  (gpt-oss) the n_used largest logits (the router bias already added);
//                   weights = softmax over those n_used logits.
// Then weights times weights_scale when it is neither 0 nor 1. Experts come in descending
// order of score (llama.cpp's argsort); llama.cpp's std::sort leaves the order of equal
// scores unspecified, here the lower expert index comes first. Softmax as ggml's: the max
// subtracted, exp in float, the sum in double, the values times float(1 / sum).

#include <cstdint>

namespace lr {

enum class ExpertGating { softmax, softmax_weight };

struct RouterParams {
    uint32_t n_expert = 0;
    uint32_t n_used = 0;
    ExpertGating gating = ExpertGating::softmax;
    bool norm_weights = false;
    float weights_scale = 0.0f;  // 0 or 1: none
};

// For each token t: ids[t][0..n_used) and weights[t][...] from logits[t][0..n_expert).
//                     logits: [n_tokens][n_expert], ids, weights: [n_tokens][n_used]
void route_experts(const RouterParams & p, const float * logits, int64_t n_tokens, int32_t * ids, float * weights);

}  // namespace lr
