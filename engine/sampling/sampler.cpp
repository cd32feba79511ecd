#include "engine/sampling/sampler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "engine/common/assert.h"

namespace lr {

namespace {

Status out_of_range(const char * name, float value, const char * allowed) {
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, value);  // shortest: 1.5, not 1.500000
    return error(StatusCode::invalid_argument,
                 std::string("sampler: ") + name + " = " + std::string(buf, res.ptr) + " is out of range (" + allowed + ")");
}

bool by_logit_desc(const auto & a, const auto & b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); }

std::seed_seq seed_sequence(uint64_t seed) { return std::seed_seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}; }

}  // namespace

Status validate_sampler_params(const SamplerParams & p) {
    if (!std::isfinite(p.temperature)) return out_of_range("temperature", p.temperature, "a finite number; <= 0 is greedy");
    if (p.top_k < 0) return out_of_range("top_k", static_cast<float>(p.top_k), ">= 0; 0 turns it off");
    if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) return out_of_range("top_p", p.top_p, "0 to 1; 1 turns it off");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return out_of_range("min_p", p.min_p, "0 to 1; 0 turns it off");
    if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty)) {
        return out_of_range("repeat_penalty", p.repeat_penalty, "greater than 0; 1 turns it off");
    }
    if (p.repeat_last_n < 0 || p.repeat_last_n > (1 << 20)) {
        return out_of_range("repeat_last_n", static_cast<float>(p.repeat_last_n), "0 to 1048576; 0 turns penalties off");
    }
    if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f)) {
        return out_of_range("presence_penalty", p.presence_penalty, "-2 to 2");
    }
    if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f)) {
        return out_of_range("frequency_penalty", p.frequency_penalty, "-2 to 2");
    }
    return Status::ok_status();
}

Sampler::Sampler(SamplerParams params) : params_(params) {
    LR_ASSERT(validate_sampler_params(params_).ok());
    reset();
}

void Sampler::reset() {
    recent_.clear();
    std::seed_seq seq = seed_sequence(params_.seed);
    rng_.seed(seq);
}

void Sampler::accept(int32_t token) {
    if (params_.repeat_last_n == 0) return;
    recent_.push_back(token);
    if (recent_.size() > static_cast<size_t>(params_.repeat_last_n)) recent_.pop_front();
}

// llama.cpp's penalties: each distinct recent token's logit is divided by repeat_penalty
// (multiplied when negative), then lowered by count * frequency + presence.
void Sampler::apply_penalties(std::vector<float> & logits) const {
    const bool active = params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f;
    if (!active || recent_.empty()) return;
    std::vector<int32_t> tokens(recent_.begin(), recent_.end());
    std::sort(tokens.begin(), tokens.end());
    for (size_t i = 0; i < tokens.size();) {
        size_t j = i;
        while (j < tokens.size() && tokens[j] == tokens[i]) ++j;
        const int32_t id = tokens[i];
        const auto count = static_cast<float>(j - i);
        i = j;
        if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;  // from another vocabulary
        float & logit = logits[static_cast<size_t>(id)];
        logit = logit <= 0.0f ? logit * params_.repeat_penalty : logit / params_.repeat_penalty;
        logit -= count * params_.frequency_penalty + params_.presence_penalty;
    }
}

