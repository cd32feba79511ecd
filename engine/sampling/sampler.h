#pragma once
// Picks the next token from a row of logits. The chain follows llama.cpp's default order:
//   penalties (repetition over the last repeat_last_n accepted tokens, presence, frequency)
//   -> top_k -> top_p -> min_p -> temperature -> a seeded draw.
// temperature <= 0 is greedy: the argmax of the penalized logits, lowest index on ties.
// The same parameters, seed, logits and accepted tokens give the same tokens on every
// platform: the draw uses std::mt19937 and its own uniform conversion and cumulative walk,
// not std::discrete_distribution, whose output differs between standard libraries.

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

#include "engine/api/sampling.h"
#include "engine/common/status.h"

namespace lr {

class Sampler {
public:
    // `params` must pass validate_sampler_params (asserted).
    explicit Sampler(SamplerParams params);

    // The next token: an index into `logits` (one logit per vocabulary entry, not empty).
    // Advances the random state; does not record the token (call accept()).
    int32_t sample(std::span<const float> logits);

    // Records a token the model consumed (sampled or forced), for the penalties.
    void accept(int32_t token);

    // Forgets the accepted tokens and restarts the random sequence from the seed.
    void reset();

    const SamplerParams & params() const { return params_; }

private:
    struct Candidate {
        int32_t id;
        float logit;
    };

    void apply_penalties(std::vector<float> & logits) const;
    size_t keep_top_p(size_t n_kept, bool sorted);  // returns the new count
    double uniform01();

    SamplerParams params_;
    std::mt19937 rng_;
    std::deque<int32_t> recent_;         // the last repeat_last_n accepted tokens, oldest first
    std::vector<float> work_;            // [n_vocab] penalized logits, reused between calls
    std::vector<Candidate> candidates_;  // [n_vocab] reused between calls
    std::vector<double> weights_;        // [n_kept] unnormalized probabilities of the draw
};

}  // namespace lr
