#include "io_thread.h"

#include "engine/common/assert.h"

namespace lr {

IoThread::IoThread() : thread_([this] { run(); }) {}

IoThread::~IoThread() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_cv_.notify_all();
    thread_.join();
}

IoThread::JobId IoThread::submit(Job job) {
    JobId id;
    {
        std::lock_guard lock(mutex_);
        id = next_id_++;
        queue_.emplace_back(id, std::move(job));
    }
    work_cv_.notify_one();
    return id;
}

Status IoThread::wait(JobId id) {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return results_.count(id) != 0; });
    Status s = std::move(results_.at(id));
    results_.erase(id);
    return s;
}

bool IoThread::finished(JobId id) const {
    std::lock_guard lock(mutex_);
    return results_.count(id) != 0;
}

void IoThread::drain() {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void IoThread::run() {
    for (;;) {
        std::pair<JobId, Job> item;
        {
            std::unique_lock lock(mutex_);
            work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stop_ and nothing left
            item = std::move(queue_.front());
            queue_.pop_front();
            running_ = item.first;
        }
        Status s = item.second();
        {
            std::lock_guard lock(mutex_);
            results_.emplace(item.first, std::move(s));
            running_ = 0;
        }
        done_cv_.notify_all();
    }
}

}  // namespace lr