// Keeps the smallest prefix of candidates_ (sorted by logit, descending) whose softmax
// probability reaches top_p. Sorts only as much as it needs: the top 64, 256, 1024... until
// the mass is reached, so a full 128K-entry sort happens only for a very flat distribution.
size_t Sampler::keep_top_p(size_t n_kept, bool sorted) {
    const float max_logit = std::max_element(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(n_kept),
                                             [](const Candidate & a, const Candidate & b) { return a.logit < b.logit; })
                                ->logit;
    double total = 0.0;
    for (size_t i = 0; i < n_kept; ++i) total += std::exp(static_cast<double>(candidates_[i].logit - max_logit));
    const double target = static_cast<double>(params_.top_p) * total;

    size_t n_sorted = sorted ? n_kept : 0;
    size_t chunk = 64;
    double cumulative = 0.0;
    size_t i = 0;
    while (true) {
        if (n_sorted < n_kept) {
            n_sorted = std::min(n_kept, std::max(chunk, n_sorted));
            std::partial_sort(candidates_.begin() + static_cast<ptrdiff_t>(i), candidates_.begin() + static_cast<ptrdiff_t>(n_sorted),
                              candidates_.begin() + static_cast<ptrdiff_t>(n_kept),
                              [](const Candidate & a, const Candidate & b) { return by_logit_desc(a, b); });
            chunk *= 4;
        }
        for (; i < n_sorted; ++i) {
            cumulative += std::exp(static_cast<double>(candidates_[i].logit - max_logit));
            if (cumulative >= target) return i + 1;
        }
        if (n_sorted == n_kept) return n_kept;
    }
}

double Sampler::uniform01() {
    // 53 random bits from two 32-bit draws: the same on every standard library.
    const uint64_t hi = rng_();
    const uint64_t lo = rng_();
    return static_cast<double>(((hi << 32) | lo) >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits) {
    LR_ASSERT(!logits.empty() && logits.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
    const size_t n_vocab = logits.size();

    // NaN logits count as -inf: they can never be chosen and cannot break the ordering.
    work_.assign(logits.begin(), logits.end());
    for (float & l : work_) {
        if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
    }
    apply_penalties(work_);

    if (params_.temperature <= 0.0f) {
        // Greedy: no truncation can drop the argmax, so skip straight to it.
        return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
    }

    candidates_.resize(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) candidates_[i] = Candidate{static_cast<int32_t>(i), work_[i]};
    size_t n_kept = n_vocab;
    bool sorted = false;

    // top_k: partial sort of the k best, O(n log k).
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_kept) {
        n_kept = static_cast<size_t>(params_.top_k);
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(n_kept), candidates_.end(),
                          [](const Candidate & a, const Candidate & b) { return by_logit_desc(a, b); });
        sorted = true;
    }

    if (params_.top_p < 1.0f) {
        n_kept = keep_top_p(n_kept, sorted);
        sorted = true;  // the kept prefix is sorted now
    }

    // min_p on logits, as llama.cpp: keep logit >= max + log(min_p); the best always stays.
    if (params_.min_p > 0.0f) {
        float max_logit = -std::numeric_limits<float>::infinity();
        for (size_t i = 0; i < n_kept; ++i) max_logit = std::max(max_logit, candidates_[i].logit);
        const float min_logit = max_logit + std::log(params_.min_p);
        size_t out = 0;
        for (size_t i = 0; i < n_kept; ++i) {
            if (candidates_[i].logit >= min_logit) candidates_[out++] = candidates_[i];
        }
        n_kept = std::max<size_t>(out, 1);
    }

    // Temperature, softmax and the draw: walk the cumulative probabilities to u.
    float max_logit = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n_kept; ++i) max_logit = std::max(max_logit, candidates_[i].logit);
    if (max_logit == -std::numeric_limits<float>::infinity()) return candidates_[0].id;  // nothing finite
    const double inv_temp = 1.0 / static_cast<double>(params_.temperature);
    weights_.resize(n_kept);
    double total = 0.0;
    for (size_t i = 0; i < n_kept; ++i) {
        weights_[i] = std::exp((static_cast<double>(candidates_[i].logit) - max_logit) * inv_temp);
        total += weights_[i];
    }
    const double target = uniform01() * total;
    double cumulative = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < n_kept; ++i) {
        if (weights_[i] <= 0.0) continue;
        cumulative += weights_[i];
        last_positive = i;
        if (target < cumulative) return candidates_[i].id;
    }
    return candidates_[last_positive].id;  // rounding left u just past the end
}

}  // namespace lr
