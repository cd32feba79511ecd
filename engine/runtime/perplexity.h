#pragma once
// Perplexity of a token sequence the way llama-perplexity computes it: non-overlapping
// windows of n_ctx tokens, the first token of each window replaced by BOS, and only the
// predictions of the second half of each window scored (so each scored token has at least
// n_ctx/2 tokens of context).

#include <functional>
#include <span>
#include <stop_token>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace lr {

struct PerplexityResult {
    double ppl = 0;
    double ppl_error = 0;  // standard error, as llama-perplexity reports it
    size_t n_chunks = 0;
    size_t n_scored = 0;            // predictions scored
    std::vector<double> chunk_ppl;  // running estimate after each window
};

// progress(windows done, windows in all).
Result<PerplexityResult> compute_perplexity(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                            const SessionConfig & session_config = {},
                                            const std::function<void(size_t, size_t)> & progress = {}, std::stop_token stop = {});

// log p(token | logits) with the softmax in double, as llama-perplexity computes it.
double log_probability(std::span<const float> logits, int32_t token);

// The next-token distribution: softmax of the logits in double.
std::vector<double> probabilities(std::span<const float> logits);
// KL(p || q) of two distributions over the same vocabulary (q floored at 1e-300).
double kl_divergence(std::span<const double> p, std::span<const double> q);

}  // namespace lr
