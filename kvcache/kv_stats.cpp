#include "engine/api/kv_stats.h"

#include <algorithm>
#include <cstdio>

#include "engine/common/json_escape.h"

namespace lr {

std::string_view kv_layer_kind_name(KvLayerKind kind) {
    switch (kind) {
        case KvLayerKind::full: return "full";
        case KvLayerKind::sliding_window: return "sliding_window";
        case KvLayerKind::shared: return "shared";
        case KvLayerKind::recurrent: return "recurrent";
    }
    return "?";
}

std::string to_json(const KvStats & s) {
    std::string out = "{\"tiers\":[";
    bool first = true;
    for (const KvTierStats & t : s.tiers) {
        if (!t.present) continue;
        char buf[256];
        std::snprintf(
            buf, sizeof buf,
            "%s{\"name\":\"%s\",\"used_bytes\":%llu,\"capacity_bytes\":%llu,\"blocks\":%llu,\"bytes_in\":%llu,\"bytes_out\":%llu}",
            first ? "" : ",", t.name, (unsigned long long)t.used_bytes, (unsigned long long)t.capacity_bytes, (unsigned long long)t.blocks,
            (unsigned long long)t.bytes_in, (unsigned long long)t.bytes_out);
        out += buf;
        first = false;
    }
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "],\"block_reads\":%llu,\"block_hits\":%llu,\"hit_rate\":%.6f,\"bytes_moved\":%llu,\"prefetches\":%llu,"
                  "\"prefetch_hits\":%llu,\"demotions\":%llu,\"promotions\":%llu,\"prefix_lookups\":%llu,\"prefix_hits\":%llu,"
                  "\"restored_tokens\":%llu,\"prefill_ms\":%.3f,\"prefill_ms_saved\":%.3f,\"tokens_seen\":%llu,\"tokens_kept\":%llu,"
                  "\"evicted_tokens\":%llu,\"narrowed_blocks\":%llu,\"rows_read\":%llu,\"mirror_bytes\":%llu,\"faults\":%llu,",
                  (unsigned long long)s.block_reads, (unsigned long long)s.block_hits, s.hit_rate(), (unsigned long long)s.bytes_moved,
                  (unsigned long long)s.prefetches, (unsigned long long)s.prefetch_hits, (unsigned long long)s.demotions,
                  (unsigned long long)s.promotions, (unsigned long long)s.prefix_lookups, (unsigned long long)s.prefix_hits,
                  (unsigned long long)s.restored_tokens, s.prefill_ms, s.prefill_ms_saved, (unsigned long long)s.tokens_seen,
                  (unsigned long long)s.tokens_kept, (unsigned long long)s.evicted_tokens, (unsigned long long)s.narrowed_blocks,
                  (unsigned long long)s.rows_read, (unsigned long long)s.mirror_bytes, (unsigned long long)s.faults);
    out += buf;
    out += "\"shared_blocks\":" + std::to_string(s.shared_blocks) + ",\"restored_states\":" + std::to_string(s.restored_states) +
           ",\"sequences\":" + std::to_string(s.n_sequences) + ",\"layer_kinds\":[";
    for (size_t i = 0; i < s.layer_kinds.size(); ++i) {
        const KvLayerKindStats & k = s.layer_kinds[i];
        std::snprintf(buf, sizeof buf,
                      "%s{\"kind\":\"%s\",\"layers\":%u,\"bytes\":%llu,\"tokens_kept\":%llu,\"snapshots\":%llu,\"snapshot_bytes\":%llu}",
                      i ? "," : "", kv_layer_kind_name(k.kind).data(), k.n_layers, (unsigned long long)k.bytes,
                      (unsigned long long)k.tokens_kept, (unsigned long long)k.snapshots, (unsigned long long)k.snapshot_bytes);
        out += buf;
    }
    out += "],";
    // Monitoring.
    std::snprintf(buf, sizeof buf, "\"tokens_written\":%llu,\"retention_ratio\":%.6f,\"evictions_per_1k\":%.3f,\"refusals\":%llu,",
                  (unsigned long long)s.tokens_written, s.retention_ratio, s.evictions_per_1k, (unsigned long long)s.refusals);
    out += buf;
    out += "\"selection_ms\":{";
    for (auto it = s.selection_ms.begin(); it != s.selection_ms.end(); ++it) {
        std::snprintf(buf, sizeof buf, "%s\"%s\":%.3f", it == s.selection_ms.begin() ? "" : ",", json_escape(it->first).c_str(),
                      it->second);
        out += buf;
    }
    out += "},\"policy\":\"" + json_escape(s.policy) + "\",\"last_fault\":\"" + json_escape(s.last_fault) + "\"";
    // Moves, waits and the adaptive mode's decisions.
    std::snprintf(buf, sizeof buf, ",\"move_ms\":%.3f,\"fetch_wait_ms\":%.3f,\"adapt_decisions\":[", s.move_ms, s.fetch_wait_ms);
    out += buf;
    for (size_t i = 0; i < s.adapt_decisions.size(); ++i) {
        const KvAdaptDecision & d = s.adapt_decisions[i];
        std::snprintf(buf, sizeof buf, "%s{\"at_s\":%.3f,\"ubatch\":%llu,", i ? "," : "", d.at_s, (unsigned long long)d.ubatch);
        out += buf;
        out += "\"what\":\"" + json_escape(d.what) + "\",\"why\":\"" + json_escape(d.why) + "\"}";
    }
    out += "]";
    // Health monitor.
    out += ",\"health\":{\"checks\":" + std::to_string(s.health_checks) + ",\"repairs\":" + std::to_string(s.health_repairs) +
           ",\"tier_faults\":{";
    constexpr const char * kTierNames[kKvTierCount] = {"device", "host", "disk"};
    for (size_t i = 0; i < s.tiers.size(); ++i) {
        out += std::string(i ? "," : "") + "\"" + kTierNames[i] + "\":" + std::to_string(s.tiers[i].faults);
    }
    out += "},\"findings\":" + to_json(s.health) + "}}";
    return out;
}

