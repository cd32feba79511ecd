#include "thread_pool.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "engine/common/assert.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LR_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define LR_CPU_RELAX() asm volatile("yield")
#else
#define LR_CPU_RELAX() ((void)0)
#endif

namespace lr {

namespace {

constexpr int kChunkBits = 20;
constexpr uint64_t kChunkMask = (uint64_t(1) << kChunkBits) - 1;
// Idle workers spin this long before sleeping: longer than the gaps between the ops of a
// decode step, much shorter than a scheduler time slice.
constexpr auto kWorkerSpin = std::chrono::microseconds(50);
// The caller waits for chunks other threads are running; they are short.
constexpr auto kCallerSpin = std::chrono::microseconds(200);

uint64_t pack(uint32_t epoch, uint64_t n_chunks, uint64_t next) {
    return (uint64_t(epoch) << (2 * kChunkBits)) | (n_chunks << kChunkBits) | next;
}

// Spins (with a pause) while pred() holds, for at most `budget`; true if pred() stopped holding.
template <class Pred>
bool spin_while(Pred pred, std::chrono::microseconds budget) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (!pred()) return true;
            LR_CPU_RELAX();
        }
        if (std::chrono::steady_clock::now() - start > budget) return !pred();
    }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_seq_cst);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    epoch_.notify_all();
    for (std::thread & t : workers_) t.join();
}

int64_t ThreadPool::chunk_count(int64_t n, int64_t grain) const {
    if (grain < 1) grain = 1;
    const int64_t by_grain = (n + grain - 1) / grain;
    const int64_t wanted = n_threads_ == 1 ? 1 : 4 * int64_t(n_threads_);
    return by_grain < wanted ? by_grain : wanted;
}

void ThreadPool::run_erased(int64_t n_chunks, ChunkFn fn, void * ctx) {
    if (n_chunks <= 0) return;
    LR_ASSERT(n_chunks < int64_t(1) << (kChunkBits - 1));
    if (n_threads_ == 1 || n_chunks == 1) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(ctx, c, 0);
        return;
    }
    job_fn_ = fn;
    job_ctx_ = ctx;
    n_done_.store(0, std::memory_order_relaxed);
    epoch_counter_ = (epoch_counter_ + 1) & ((1u << 24) - 1);
    work_.store(pack(epoch_counter_, uint64_t(n_chunks), 0), std::memory_order_seq_cst);
    epoch_.store(epoch_counter_, std::memory_order_seq_cst);
    if (n_sleeping_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();

    drain(0);

    const uint32_t n = uint32_t(n_chunks);
    auto pending = [&] { return n_done_.load(std::memory_order_acquire) != n; };
    if (!spin_while(pending, kCallerSpin)) {
        for (;;) {
            caller_sleeping_.store(true, std::memory_order_seq_cst);
            const uint32_t done = n_done_.load(std::memory_order_seq_cst);
            if (done == n) break;
            n_done_.wait(done, std::memory_order_seq_cst);
        }
        caller_sleeping_.store(false, std::memory_order_relaxed);
    }
}

void ThreadPool::drain(int ith) {
    for (;;) {
        const uint64_t claim = work_.fetch_add(1, std::memory_order_acq_rel);
        const uint64_t n_chunks = (claim >> kChunkBits) & kChunkMask;
        const uint64_t chunk = claim & kChunkMask;
        // A chunk below n_chunks belongs to the job now published (whatever epoch this
        // thread thought it was serving), and that job cannot finish before this chunk.
        if (chunk >= n_chunks) return;
        job_fn_(job_ctx_, int64_t(chunk), ith);
        if (n_done_.fetch_add(1, std::memory_order_seq_cst) + 1 == uint32_t(n_chunks)) {
            if (caller_sleeping_.load(std::memory_order_seq_cst)) n_done_.notify_one();
        }
    }
}

void ThreadPool::worker_loop(int ith) {
    uint32_t seen = 0;
    for (;;) {
        auto idle = [&] { return epoch_.load(std::memory_order_acquire) == seen; };
        if (!spin_while(idle, kWorkerSpin)) {
            n_sleeping_.fetch_add(1, std::memory_order_seq_cst);
            while (epoch_.load(std::memory_order_seq_cst) == seen) epoch_.wait(seen, std::memory_order_seq_cst);
            n_sleeping_.fetch_sub(1, std::memory_order_seq_cst);
        }
        seen = epoch_.load(std::memory_order_acquire);
        if (stop_.load(std::memory_order_acquire)) return;
        drain(ith);
    }
}

int physical_core_count() {
    // Count distinct (physical id, core id) pairs; fall back to the logical count.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::set<std::pair<int, int>> cores;
    std::string line;
    int physical = 0;
    while (std::getline(cpuinfo, line)) {
        auto value = [&] { return static_cast<int>(std::strtol(line.c_str() + line.find(':') + 1, nullptr, 10)); };
        if (line.rfind("physical id", 0) == 0) physical = value();
        if (line.rfind("core id", 0) == 0) cores.insert({physical, value()});
    }
    const int logical = static_cast<int>(std::thread::hardware_concurrency());
    if (cores.empty()) return logical > 0 ? logical : 1;
    return static_cast<int>(cores.size());
}

}  // namespace lr
