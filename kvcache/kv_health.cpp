#include "kvcache/kv_health.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/api/memory_plan.h"
#include "kvcache/kv_cache.h"
#include "kvcache/prefix_store.h"

namespace lr {
namespace {

class SystemProbe final : public HealthProbe {
public:
    explicit SystemProbe(Backend * backend) : backend_(backend) {}

    std::optional<HostMemoryReading> host_memory() override {
        std::ifstream meminfo("/proc/meminfo");
        HostMemoryReading r;
        std::string line;
        while (std::getline(meminfo, line)) {
            unsigned long long kb = 0;
            if (std::sscanf(line.c_str(), "MemTotal: %llu kB", &kb) == 1) r.total_bytes = kb * 1024;
            if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) r.available_bytes = kb * 1024;
        }
        if (r.total_bytes == 0) return std::nullopt;
        return r;
    }

    std::optional<DiskSpaceReading> disk_space(const std::string & dir) override {
        std::filesystem::path p(dir);
        std::error_code ec;
        while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
        struct statvfs vfs {};
        if (p.empty() || statvfs(p.c_str(), &vfs) != 0) return std::nullopt;
        return DiskSpaceReading{.total_bytes = uint64_t(vfs.f_blocks) * vfs.f_frsize, .free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize};
    }

    BackendMemory device_memory() override { return backend_ ? backend_->device_memory() : BackendMemory{}; }

