#include "kvcache/kv_adapter.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

namespace lr {

namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / kMiB);
    return buf;
}

std::string percent(double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
    return buf;
}

}  // namespace

struct KvAdapter::Window {
    uint64_t ubatches = 0;
    uint64_t block_reads = 0;
    uint64_t block_hits = 0;
    uint64_t bytes_moved = 0;
    double move_ms = 0;
    double fetch_wait_ms = 0;

    Window(const KvAdaptSample & from, const KvAdaptSample & to)
        : ubatches(to.ubatches - from.ubatches), block_reads(to.block_reads - from.block_reads),
          block_hits(to.block_hits - from.block_hits), bytes_moved(to.bytes_moved - from.bytes_moved), move_ms(to.move_ms - from.move_ms),
          fetch_wait_ms(to.fetch_wait_ms - from.fetch_wait_ms) {}

    double hit_rate() const { return block_reads == 0 ? 1.0 : double(block_hits) / double(block_reads); }
    // "hit rate 41% over 4 ubatches, 7.9 MiB moved at 2100 MiB/s, 3.1 ms waiting for fetches"
    std::string describe() const {
        char buf[160];
        const double mib_s = move_ms > 0 ? double(bytes_moved) / kMiB / (move_ms / 1000) : 0;
        std::snprintf(buf, sizeof buf, "hit rate %s over %llu ubatches, %s moved at %.0f MiB/s, %.1f ms waiting for fetches",
                      percent(hit_rate()).c_str(), (unsigned long long)ubatches, mib(bytes_moved).c_str(), mib_s, fetch_wait_ms);
        return buf;
    }
};

KvAdapter::KvAdapter(const KvAdaptPlan & plan, const KvAdaptChoice & start) : plan_(plan), choice_(start) {}

template <typename T, typename Same>
bool KvAdapter::confirmed(Pending<T> & pending, const T & current, const T & proposal, Same same) {
    if (same(proposal, current)) {
        pending = {};
        return false;
    }
    pending.windows = pending.value && same(proposal, *pending.value) ? pending.windows + 1 : 1;
    pending.value = proposal;
    if (pending.windows < kConfirmations) return false;
    pending = {};
    return true;
}

uint64_t KvAdapter::device_target(const KvAdaptSample & now, const Window & w) const {
    const uint64_t total = plan_.device_bytes + plan_.host_bytes;
    // What the blocks held need on the device, with room for the layers fetched ahead and
    // for growth (every token adds to them).
    const uint64_t need = now.held_bytes + uint64_t(choice_.prefetch_layers + 1) * now.layer_bytes;
    const uint64_t target = std::clamp(need + need / 4, plan_.device_bytes, total);
    // Grow only on evidence: blocks were missing from the device in this window.
    if (target > choice_.device_bytes && w.block_hits == w.block_reads) return choice_.device_bytes;
    return target;
}

uint32_t KvAdapter::prefetch_target(const KvAdaptSample & now, const Window & w) const {
    if (now.layer_bytes == 0) return choice_.prefetch_layers;
    // Layers of the longest sequence the device holds: two ahead need room for four (the
    // one computing, the two fetched, slack), one ahead for two.
    const uint64_t room = choice_.device_bytes == 0 ? UINT64_MAX : choice_.device_bytes / now.layer_bytes;
    const uint32_t depth = room >= 4 ? 2 : room >= 2 ? 1 : 0;
    // Deeper only when blocks move and the engine waited for them: nothing to gain otherwise.
    if (depth > choice_.prefetch_layers && w.bytes_moved == 0 && w.fetch_wait_ms == 0) return choice_.prefetch_layers;
    return depth;
}

std::vector<KvAdaptDecision> KvAdapter::observe(const KvAdaptSample & now) {
    if (!window_start_) {
        window_start_ = now;
        return {};
    }
    if (now.ubatches - window_start_->ubatches < kWindowUbatches) return {};
    const Window w(*window_start_, now);
    window_start_ = now;
    std::vector<KvAdaptDecision> out;
    auto decide = [&](std::string what, std::string why) { out.push_back({now.at_s, now.ubatches, std::move(what), std::move(why)}); };

    if (now.context_tokens <= kChatTokens) {
        workload_ = Workload::chat;
    } else if (now.context_tokens >= kDocumentTokens) {
        workload_ = Workload::document;
    }

    if (plan_.shared_memory && plan_.device_bytes > 0 && plan_.host_bytes > 0) {
        const uint64_t total = plan_.device_bytes + plan_.host_bytes;
        // Within a quarter of the device budget is the same budget: blocks grow with every
        // token, and the budget follows them in a few steps, not at each.
        const uint64_t band = choice_.device_bytes / 4;
        const uint64_t target = device_target(now, w);
        auto same = [band](uint64_t a, uint64_t b) { return (a > b ? a - b : b - a) <= band; };
        if (confirmed(device_, choice_.device_bytes, target, same)) {
            const KvAdaptChoice before = choice_;
            choice_.device_bytes = target;
            choice_.host_bytes = total - target;
            decide("device " + mib(before.device_bytes) + " -> " + mib(choice_.device_bytes) + ", host " + mib(before.host_bytes) + " -> " +
                       mib(choice_.host_bytes),
                   w.describe() + "; the blocks held take " + mib(now.held_bytes) + " of the " + mib(total) + " planned for RAM");
        }
    }

    const uint32_t depth = prefetch_target(now, w);
    if (confirmed(prefetch_, choice_.prefetch_layers, depth, std::equal_to<uint32_t>())) {
        const uint32_t before = choice_.prefetch_layers;
        choice_.prefetch_layers = depth;
        const uint64_t room = choice_.device_bytes == 0 ? 0 : choice_.device_bytes / now.layer_bytes;
        decide("prefetch " + std::to_string(before) + " -> " + std::to_string(depth) + " layers ahead",
               "a layer holds " + mib(now.layer_bytes) +
                   (room ? ", the device " + std::to_string(room) + " of them" : std::string(", the device is unbounded")) + "; " +
                   w.describe());
    }

    if (plan_.adapts_recent && workload_ != Workload::unknown) {
        const bool chat = workload_ == Workload::chat;
        const double recent = chat ? kChatRecent : kDocumentRecent;
        if (confirmed(recent_, choice_.recent_ratio, recent, std::equal_to<double>())) {
            const double before = choice_.recent_ratio;
            choice_.recent_ratio = recent;
            decide("recent window " + percent(before) + " -> " + percent(recent) + " of the budget",
                   std::string(chat ? "short chat: " : "long document: ") + std::to_string(now.context_tokens) + " tokens held");
        }
    }
    return out;
}

}  // namespace lr
