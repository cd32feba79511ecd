#pragma once
// What the KV cache's health monitor found, as plain values: each finding has a severity, a
// plain-words message and, when it ran a repair, what the repair did. Carried in KvStats
// (so the stats JSON, --kv-stats and the cache panel show them) and printed by
// `longread-cli health`. The checks themselves are kvcache/kv_health.h.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lr {

// Named in the stats JSON and by `longread-cli health --json`: never rename.
enum class KvHealthSeverity : uint8_t { info, warning, critical };

// The check a finding comes from (named in JSON: never rename).
enum class KvHealthCheck : uint8_t { memory, disk_space, fragmentation, prefix_cache, faults };

struct KvHealthFinding {
    KvHealthCheck check = KvHealthCheck::memory;
    KvHealthSeverity severity = KvHealthSeverity::info;
    std::string message;  // what is wrong (or fine), in plain words
    std::string repair;   // what was done about it; empty: nothing (not needed, or not safe)
};

std::string_view kv_health_severity_name(KvHealthSeverity severity);
std::string_view kv_health_check_name(KvHealthCheck check);

// The most severe finding's severity (info when there are none).
KvHealthSeverity worst_severity(const std::vector<KvHealthFinding> & findings);

// [{"check":"disk_space","severity":"warning","message":"...","repair":"..."}, ...]
std::string to_json(const std::vector<KvHealthFinding> & findings);
// One line a finding: "  warning  disk space: ... (repaired: ...)".
std::string to_text(const std::vector<KvHealthFinding> & findings);

}  // namespace lr