std::string to_text(const KvStats & s) {
    std::string out;
    char buf[256];
    for (const KvTierStats & t : s.tiers) {
        if (!t.present) {
            std::snprintf(buf, sizeof buf, "  %-6s absent\n", t.name);
        } else {
            std::snprintf(buf, sizeof buf, "  %-6s %10.2f / %10.2f MiB, %llu blocks, in %.2f MiB, out %.2f MiB\n", t.name,
                          double(t.used_bytes) / (1 << 20), double(t.capacity_bytes) / (1 << 20), (unsigned long long)t.blocks,
                          double(t.bytes_in) / (1 << 20), double(t.bytes_out) / (1 << 20));
        }
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "  hits %llu / %llu block reads (%.1f%%), moved %.2f MiB, prefetched %llu (%llu in time)\n",
                  (unsigned long long)s.block_hits, (unsigned long long)s.block_reads, 100.0 * s.hit_rate(),
                  double(s.bytes_moved) / (1 << 20), (unsigned long long)s.prefetches, (unsigned long long)s.prefetch_hits);
    out += buf;
    if (s.narrowed_blocks) {
        std::snprintf(buf, sizeof buf, "  %llu blocks re-encoded to a lower tier's codec\n", (unsigned long long)s.narrowed_blocks);
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "  prefix cache: %llu lookups, %llu tokens restored (saved ~%.0f ms of %.0f ms prefill)\n",
                  (unsigned long long)s.prefix_lookups, (unsigned long long)s.restored_tokens, s.prefill_ms_saved, s.prefill_ms);
    out += buf;
    if (s.restored_states) {
        std::snprintf(buf, sizeof buf, "  recurrent states restored with them: %llu\n", (unsigned long long)s.restored_states);
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "  policy %s: %llu tokens seen, %llu kept, %llu evicted\n", s.policy.c_str(),
                  (unsigned long long)s.tokens_seen, (unsigned long long)s.tokens_kept, (unsigned long long)s.evicted_tokens);
    out += buf;
    // Monitoring.
    std::snprintf(buf, sizeof buf,
                  "  retention %.1f%% (positions kept of the tokens given, mean over sequences), %.1f evictions per 1,000 tokens "
                  "written, %llu ubatches refused (would not fit)\n",
                  100 * s.retention_ratio, s.evictions_per_1k, (unsigned long long)s.refusals);
    out += buf;
    for (const auto & [policy, ms] : s.selection_ms) {
        std::snprintf(buf, sizeof buf, "  time selecting what to evict, %s: %.1f ms\n", policy.c_str(), ms);
        out += buf;
    }
    for (const KvLayerKindStats & k : s.layer_kinds) {
        if (k.kind == KvLayerKind::recurrent) {
            std::snprintf(buf, sizeof buf,
                          "  %s layers: %u, %.2f MiB, a fixed-size state per layer and sequence, %llu snapshots (%.2f MiB)\n",
                          kv_layer_kind_name(k.kind).data(), k.n_layers, double(k.bytes) / (1 << 20), (unsigned long long)k.snapshots,
                          double(k.snapshot_bytes) / (1 << 20));
        } else {
            std::snprintf(buf, sizeof buf, "  %s layers: %u, %.2f MiB, %llu positions kept per layer\n", kv_layer_kind_name(k.kind).data(),
                          k.n_layers, double(k.bytes) / (1 << 20), (unsigned long long)k.tokens_kept);
        }
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "  block metadata in RAM: %.2f MiB (positions, attention mass, key bounds)\n",
                  double(s.mirror_bytes) / (1 << 20));
    out += buf;
    if (s.faults) {
        std::snprintf(buf, sizeof buf, "  faults handled: %llu (last: %s)\n", (unsigned long long)s.faults, s.last_fault.c_str());
        out += buf;
    }
    if (s.move_ms > 0 || s.fetch_wait_ms > 0) {
        const double mib_s = s.move_ms > 0 ? double(s.bytes_moved) / (1 << 20) / (s.move_ms / 1000) : 0;
        std::snprintf(buf, sizeof buf, "  moving blocks %.1f ms (%.0f MiB/s), waiting for fetches %.1f ms\n", s.move_ms, mib_s,
                      s.fetch_wait_ms);
        out += buf;
    }
    for (const KvAdaptDecision & d : s.adapt_decisions) {
        out += "  automatic, ubatch " + std::to_string(d.ubatch) + ": " + d.what + " (" + d.why + ")\n";
    }
    // Health monitor.
    if (s.health_checks) {
        std::snprintf(buf, sizeof buf, "  health: %llu checks, %llu repairs%s\n", (unsigned long long)s.health_checks,
                      (unsigned long long)s.health_repairs, s.health.empty() ? ", nothing to report" : "");
        out += buf;
        out += to_text(s.health);
    }
    return out;
}

