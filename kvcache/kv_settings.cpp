#include "engine/api/kv_settings.h"

#include <cmath>
#include <cstdio>

namespace lr {
namespace {

constexpr std::pair<KvPolicy, std::string_view> kPolicyNames[] = {
    {KvPolicy::none, "none"},           {KvPolicy::h2o, "h2o"},     {KvPolicy::snapkv, "snapkv"},
    {KvPolicy::streaming, "streaming"}, {KvPolicy::quest, "quest"}, {KvPolicy::random, "random"},
};

constexpr std::pair<KvDemotion, std::string_view> kDemotionNames[] = {
    {KvDemotion::cycle, "cycle"},
    {KvDemotion::lru, "lru"},
    {KvDemotion::fifo, "fifo"},
};

constexpr std::pair<KvLayerBudget, std::string_view> kLayerBudgetNames[] = {
    {KvLayerBudget::uniform, "uniform"},
    {KvLayerBudget::pyramid, "pyramid"},
    {KvLayerBudget::inverse, "inverse"},
};

KvCodec codec_for_bits(uint32_t bits) {
    switch (bits) {
        case 32: return KvCodec::f32;
        case 8: return KvCodec::q8;
        case 4: return KvCodec::q4;
        default: return KvCodec::f16;
    }
}

Status invalid(const std::string & message) { return error(StatusCode::invalid_argument, message); }

// An enum's name in a table of (value, name), and back.
template <typename E, size_t N>
std::string_view name_in(const std::pair<E, std::string_view> (&table)[N], E value) {
    for (const auto & [v, name] : table) {
        if (v == value) return name;
    }
    return "?";
}

template <typename E, size_t N>
std::optional<E> value_in(const std::pair<E, std::string_view> (&table)[N], std::string_view name) {
    for (const auto & [v, n] : table) {
        if (n == name) return v;
    }
    return std::nullopt;
}

}  // namespace

std::string_view kv_policy_name(KvPolicy policy) { return name_in(kPolicyNames, policy); }
std::optional<KvPolicy> kv_policy_from_name(std::string_view name) { return value_in(kPolicyNames, name); }
std::string_view kv_demotion_name(KvDemotion order) { return name_in(kDemotionNames, order); }
std::optional<KvDemotion> kv_demotion_from_name(std::string_view name) { return value_in(kDemotionNames, name); }
std::string_view kv_layer_budget_name(KvLayerBudget shape) { return name_in(kLayerBudgetNames, shape); }
std::optional<KvLayerBudget> kv_layer_budget_from_name(std::string_view name) { return value_in(kLayerBudgetNames, name); }

KvCodec KvSettings::k_codec() const { return codec_for_bits(k_bits); }
KvCodec KvSettings::v_codec() const { return codec_for_bits(v_bits); }

KvCodec KvSettings::narrowed(KvCodec codec, uint32_t tier_bits) {
    if (tier_bits == 0 || kv_codec_bits(codec) <= tier_bits) return codec;
    return codec_for_bits(tier_bits);
}

uint32_t KvSettings::budget_for(uint32_t n_tokens) const {
    if (policy == KvPolicy::none || policy == KvPolicy::quest) return n_tokens;
    const uint32_t budget = budget_tokens > 0 ? budget_tokens : uint32_t(std::ceil(keep_ratio * n_tokens));
    return std::min(n_tokens, std::max(budget, sink_tokens + 1));
}

Status validate(const KvSettings & s) {
    for (double mib : {s.device_mib, s.host_mib, s.disk_mib}) {
        if (!(mib >= 0) || !std::isfinite(mib)) return invalid("tier budgets must be 0 (automatic) or a positive number of MiB");
    }
    if (!(s.keep_ratio > 0 && s.keep_ratio <= 1)) return invalid("keep ratio must be in (0, 1], e.g. 0.2 for 20%");
    if (!(s.recent_ratio >= 0 && s.recent_ratio <= 1)) return invalid("recent ratio must be between 0 and 1");
    if (s.sink_tokens > 1024) return invalid("sink tokens must be at most 1024");
    if (s.obs_window == 0 || s.obs_window > 4096) return invalid("the SnapKV observation window must be 1 to 4096 tokens");
    if (s.pool_kernel == 0 || s.pool_kernel % 2 == 0 || s.pool_kernel > 63)
        return invalid("the SnapKV pooling kernel must be odd, 1 to 63");
    if (s.then != KvPolicy::none && s.then != KvPolicy::h2o) return invalid("after snapkv, decoding continues with none or h2o");
    for (uint32_t bits : {s.k_bits, s.v_bits}) {
        if (bits != 32 && bits != 16 && bits != 8 && bits != 4) return invalid("KV bits must be 16, 8 or 4 (32 for exact f32)");
    }
    for (uint32_t bits : {s.host_bits, s.disk_bits}) {
        if (bits != 0 && bits != 16 && bits != 8 && bits != 4)
            return invalid("RAM and disk tier bits must be 0 (as the device tier), 16, 8 or 4");
    }
    if (s.block_tokens < 4 || s.block_tokens > 256) return invalid("KV block size must be 4 to 256 tokens");
    if (s.policy == KvPolicy::quest) {
        const uint32_t page = s.quest_page_tokens();
        if (page == 0 || s.block_tokens % page != 0 || s.block_tokens / page > 32) {
            return invalid("the Quest page (" + std::to_string(s.quest_page) + " tokens) must divide the KV block (" +
                           std::to_string(s.block_tokens) + " tokens) into at most 32 pages");
        }
    }
    if (s.prefetch_layers > 2) return invalid("prefetch depth must be 0 (none), 1 (the next layer) or 2 (the next two layers)");
    if (s.residual_tokens > (1u << 20)) return invalid("the full-precision window must be at most 1M tokens");
    if (s.policy != KvPolicy::none && s.policy != KvPolicy::quest && s.budget_tokens == 0 && s.keep_ratio >= 1) {
        return invalid("a keep ratio of 100% evicts nothing: choose policy none");
    }
    // Warm-up.
    if (s.warmup_tokens > (1u << 20)) {
        return invalid("the warm-up must be 0 to 1048576 tokens (got " + std::to_string(s.warmup_tokens) + ")");
    }
    // Any shape goes with any policy: none and quest evict nothing and streaming keeps the
    // same window in every layer, so for them every shape is uniform (describe omits it).
    if (kv_layer_budget_name(s.layer_budget) == "?") return invalid("the layer budget must be uniform, pyramid or inverse");
    return {};
}

std::string describe(const KvSettings & s) {
    char buf[160];
    std::string out(kv_policy_name(s.policy));
    if (s.policy != KvPolicy::none && s.policy != KvPolicy::quest) {
        if (s.budget_tokens > 0) {
            std::snprintf(buf, sizeof buf, " %u tokens", s.budget_tokens);
        } else {
            std::snprintf(buf, sizeof buf, " %.0f%%", s.keep_ratio * 100);
        }
        out += buf;
        if (s.policy == KvPolicy::h2o || s.policy == KvPolicy::random) {
            std::snprintf(buf, sizeof buf, " (recent %.0f%%, %u sinks)", s.recent_ratio * 100, s.sink_tokens);
            out += buf;
        } else {
            std::snprintf(buf, sizeof buf, " (%u sinks)", s.sink_tokens);
            out += buf;
        }
    }
    if (s.policy == KvPolicy::quest) {
        if (s.quest_pages > 0) {
            std::snprintf(buf, sizeof buf, " %u pages of %u tokens per head", s.quest_pages, s.quest_page_tokens());
        } else {
            std::snprintf(buf, sizeof buf, " (%.0f%% read per token)", s.keep_ratio * 100);
        }
        out += buf;
    }
    if (s.policy == KvPolicy::snapkv && s.then == KvPolicy::h2o) out += " then h2o";
    const bool shaped = s.policy == KvPolicy::h2o || s.policy == KvPolicy::snapkv || s.policy == KvPolicy::random;
    if (shaped && s.layer_budget != KvLayerBudget::uniform) out += ", " + std::string(kv_layer_budget_name(s.layer_budget)) + " layers";
    // The warm-up, where there is something for it to delay: eviction or narrower codecs.
    const bool evicts = s.policy != KvPolicy::none && s.policy != KvPolicy::quest;
    const bool narrows = s.k_codec() > KvCodec::f16 || s.v_codec() > KvCodec::f16 || s.host_bits != 0 || s.disk_bits != 0;
    if ((evicts || narrows) && s.warmup_tokens == 0) out += ", no warm-up";
    if ((evicts || narrows) && s.warmup_tokens != 0) {
        out += ", warm-up " + std::to_string(s.warmup_tokens) + " tokens";
        if (s.policy == KvPolicy::streaming) out += " (at most the context)";
    }
    out += ", K " + std::string(kv_codec_name(s.k_codec())) + " / V " + std::string(kv_codec_name(s.v_codec()));
    if (s.host_bits != 0) out += ", RAM " + std::string(kv_codec_name(codec_for_bits(s.host_bits)));
    if (s.disk_bits != 0) out += ", disk " + std::string(kv_codec_name(codec_for_bits(s.disk_bits)));
    if (s.demotion != KvDemotion::cycle) out += ", " + std::string(kv_demotion_name(s.demotion)) + " demotion";
    if (s.prefetch_layers != 1) out += ", prefetch " + std::to_string(s.prefetch_layers);
    if (s.adapt) out += ", automatic";
    return out;
}

}  // namespace lr
