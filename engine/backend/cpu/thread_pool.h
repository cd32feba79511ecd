#pragma once
// A persistent pool of worker threads for data-parallel ops. An op is cut into chunks;
// run() hands them out one at a time (an atomic counter) to the caller and the workers,
// and returns when every chunk is done. The caller never waits for a worker that has not
// started: if another process holds the cores, the caller simply runs more chunks itself.
// Idle workers spin for a few tens of microseconds (decode issues hundreds of small ops
// per token) and then sleep on a futex, so an oversubscribed machine is never spun on.

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace lr {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool & operator=(const ThreadPool &) = delete;

    int n_threads() const { return n_threads_; }

    // Calls fn(chunk, ith) once for every chunk in [0, n_chunks), concurrently; ith in
    // [0, n_threads()) names the calling thread (0 = the caller), for per-thread scratch.
    // Chunks go to whichever thread asks first: fn must not depend on which one.
    // Not reentrant: fn must not call run(). n_chunks < 2^19.
    template <class F>
    void run(int64_t n_chunks, F && fn) {
        using Fn = std::remove_reference_t<F>;
        run_erased(
            n_chunks, [](void * ctx, int64_t chunk, int ith) { (*static_cast<Fn *>(ctx))(chunk, ith); },
            const_cast<void *>(static_cast<const void *>(&fn)));
    }

    // Calls fn(i, n_threads()) once for every i in [0, n_threads()), concurrently: one
    // share of the work per thread. (i is a share, not necessarily the calling thread.)
    template <class F>
    void run(F && fn) {
        const int nth = n_threads_;
        run(nth, [&](int64_t i, int) { fn(int(i), nth); });
    }

    // Splits [0, n) into chunks of at least `grain` items (about 4 per thread when n is
    // large) and calls fn(begin, end, ith) for each.
    template <class F>
    void parallel_for(int64_t n, int64_t grain, F && fn) {
        if (n <= 0) return;
        const int64_t n_chunks = chunk_count(n, grain);
        const int64_t per = (n + n_chunks - 1) / n_chunks;
        run(n_chunks, [&](int64_t chunk, int ith) {
            const int64_t begin = chunk * per;
            const int64_t end = begin + per < n ? begin + per : n;
            if (begin < end) fn(begin, end, ith);
        });
    }

    // How many chunks parallel_for cuts n items into.
    int64_t chunk_count(int64_t n, int64_t grain) const;

private:
    using ChunkFn = void (*)(void * ctx, int64_t chunk, int ith);
    void run_erased(int64_t n_chunks, ChunkFn fn, void * ctx);
    void worker_loop(int ith);
    // Claims and runs chunks of the current job until none is left.
    void drain(int ith);

    int n_threads_;
    std::vector<std::thread> workers_;

    // The current job. Written by the caller before it publishes the job's epoch in
    // work_, and not rewritten before every chunk of it is done.
    ChunkFn job_fn_ = nullptr;
    void * job_ctx_ = nullptr;

    // [epoch:24][n_chunks:20][next chunk:20]: one word, so that a claim (fetch_add) also
    // says which job it belongs to and whether it is a chunk of it.
    alignas(64) std::atomic<uint64_t> work_{0};
    alignas(64) std::atomic<uint32_t> n_done_{0};  // chunks of the current job finished
    alignas(64) std::atomic<uint32_t> epoch_{0};   // the futex workers sleep on
    std::atomic<int> n_sleeping_{0};               // workers asleep on epoch_
    std::atomic<bool> caller_sleeping_{false};     // the caller asleep on n_done_
    std::atomic<bool> stop_{false};
    uint32_t epoch_counter_ = 0;  // caller only
};

// Physical cores of this machine (hyper-threads do not help bandwidth-bound decode).
int physical_core_count();

}  // namespace lr