// ---- Health findings (engine/api/kv_health.h) ----

std::string_view kv_health_severity_name(KvHealthSeverity severity) {
    switch (severity) {
        case KvHealthSeverity::info: return "info";
        case KvHealthSeverity::warning: return "warning";
        case KvHealthSeverity::critical: return "critical";
    }
    return "?";
}

std::string_view kv_health_check_name(KvHealthCheck check) {
    switch (check) {
        case KvHealthCheck::memory: return "memory";
        case KvHealthCheck::disk_space: return "disk_space";
        case KvHealthCheck::fragmentation: return "fragmentation";
        case KvHealthCheck::prefix_cache: return "prefix_cache";
        case KvHealthCheck::faults: return "faults";
    }
    return "?";
}

KvHealthSeverity worst_severity(const std::vector<KvHealthFinding> & findings) {
    KvHealthSeverity worst = KvHealthSeverity::info;
    for (const KvHealthFinding & f : findings) worst = std::max(worst, f.severity);
    return worst;
}

std::string to_json(const std::vector<KvHealthFinding> & findings) {
    std::string out = "[";
    for (size_t i = 0; i < findings.size(); ++i) {
        const KvHealthFinding & f = findings[i];
        out += std::string(i ? "," : "") + "{\"check\":\"" + std::string(kv_health_check_name(f.check)) + "\",\"severity\":\"" +
               std::string(kv_health_severity_name(f.severity)) + "\",\"message\":\"" + json_escape(f.message) + "\",\"repair\":\"" +
               json_escape(f.repair) + "\"}";
    }
    return out + "]";
}

std::string to_text(const std::vector<KvHealthFinding> & findings) {
    std::string out;
    for (const KvHealthFinding & f : findings) {
        std::string check(kv_health_check_name(f.check));
        for (char & c : check) c = c == '_' ? ' ' : c;
        char head[64];
        std::snprintf(head, sizeof head, "  %-8s %s: ", kv_health_severity_name(f.severity).data(), check.c_str());
        out += head + f.message;
        if (!f.repair.empty()) out += " (repaired: " + f.repair + ")";
        out += "\n";
    }
    return out;
}

}  // namespace lr
