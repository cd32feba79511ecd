#pragma once
// The quality harness of the cache policies (`longread-cli eval-kv`): the same text through
// the full cache and through a policy, on the same windows, and what the policy costs.
//
// Each window of n_ctx tokens (the first replaced by BOS, as llama-perplexity) is a prompt
// of its first half, then the second half decoded one token at a time, so that every
// prediction sees only what the policy kept, as in generation (a one-batch prefill would
// hide the eviction). The predictions of the second half are scored.

#include <functional>
#include <span>
#include <stop_token>

#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace lr {

struct KvEvaluation {
    double ppl_full = 0;
    double ppl = 0;
    double kld = 0;         // mean KL(full || policy) of the next-token distributions
    double top1_agree = 0;  // share of predictions where both argmaxes agree
    uint64_t kv_bytes = 0;  // KV held at the end of a window, mean over windows
    uint64_t kv_bytes_full = 0;
    double read_ratio = 1;  // KV rows attention read while decoding, vs the full cache
    double tok_s = 0;       // decode speed of the scored half
    double tok_s_full = 0;
    size_t n_windows = 0;
    size_t n_scored = 0;
};

// `policy` is evaluated against the same settings with policy none and 16-bit codecs.
// max_windows 0: every window of the text. progress(windows done, windows in all).
// chunk_tokens: the prefill chunk the prompt halves are read in (kAutoChunk: from their length).
Result<KvEvaluation> evaluate_kv_policy(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                        const KvSettings & policy, size_t max_windows = 0,
                                        const std::function<void(size_t, size_t)> & progress = {}, std::stop_token stop = {},
                                        uint32_t chunk_tokens = 256);

}  // namespace lr
