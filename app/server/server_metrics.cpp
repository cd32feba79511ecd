#include "server_metrics.h"

#include <cstdio>

namespace lr::server {
namespace {

std::string number(double x, const char * format = "%.17g") {
    char buf[40];
    std::snprintf(buf, sizeof buf, format, x);
    return buf;
}

std::string header(const std::string & name, const char * type, const std::string & help) {
    return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::string one(const std::string & name, const char * type, const std::string & help, double value) {
    return header(name, type, help) + name + " " + number(value) + "\n";
}

}  // namespace

void LatencyHistogram::observe(double seconds) {
    for (size_t i = 0; i < kBounds.size(); ++i) {
        if (seconds <= kBounds[i]) ++counts_[i];
    }
    ++count_;
    sum_ += seconds;
}

std::string LatencyHistogram::render(const std::string & name, const std::string & help) const {
    std::string out = header(name, "histogram", help);
    for (size_t i = 0; i < kBounds.size(); ++i) {
        out += name + "_bucket{le=\"" + number(kBounds[i], "%g") + "\"} " + std::to_string(counts_[i]) + "\n";
    }
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
    out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
    return out;
}

void ServerMetrics::count_request(const std::string & endpoint, int status) {
    std::lock_guard lock(mutex_);
    ++requests_[{endpoint, status}];
}

void ServerMetrics::add_tokens(uint64_t prompt, uint64_t generated) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += prompt;
    generated_tokens_ += generated;
}

void ServerMetrics::count_refusal() {
    std::lock_guard lock(mutex_);
    ++refusals_;
}

void ServerMetrics::observe_time_to_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    time_to_first_token_.observe(seconds);
}

void ServerMetrics::observe_inter_token(double seconds) {
    std::lock_guard lock(mutex_);
    inter_token_.observe(seconds);
}

uint64_t ServerMetrics::completions_served() const {
    std::lock_guard lock(mutex_);
    uint64_t n = 0;
    for (const auto & [key, count] : requests_) {
        const bool completion = key.first == "/v1/chat/completions" || key.first == "/v1/completions";
        if (completion && key.second >= 200 && key.second < 300) n += count;
    }
    return n;
}

std::string ServerMetrics::render(const QueueFigures & queue, const KvStats & kv) const {
    std::lock_guard lock(mutex_);
    std::string out = header("longread_requests_total", "counter", "HTTP requests by endpoint and status");
    for (const auto & [key, count] : requests_) {
        out += "longread_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
               std::to_string(count) + "\n";
    }
    out += one("longread_prompt_tokens_total", "counter", "prompt tokens evaluated", double(prompt_tokens_));
    out += one("longread_generated_tokens_total", "counter", "tokens generated", double(generated_tokens_));
    out += time_to_first_token_.render("longread_time_to_first_token_seconds", "from arrival to the first generated token");
    out += inter_token_.render("longread_inter_token_latency_seconds", "between consecutive generated tokens");
    out += one("longread_sequences_running", "gauge", "sequences generating now", queue.running);
    out += one("longread_sequences_queued", "gauge", "requests waiting for the engine", queue.queued);
    out += one("longread_refusals_total", "counter", "requests refused because their KV would never fit the budgets", double(refusals_));

    out += header("longread_kv_bytes_used", "gauge", "KV bytes held per tier");
    for (const KvTierStats & t : kv.tiers) {
        if (t.present) out += "longread_kv_bytes_used{tier=\"" + std::string(t.name) + "\"} " + std::to_string(t.used_bytes) + "\n";
    }
    out += header("longread_kv_bytes_capacity", "gauge", "KV budget per tier");
    for (const KvTierStats & t : kv.tiers) {
        if (t.present) out += "longread_kv_bytes_capacity{tier=\"" + std::string(t.name) + "\"} " + std::to_string(t.capacity_bytes) + "\n";
    }
    out += one("longread_kv_block_reads_total", "counter", "KV blocks attention needed", double(kv.block_reads));
    out += one("longread_kv_block_hits_total", "counter", "KV blocks already on the device tier", double(kv.block_hits));
    out += one("longread_kv_hit_rate", "gauge", "block hits over block reads", kv.hit_rate());
    out += one("longread_kv_bytes_moved_total", "counter", "KV bytes moved between tiers", double(kv.bytes_moved));
    out += one("longread_kv_prefetch_hits_total", "counter", "prefetched blocks ready before use", double(kv.prefetch_hits));
    out += one("longread_kv_evicted_tokens_total", "counter", "positions the cache policy evicted", double(kv.evicted_tokens));
    out += one("longread_kv_prefix_lookups_total", "counter", "prefix cache lookups", double(kv.prefix_lookups));
    out += one("longread_kv_prefix_hits_total", "counter", "blocks restored from the prefix cache", double(kv.prefix_hits));
    out += one("longread_kv_restored_tokens_total", "counter", "tokens restored or shared instead of computed", double(kv.restored_tokens));
    out += one("longread_kv_restored_states_total", "counter", "recurrent states restored with them (hybrid models)",
               double(kv.restored_states));
    out += one("longread_kv_faults_total", "counter", "tier faults handled", double(kv.faults));
    // Monitoring: how hard the cache policy works.
    out += one("longread_kv_tokens_written_total", "counter", "positions written to the cache (computed or restored)",
               double(kv.tokens_written));
    out += one("longread_kv_retention_ratio", "gauge", "positions kept over tokens given, mean over the sequences held",
               kv.retention_ratio);
    out += one("longread_kv_evictions_per_1k_tokens", "gauge", "positions evicted per layer and KV head per 1,000 tokens written",
               kv.evictions_per_1k);
    out += one("longread_kv_refusals_total", "counter", "ubatches the cache refused because their tokens would not fit",
               double(kv.refusals));
    out += header("longread_kv_selection_seconds_total", "counter", "time the cache policy spent selecting what to evict");
    for (const auto & [policy, ms] : kv.selection_ms) {
        out += "longread_kv_selection_seconds_total{policy=\"" + policy + "\"} " + number(ms / 1000) + "\n";
    }
    return out;
}

}  // namespace lr::server
