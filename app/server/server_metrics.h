#pragma once
// What /metrics reports, in Prometheus' text format (names prefixed longread_): requests
// by endpoint and status, tokens, latency histograms, the queue, and the KV cache's stats.
// Thread-safe: HTTP threads and the engine thread record, a scrape renders.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/api/kv_stats.h"

namespace lr::server {

// Cumulative buckets in seconds, as Prometheus keeps them.
class LatencyHistogram {
public:
    static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    void observe(double seconds);
    std::string render(const std::string & name, const std::string & help) const;

private:
    std::array<uint64_t, kBounds.size()> counts_{};
    uint64_t count_ = 0;
    double sum_ = 0;
};

struct QueueFigures {
    uint32_t running = 0;
    uint32_t queued = 0;
};

class ServerMetrics {
public:
    void count_request(const std::string & endpoint, int status);
    void add_tokens(uint64_t prompt, uint64_t generated);
    void count_refusal();  // a request whose KV would never fit
    void observe_time_to_first_token(double seconds);
    void observe_inter_token(double seconds);

    std::string render(const QueueFigures & queue, const KvStats & kv) const;
    // Completions (chat and text) answered with a 2xx status so far.
    uint64_t completions_served() const;

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t prompt_tokens_ = 0;
    uint64_t generated_tokens_ = 0;
    uint64_t refusals_ = 0;
    LatencyHistogram time_to_first_token_;
    LatencyHistogram inter_token_;
};

}  // namespace lr::server
