#pragma once
// Read bandwidth of this machine, measured by streaming memory with n threads: the
// ceiling of bandwidth-bound decode (every weight is read once per token).

#include <cstddef>
#include <cstdint>
#include <span>

namespace lr {

struct MemoryRegion {
    const void * data = nullptr;
    size_t n_bytes = 0;
};

// Bytes per second reading `regions` once, split between n_threads threads (each reads
// every 8-byte word of its share). Regions much larger than the last-level cache measure
// DRAM; the caller repeats and keeps the median.
double measure_read_bandwidth(std::span<const MemoryRegion> regions, int n_threads);

}  // namespace lr
