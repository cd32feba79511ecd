#include "thread_pool.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "engine/common/assert.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LR_CPU_RELAX() _mm_pause()
#else
#define LR_CPU_RELAX() ((void)0)
#endif

namespace lr {

namespace {
constexpr int kSpinIterations = 1 << 14;  // ~ tens of microseconds before sleeping
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    workers_.reserve(n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread & t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)> & fn) {
    if (n_threads_ == 1) {
        fn(0, 1);
        return;
    }
    job_ = &fn;
    n_pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    fn(0, n_threads_);
    for (int spin = 0; n_pending_.load(std::memory_order_acquire) != 0; ++spin) {
        if (spin < kSpinIterations) {
            LR_CPU_RELAX();
        } else {
            std::this_thread::yield();
        }
    }
    job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)> & fn) {
    if (n <= 0) return;
    run([&](int ith, int nth) {
        const int64_t chunk = (n + nth - 1) / nth;
        const int64_t begin = std::min<int64_t>(n, chunk * ith);
        const int64_t end = std::min<int64_t>(n, begin + chunk);
        if (begin < end) fn(begin, end);
    });
}

void ThreadPool::worker_loop(int ith) {
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
            LR_CPU_RELAX();
            gen = generation_.load(std::memory_order_acquire);
        }
        while (gen == seen) {
            generation_.wait(seen, std::memory_order_acquire);
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load(std::memory_order_acquire)) return;
        (*job_)(ith, n_threads_);
        n_pending_.fetch_sub(1, std::memory_order_acq_rel);
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
