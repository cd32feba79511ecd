#include "memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/thread_pool.h"

namespace lr {

namespace {

// Sums every 8-byte word of [p, p + n); four independent chains keep the loads in flight.
uint64_t sum_words(const uint8_t * p, size_t n) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        std::memcpy(w, p + i, sizeof w);
        a += w[0];
        b += w[1];
        c += w[2];
        d += w[3];
    }
    for (; i < n; ++i) a += p[i];
    return a + b + c + d;
}

}  // namespace

double measure_read_bandwidth(std::span<const MemoryRegion> regions, int n_threads) {
    size_t total = 0;
    for (const MemoryRegion & r : regions) total += r.n_bytes;
    if (total == 0) return 0.0;
    // Pieces of 1 MiB, handed out dynamically.
    constexpr size_t kPiece = size_t(1) << 20;
    struct Piece {
        const uint8_t * p;
        size_t n;
    };
    std::vector<Piece> pieces;
    for (const MemoryRegion & r : regions) {
        const auto * base = static_cast<const uint8_t *>(r.data);
        for (size_t at = 0; at < r.n_bytes; at += kPiece) pieces.push_back({base + at, std::min(kPiece, r.n_bytes - at)});
    }
    ThreadPool pool(n_threads);
    std::atomic<uint64_t> sink{0};
    const auto t0 = std::chrono::steady_clock::now();
    pool.run(int64_t(pieces.size()),
             [&](int64_t i, int) { sink.fetch_add(sum_words(pieces[size_t(i)].p, pieces[size_t(i)].n), std::memory_order_relaxed); });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // NOTE: the sums go to an atomic so that the reads cannot be optimized away.
    (void)sink.load();
    return double(total) / seconds;
}

}  // namespace lr
