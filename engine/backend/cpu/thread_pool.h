#pragma once
// A persistent pool of worker threads for data-parallel ops. run(fn) calls fn(ith, nth)
// on every thread (the caller is thread 0) and returns when all are done. Workers spin
// briefly between ops (decode issues hundreds of small ops per token) and then sleep.

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace lr {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool & operator=(const ThreadPool &) = delete;

    int n_threads() const { return n_threads_; }

    // Calls fn(ith, nth) for ith in [0, nth) concurrently; nth = n_threads().
    // Not reentrant: fn must not call run().
    void run(const std::function<void(int ith, int nth)> & fn);

    // Splits [0, n) into contiguous chunks, one call per thread: fn(begin, end).
    void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)> & fn);

private:
    void worker_loop(int ith);

    int n_threads_;
    std::vector<std::thread> workers_;
    const std::function<void(int, int)> * job_ = nullptr;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> n_pending_{0};
    std::atomic<bool> stop_{false};
};

// Physical cores of this machine (hyper-threads do not help bandwidth-bound decode).
int physical_core_count();

}  // namespace lr
