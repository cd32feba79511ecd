#pragma once
// One background thread for KV block transfers (prefetch from the host and disk tiers,
// prefix-cache writes), so that I/O overlaps compute. Jobs run in submission order.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/common/status.h"

namespace lr {

class IoThread {
public:
    using Job = std::function<Status()>;
    using JobId = uint64_t;

    IoThread();
    ~IoThread();  // finishes the queued jobs, then joins
    IoThread(const IoThread &) = delete;
    IoThread & operator=(const IoThread &) = delete;

    JobId submit(Job job);
    // Blocks until job `id` has run and returns its Status (once: the result is consumed).
    Status wait(JobId id);
    // True when job `id` has finished (its result is still there for wait()).
    bool finished(JobId id) const;
    // Blocks until every submitted job has run (results stay for wait()).
    void drain();

private:
    void run();

    mutable std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    std::deque<std::pair<JobId, Job>> queue_;
    std::unordered_map<JobId, Status> results_;
    JobId next_id_ = 1;
    JobId running_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace lr
