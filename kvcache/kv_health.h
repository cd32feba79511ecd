#pragma once
// The KV cache's health monitor: looks ahead for what would otherwise surface as a fault
// (memory the tier budgets count on but the machine no longer has, a disk filling up, spill
// files full of holes, a prefix cache grown old or over its budget, a tier that keeps
// failing) and runs the repairs that cannot change an answer:
//
//   memory         free RAM (or VRAM) below the low-water share, or less than the tiers may
//                  still grow by: the memory tiers give back the slots they keep for reuse
//   disk_space     free disk under the cache directory below the low-water mark: the oldest
//                  prefix-cache entries are dropped and their disk space freed; the spill
//                  files are compacted
//   fragmentation  the spill files' free slots scattered among used ones (or as many as the
//                  used ones): compacted (blocks moved so that the used slots come first, the
//                  files cut after them)
//   prefix_cache   its size and the age of its least recently used entry: entries beyond the
//                  budget or unused for longer than the age limit are dropped
//   faults         faults per tier since the last check: a disk tier still in use after one
//                  is disabled, its blocks moved up to RAM (one that no longer reads back is
//                  recomputed by the caller, as after any lost block)
//
// Placement is lossless and the prefix cache only saves work, so none of these changes a
// logit. The machine's readings come through HealthProbe, which tests replace.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/api/kv_health.h"
#include "engine/api/kv_stats.h"
#include "engine/backend/backend.h"

namespace lr {

class KvCache;

struct HostMemoryReading {
    uint64_t total_bytes = 0;      // MemTotal
    uint64_t available_bytes = 0;  // MemAvailable
};

struct DiskSpaceReading {
    uint64_t total_bytes = 0;
    uint64_t free_bytes = 0;  // what an unprivileged process may still write
};

// Where the monitor reads the machine.
class HealthProbe {
public:
    virtual ~HealthProbe() = default;
    virtual std::optional<HostMemoryReading> host_memory() = 0;  // nullopt: unknown
    // The file system of `dir` (or of its nearest existing parent); nullopt: unknown.
    virtual std::optional<DiskSpaceReading> disk_space(const std::string & dir) = 0;
    // The backend's own memory (VRAM); total 0: it has none (the CPU backend uses RAM).
    virtual BackendMemory device_memory() = 0;
    virtual int64_t now_us() = 0;  // wall clock, µs since the epoch (the prefix cache's ages)
};

// /proc/meminfo, statvfs and `backend`'s device_memory() (null: no device memory).
std::shared_ptr<HealthProbe> system_health_probe(Backend * backend);

struct KvHealthLimits {
    double memory_low_share = 0.05;  // free RAM (VRAM) below this share of the total: critical
    // Free disk below min(disk_low_water_bytes, disk_low_share of the file system): critical.
    uint64_t disk_low_water_bytes = uint64_t(1) << 30;
    double disk_low_share = 0.05;
    // Spill files with at least fragmented_min_free_slots free slots are compacted when
    // 1 - largest free run / free slots reaches `fragmentation`, or half their slots are free.
    double fragmentation = 0.5;
    uint64_t fragmented_min_free_slots = 16;
    int64_t prefix_max_age_s = 30 * 24 * 3600;  // prefix-cache entries unused longer are dropped (0: kept)
    // ... at most this many a check, so that one check never stalls the engine thread for
    // long (0.19 s for 4096 on a 2-core EPYC; docs/BENCHMARKS.md); the next checks go on.
    uint32_t prefix_max_drops = 4096;
    bool repair = true;  // false: report only
};

class KvHealthMonitor {
public:
    static constexpr int kIntervalMs = 5000;  // how often an engine checks its cache while it runs

    explicit KvHealthMonitor(std::shared_ptr<HealthProbe> probe, KvHealthLimits limits = {});

    // Every check on `cache`, with the repairs; engine thread, between ubatches, holding the
    // backend as for a ubatch (Model::backend_turn). The findings also go to the cache's
    // stats. After a check that disabled a tier, the caller recomputes from
    // take_lost_position, as after any lost block.
    std::vector<KvHealthFinding> check(KvCache & cache);
    // Without a cache (longread-cli health without a model): the disk under `dir` and the
    // prefix cache kept there, if there is one, against a disk budget of `disk_budget_bytes`.
    std::vector<KvHealthFinding> check_dir(const std::string & dir, uint64_t disk_budget_bytes);

    uint64_t repairs() const { return repairs_; }  // repairs run, every check together

private:
    class Run;

    std::shared_ptr<HealthProbe> probe_;
    KvHealthLimits limits_;
    uint64_t repairs_ = 0;
    std::array<uint64_t, kKvTierCount> faults_seen_{};  // each tier's fault count at the last check
    int64_t last_check_us_ = 0;
};

}  // namespace lr