    int64_t now_us() override {
        return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    }

private:
    Backend * backend_;
};

std::string percent(uint64_t part, uint64_t whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return buf;
}

std::string duration_words(int64_t seconds) {
    const int64_t days = seconds / 86400, hours = seconds / 3600, minutes = seconds / 60;
    if (days >= 2) return std::to_string(days) + " days";
    if (hours >= 2) return std::to_string(hours) + " hours";
    if (minutes >= 2) return std::to_string(minutes) + " minutes";
    return std::to_string(std::max<int64_t>(seconds, 0)) + " s";
}

std::string joined(const std::vector<std::string> & parts) {
    std::string out;
    for (const std::string & p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

}  // namespace

std::shared_ptr<HealthProbe> system_health_probe(Backend * backend) { return std::make_shared<SystemProbe>(backend); }

// One check: its findings and the repairs it ran.
class KvHealthMonitor::Run {
public:
    explicit Run(KvHealthMonitor & monitor) : m_(monitor), limits_(monitor.limits_), probe_(*monitor.probe_) {}

    std::vector<KvHealthFinding> findings;
    uint64_t repairs = 0;

    void add(KvHealthCheck check, KvHealthSeverity severity, std::string message, std::string repair = {}) {
        findings.push_back({.check = check, .severity = severity, .message = std::move(message), .repair = std::move(repair)});
    }

    // Faults per tier since the last check; a disk tier still in use after one is disabled.
    void faults(KvCache & cache, int64_t now_us) {
        const KvStats s = cache.stats();
        for (size_t i = 0; i < kKvTierCount; ++i) {
            const uint64_t n = s.tiers[i].faults;
            const uint64_t fresh = n - std::min(n, m_.faults_seen_[i]);
            m_.faults_seen_[i] = n;
            if (fresh == 0) continue;
            std::string message = "the " +
                                  std::string(i == 0   ? "device"
                                              : i == 1 ? "host"
                                                       : "disk") +
                                  " tier had " + std::to_string(fresh) + (fresh == 1 ? " fault" : " faults");
            if (m_.last_check_us_ > 0 && now_us > m_.last_check_us_) {
                char rate[64];
                std::snprintf(rate, sizeof rate, " in the last %s (%.1f a minute)",
                              duration_words((now_us - m_.last_check_us_) / 1000000).c_str(),
                              double(fresh) * 60e6 / double(now_us - m_.last_check_us_));
                message += rate;
            }
            if (!s.last_fault.empty()) message += "; the last: " + s.last_fault;
            if (i != size_t(KvTier::disk)) {
                add(KvHealthCheck::faults, KvHealthSeverity::warning, message);
            } else if (cache.disk_tier_enabled()) {
                std::string repair;
                if (limits_.repair) {
                    const uint32_t lost = cache.disable_disk_tier();
                    m_.faults_seen_[i] = cache.stats().tiers[i].faults;  // the blocks it lost are this finding's
                    ++repairs;
                    repair = "disabled the disk tier and moved its blocks up to RAM";
                    if (lost) repair += "; " + std::to_string(lost) + " blocks did not read back and are recomputed";
                }
                add(KvHealthCheck::faults, KvHealthSeverity::critical, message + ": a failing disk may lose more", repair);
            } else {
                add(KvHealthCheck::faults, KvHealthSeverity::warning, message + ": the disk tier is off, RAM holds what it would");
            }
        }
    }

    // Free RAM (and VRAM) against what the tiers may still take.
    void memory(KvCache & cache) {
        const KvStats s = cache.stats();
        auto room = [&](KvTier t) {
            const KvTierStats & r = s.tiers[size_t(t)];
            return r.present && r.capacity_bytes > r.used_bytes ? r.capacity_bytes - r.used_bytes : uint64_t(0);
        };
        const BackendMemory device = probe_.device_memory();
        const bool device_in_ram = device.total_bytes == 0;
        if (const std::optional<HostMemoryReading> ram = probe_.host_memory()) {
            const uint64_t may_grow = room(KvTier::host) + (device_in_ram ? room(KvTier::device) : 0);
            const std::vector<KvTier> tiers = device_in_ram ? std::vector{KvTier::host, KvTier::device} : std::vector{KvTier::host};
            pressure(cache, "RAM", ram->available_bytes, ram->total_bytes, may_grow, tiers,
                     "lower the host budget (--kv-host-mib) or close other programs");
        }
        if (!device_in_ram) {
            pressure(cache, "device memory", device.free_bytes, device.total_bytes, room(KvTier::device), {KvTier::device},
                     "lower the device budget (--kv-device-mib) or the GPU layers");
        }
    }

    // Free disk under the cache directory: below the low-water mark, the oldest prefix-cache
    // entries go and the spill files are compacted.
    void disk_space(const std::string & dir, uint64_t budget, uint64_t used, PrefixStore * store, KvCache * cache) {
        const std::optional<DiskSpaceReading> d = probe_.disk_space(dir);
        if (!d) {
            add(KvHealthCheck::disk_space, KvHealthSeverity::warning, "the free space of " + dir + " cannot be read");
            return;
        }
        const uint64_t low_water = std::min(limits_.disk_low_water_bytes, uint64_t(limits_.disk_low_share * double(d->total_bytes)));
        if (d->free_bytes < low_water) {
            std::vector<std::string> done;
            if (limits_.repair && store) {
                const uint64_t deficit = low_water - d->free_bytes;
                const uint64_t before = store->used_bytes();
                store->evict_to(before > deficit ? before - deficit : 0);
                const uint64_t dropped = before - std::min(before, store->used_bytes());
                if (dropped > 0) {
                    const Status freed = store->release_free_space();
                    done.push_back("dropped the oldest prefix-cache entries (" + format_bytes(dropped) + ")" +
                                   (freed.ok() ? "" : ", but their space stays taken: " + freed.message()));
                    ++repairs;
                }
            }
            if (limits_.repair && cache && cache->disk_fragmentation().n_free_slots > 0) done.push_back(compact(*cache));
            add(KvHealthCheck::disk_space, KvHealthSeverity::critical,
                "only " + format_bytes(d->free_bytes) + " is free on the disk of " + dir + ", below the low-water mark of " +
                    format_bytes(low_water) + ": spilled blocks and the prefix cache may fail to write",
                joined(done));
        } else if (budget > used && budget - used > d->free_bytes - low_water) {
            add(KvHealthCheck::disk_space, KvHealthSeverity::warning,
                "the disk budget leaves room for " + format_bytes(budget - used) + " more, but " + dir + " has " +
                    format_bytes(d->free_bytes) + " free (low-water mark " + format_bytes(low_water) +
                    "): lower --kv-disk-mib or free disk space");
        }
    }

    // Free slots scattered among used ones in the spill files.
    void fragmentation(KvCache & cache) {
        const TierFragmentation f = cache.disk_fragmentation();
        // Scattered free slots, or as many free slots as used ones (disk held for nothing).
        const bool wasteful = f.n_free_slots * 2 >= f.n_slots;
        if (f.n_free_slots < limits_.fragmented_min_free_slots || (f.measure() < limits_.fragmentation && !wasteful)) return;
        char measure[32];
        std::snprintf(measure, sizeof measure, "%.2f", f.measure());
        add(KvHealthCheck::fragmentation, KvHealthSeverity::warning,
            "the disk tier's files hold " + std::to_string(f.n_free_slots) + " free slots (" + format_bytes(f.free_bytes) + ") among " +
                std::to_string(f.n_slots - f.n_free_slots) + " used ones (fragmentation " + measure + ")",
            limits_.repair ? compact(cache) : std::string());
    }

    // The prefix cache's size against its budget, and its oldest entry's age.
    void prefix_cache(PrefixStore & store, int64_t now_us) {
        const PrefixStore::Summary p = store.summary();
        const uint64_t budget = store.capacity_bytes();
        if (p.blocks == 0) {
            add(KvHealthCheck::prefix_cache, KvHealthSeverity::info, "the prefix cache in " + store.dir() + " is empty");
            return;
        }
        const int64_t age_s = std::max<int64_t>(0, (now_us - p.oldest_use_us) / 1000000);
        const std::string size = std::to_string(p.blocks) + " blocks, " + format_bytes(p.bytes) + " of its " + format_bytes(budget) +
                                 " budget; the least recently used entry was last used " + duration_words(age_s) + " ago";
        if (p.bytes > budget) {
            std::string repair;
            if (limits_.repair) {
                store.evict_to(budget);
                const Status freed = store.release_free_space();
                repair = "dropped the oldest entries down to the budget (" + format_bytes(p.bytes - std::min(p.bytes, store.used_bytes())) +
                         ")" + (freed.ok() ? "" : ", but their space stays taken: " + freed.message());
                ++repairs;
            }
            add(KvHealthCheck::prefix_cache, KvHealthSeverity::warning, "the prefix cache is over its budget: " + size, repair);
        } else if (limits_.prefix_max_age_s > 0 && age_s > limits_.prefix_max_age_s) {
            std::string repair;
            if (limits_.repair) {
                const int64_t cutoff = now_us - limits_.prefix_max_age_s * 1000000;
                const uint64_t dropped = store.evict_unused_before(cutoff, limits_.prefix_max_drops);
                const Status freed = store.release_free_space();
                const PrefixStore::Summary left = store.summary();
                repair = "dropped the entries unused for more than " + duration_words(limits_.prefix_max_age_s) + " (" +
                         format_bytes(dropped) + ")" + (freed.ok() ? "" : ", but their space stays taken: " + freed.message()) +
                         (left.blocks > 0 && left.oldest_use_us < cutoff ? "; the next checks drop the rest" : "");
                ++repairs;
            }
            add(KvHealthCheck::prefix_cache, KvHealthSeverity::warning, "the prefix cache holds old entries: " + size, repair);
        } else {
            add(KvHealthCheck::prefix_cache, KvHealthSeverity::info, "the prefix cache holds " + size);
        }
    }

private:
    void pressure(KvCache & cache, const std::string & what, uint64_t available, uint64_t total, uint64_t may_grow,
                  const std::vector<KvTier> & tiers, const std::string & advice) {
        const bool low = double(available) < limits_.memory_low_share * double(total);
        if (!low && may_grow <= available) return;
        const std::string message = low ? "only " + format_bytes(available) + " of " + what + " is free (" + percent(available, total) +
                                              " of " + format_bytes(total) + "): " + advice
                                        : "the KV tiers in " + what + " may still grow by " + format_bytes(may_grow) + ", but only " +
                                              format_bytes(available) + " is free: " + advice;
        std::string repair;
        if (limits_.repair) {
            uint64_t released = 0;
            for (KvTier t : tiers) released += cache.release_recycled(t);
            if (released > 0) {
                repair = "gave " + format_bytes(released) + " of recycled KV slots back to the system";
                ++repairs;
            }
        }
        add(KvHealthCheck::memory, low ? KvHealthSeverity::critical : KvHealthSeverity::warning, message, repair);
    }

    std::string compact(KvCache & cache) {
        const TierFragmentation before = cache.disk_fragmentation();
        const Result<uint64_t> moved = cache.compact_disk();
        if (!moved.ok()) return "compacting the disk tier stopped: " + moved.status().message();
        ++repairs;
        return "compacted the disk tier: " + std::to_string(*moved) + " blocks moved, " + format_bytes(before.free_bytes) +
               " of free slots given back";
    }

    KvHealthMonitor & m_;
    const KvHealthLimits & limits_;
    HealthProbe & probe_;
};

KvHealthMonitor::KvHealthMonitor(std::shared_ptr<HealthProbe> probe, KvHealthLimits limits) : probe_(std::move(probe)), limits_(limits) {}

std::vector<KvHealthFinding> KvHealthMonitor::check(KvCache & cache) {
    Run run(*this);
    const int64_t now = probe_->now_us();
    // Faults first: a failing disk is taken out of use before anything else touches it.
    run.faults(cache, now);
    run.memory(cache);
    const KvStats s = cache.stats();
    if (!cache.config().dir.empty() && s.tiers[size_t(KvTier::disk)].present) {
        run.disk_space(cache.config().dir, cache.config().capacities.disk_bytes, s.tiers[size_t(KvTier::disk)].used_bytes,
                       cache.prefix_store(), &cache);
    }
    run.fragmentation(cache);
    if (PrefixStore * store = cache.prefix_store()) run.prefix_cache(*store, now);
    last_check_us_ = now;
    repairs_ += run.repairs;
    cache.note_health(run.findings, run.repairs);
    return std::move(run.findings);
}

std::vector<KvHealthFinding> KvHealthMonitor::check_dir(const std::string & dir, uint64_t disk_budget_bytes) {
    Run run(*this);
    std::unique_ptr<PrefixStore> store;
    std::error_code ec;
    if (std::filesystem::exists(dir + "/prefix-index.sqlite", ec)) {
        Result<std::unique_ptr<PrefixStore>> opened = PrefixStore::open(dir, disk_budget_bytes);
        if (opened.ok()) {
            store = std::move(opened).value();
        } else {
            run.add(KvHealthCheck::prefix_cache, KvHealthSeverity::critical, opened.status().message());
        }
    } else {
        run.add(KvHealthCheck::prefix_cache, KvHealthSeverity::info, "there is no prefix cache in " + dir + " yet");
    }
    run.disk_space(dir, disk_budget_bytes, store ? store->used_bytes() : 0, store.get(), nullptr);
    if (store) run.prefix_cache(*store, probe_->now_us());
    repairs_ += run.repairs;
    return std::move(run.findings);
}

}  // namespace lr
