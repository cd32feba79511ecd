// The policies that evict (h2o, snapkv, streaming, random) and the one that keeps
// everything; Quest, which selects reads instead, is in quest_policy.cpp.
#include "kvcache/selection_policy.h"

#include <algorithm>

#include "kvcache/quest_policy.h"

namespace lr {

uint32_t SelectionPolicy::ubatch_tokens(uint32_t n_left, uint32_t max_tokens, bool prompt) const {
    (void)prompt;
    return std::min(n_left, max_tokens);
}

SelectionParams SelectionPolicy::params(uint32_t budget, bool prompt_end) const {
    (void)prompt_end;
    return {.budget = budget, .sinks = settings_.sink_tokens, .recent = uint32_t(settings_.recent_ratio * budget)};
}

void SelectionPolicy::score(const HeadScores & head, std::vector<float> & out) const { out.assign(head.positions.size(), 0.0f); }

PageReads SelectionPolicy::page_reads(const LayerBlocks &, const BlockPool &, uint32_t, const float *, uint32_t) const { return {}; }

namespace {

class KeepAll final : public SelectionPolicy {
public:
    using SelectionPolicy::SelectionPolicy;
    PolicyPlan plan(const PolicyUbatch &) const override { return {}; }
};

// H2O: attention mass per query that has seen a position (the paper's sum favours old
// positions for their age alone; measured in docs/BENCHMARKS.md).
class HeavyHitters final : public SelectionPolicy {
public:
    using SelectionPolicy::SelectionPolicy;
    PolicyPlan plan(const PolicyUbatch & u) const override {
        return {.collect_mass = true, .evict_to = settings_.budget_for(u.n_held + u.n_tokens)};
    }
    void score(const HeadScores & head, std::vector<float> & out) const override {
        out = mean_attention_scores(head.positions, head.mass, head.end);
    }
    bool keeps_mass() const override { return true; }
};

// SnapKV: the last obs_window tokens of a prompt vote with their attention; at the prompt's
// end each head keeps the positions with the most pooled mass. Then decoding keeps growing,
// or continues as H2O over the mass gathered from the window on (--then h2o).
class SnapKv final : public SelectionPolicy {
public:
    using SelectionPolicy::SelectionPolicy;
    uint32_t ubatch_tokens(uint32_t n_left, uint32_t max_tokens, bool prompt) const override {
        const uint32_t obs = settings_.obs_window;
        if (prompt && n_left > obs) return std::min(max_tokens, n_left - obs);
        return std::min(n_left, max_tokens);
    }
    PolicyPlan plan(const PolicyUbatch & u) const override {
        PolicyPlan p{.collect_mass = observes(u) || selecting_, .select_at_prompt_end = u.prompt && u.n_after == 0};
        if (selecting_) p.evict_to = settings_.budget_for(u.n_held + u.n_tokens);
        return p;
    }
    void applied(const PolicyUbatch & u, const PolicyPlan &) override {
        if (observes(u) && !mass_from_) mass_from_ = u.first_pos;
        // At the prompt's end, whether or not the cache selected (not during a warm-up).
        if (u.prompt && u.n_after == 0) selecting_ = settings_.then == KvPolicy::h2o;
    }
    SelectionParams params(uint32_t budget, bool prompt_end) const override {
        SelectionParams p = SelectionPolicy::params(budget, prompt_end);
        if (prompt_end) p.recent = settings_.obs_window;
        return p;
    }
    void score(const HeadScores & head, std::vector<float> & out) const override {
        out = head.prompt_end ? max_pool_scores(head.positions, head.mass, settings_.pool_kernel)
                              : mean_attention_scores(head.positions, head.mass, head.end, mass_from_.value_or(0));
    }
    // The window's mass is dropped once the prompt is selected, unless H2O continues.
    bool keeps_mass() const override { return selecting_; }

private:
    // The ubatch is part of the prompt's last obs_window tokens.
    bool observes(const PolicyUbatch & u) const { return u.prompt && u.n_tokens + u.n_after <= settings_.obs_window; }

    bool selecting_ = false;            // evicting after the prompt (--then h2o)
    std::optional<int32_t> mass_from_;  // the first observation query: mass is collected from it on
};

// StreamingLLM: sinks and a window of recent positions, renumbered inside the cache so that
// generation runs past the trained context.
class Streaming final : public SelectionPolicy {
public:
    Streaming(const KvSettings & settings, const KvBlockShape & shape, uint32_t max_tokens)
        : SelectionPolicy(settings, shape), max_tokens_(max_tokens) {}
    bool renumbers() const override { return true; }
    PolicyPlan plan(const PolicyUbatch & u) const override {
        return {.evict_to = std::min(settings_.budget_for(u.n_held + u.n_tokens), max_tokens_)};
    }
    SelectionParams params(uint32_t budget, bool) const override {
        return {.budget = budget, .sinks = settings_.sink_tokens, .recent = budget};
    }

private:
    uint32_t max_tokens_;
};

// Sinks, recent window and random positions (seeded per layer, head and step): the baseline.
class RandomBaseline final : public SelectionPolicy {
public:
    using SelectionPolicy::SelectionPolicy;
    PolicyPlan plan(const PolicyUbatch & u) const override { return {.evict_to = settings_.budget_for(u.n_held + u.n_tokens)}; }
    void score(const HeadScores & head, std::vector<float> & out) const override {
        out = random_scores(head.positions.size(), (uint64_t(head.layer) << 32) ^ (uint64_t(head.head) << 48) ^ head.n_held);
    }
};

}  // namespace

std::unique_ptr<SelectionPolicy> SelectionPolicy::create(const KvSettings & settings, const KvBlockShape & shape, uint32_t max_tokens) {
    switch (settings.policy) {
        case KvPolicy::none: break;
        case KvPolicy::h2o: return std::make_unique<HeavyHitters>(settings, shape);
        case KvPolicy::snapkv: return std::make_unique<SnapKv>(settings, shape);
        case KvPolicy::streaming: return std::make_unique<Streaming>(settings, shape, max_tokens);
        case KvPolicy::quest: return make_quest_policy(settings, shape);
        case KvPolicy::random: return std::make_unique<RandomBaseline>(settings, shape);
    }
    return std::make_unique<KeepAll>(settings, shape);
}

}  // namespace lr
