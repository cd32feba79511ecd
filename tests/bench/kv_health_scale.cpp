// What the health monitor's checks and repairs cost as the cache grows: the checks without
// a model on a prefix index of N blocks (healthy; the disk low, dropping a tenth; a month
// later, dropping the first 4096 of them), and the disk tier's fragmentation measure and compaction over
// SLOTS slots, every other one freed.
// Usage: kv_health_scale DIR [N] [BLOCK_BYTES] [SLOTS]   (defaults 100000, 256, 65536)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "kvcache/disk_tier.h"
#include "kvcache/kv_health.h"
#include "kvcache/prefix_store.h"

using namespace lr;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Plenty of RAM; the disk as the run sets it.
class BenchProbe final : public HealthProbe {
public:
    DiskSpaceReading disk{.total_bytes = uint64_t(1) << 40, .free_bytes = uint64_t(512) << 30};
    int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::optional<HostMemoryReading> host_memory() override { return HostMemoryReading{uint64_t(64) << 30, uint64_t(32) << 30}; }
    std::optional<DiskSpaceReading> disk_space(const std::string &) override { return disk; }
    BackendMemory device_memory() override { return {}; }
    int64_t now_us() override { return now; }
};

void report(const char * what, double ms, const std::vector<KvHealthFinding> & findings) {
    std::printf("%-44s %9.1f ms  (%s)\n", what, ms, findings.empty() ? "no findings" : findings.back().message.substr(0, 60).c_str());
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: kv_health_scale DIR [N] [BLOCK_BYTES] [SLOTS]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const uint32_t n = argc > 2 ? uint32_t(std::atoi(argv[2])) : 100000;
    const size_t block_bytes = argc > 3 ? size_t(std::atoll(argv[3])) : 256;
    const uint32_t n_slots = argc > 4 ? uint32_t(std::atoi(argv[4])) : 65536;
    std::filesystem::remove_all(dir);
    const uint64_t budget = uint64_t(n) * block_bytes * 2;
    {
        auto store = PrefixStore::open(dir + "/prefix", budget);
        if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().message().c_str()), 1;
        const std::vector<uint8_t> bytes(block_bytes, 0x5a);
        std::vector<PrefixBlockWrite> batch;
        const auto t0 = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < n; i += 512) {
            batch.clear();
            for (uint32_t j = i; j < std::min(n, i + 512); ++j)
                batch.push_back({.chain = 1000 + j, .layer = 0, .depth = j, .bytes = bytes});
            if (Status s = (*store)->write(batch); !s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
        }
        std::printf("prefix index of %u blocks of %zu bytes written in %.1f s\n", n, block_bytes, ms_since(t0) / 1000);
    }

    auto probe = std::make_shared<BenchProbe>();
    KvHealthMonitor monitor(probe);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<KvHealthFinding> f = monitor.check_dir(dir + "/prefix", budget);
    report("check, healthy", ms_since(t0), f);
    // The disk a tenth of the index short of the low-water mark.
    probe->disk.free_bytes = (uint64_t(1) << 30) - uint64_t(n / 10) * block_bytes;
    t0 = std::chrono::steady_clock::now();
    f = monitor.check_dir(dir + "/prefix", budget);
    report("check, disk low: drop the oldest tenth", ms_since(t0), f);
    probe->disk.free_bytes = uint64_t(512) << 30;
    probe->now += int64_t(31) * 24 * 3600 * 1000000;
    t0 = std::chrono::steady_clock::now();
    f = monitor.check_dir(dir + "/prefix", budget);
    report("check, a month later: drop 4096 old entries", ms_since(t0), f);

    // The disk tier: every other slot freed, then measured and compacted.
    auto tier = DiskTier::create(dir + "/spill", uint64_t(n_slots) * 1024);
    if (!tier.ok()) return std::fprintf(stderr, "%s\n", tier.status().message().c_str()), 1;
    std::vector<TierSlot> allocated;
    const std::vector<uint8_t> bytes(1024, 0x33);
    for (uint32_t i = 0; i < n_slots; ++i) {
        allocated.push_back(*(*tier)->allocate(1024));
        if (Status s = (*tier)->write(allocated.back(), bytes.data(), 1024); !s.ok())
            return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    }
    for (uint32_t i = 0; i < n_slots; i += 2) (*tier)->release(allocated[i], 1024);
    t0 = std::chrono::steady_clock::now();
    const TierFragmentation before = (*tier)->fragmentation();
    std::printf("%-44s %9.1f ms  (%llu of %llu slots free, measure %.3f)\n", "disk tier fragmentation measure", ms_since(t0),
                (unsigned long long)before.n_free_slots, (unsigned long long)before.n_slots, before.measure());
    uint64_t moved = 0;
    t0 = std::chrono::steady_clock::now();
    if (Status s = (*tier)->compact([&](const TierSlot &, const TierSlot &) { ++moved; }); !s.ok()) {
        return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    }
    std::printf("%-44s %9.1f ms  (%llu blocks of 1 KiB moved)\n", "disk tier compaction", ms_since(t0), (unsigned long long)moved);
    std::filesystem::remove_all(dir);
    return 0;
}
