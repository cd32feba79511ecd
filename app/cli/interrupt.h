#pragma once
// Ctrl-C for an interactive program: while a reply or a long job is armed, SIGINT stops
// it (through a std::stop_source) instead of killing the program; when nothing is armed
// the program is interrupted as usual. A watcher thread turns the signal (via a self-pipe,
// the only async-signal-safe way) into request_stop().

#include <atomic>
#include <mutex>
#include <stop_token>
#include <thread>

namespace lr::cli {

class InterruptWatcher {
public:
    InterruptWatcher();
    ~InterruptWatcher();
    InterruptWatcher(const InterruptWatcher &) = delete;
    InterruptWatcher & operator=(const InterruptWatcher &) = delete;

    // A fresh stop token that the next Ctrl-C triggers.
    std::stop_token arm();
    // Ctrl-C interrupts the program again.
    void disarm();
    // Whether a Ctrl-C arrived since the last arm().
    bool interrupted() const { return interrupted_.load(); }

private:
    void watch();

    int pipe_[2] = {-1, -1};
    std::mutex mutex_;
    std::stop_source source_;
    bool armed_ = false;
    std::atomic<bool> interrupted_{false};
    std::thread thread_;
};

}  // namespace lr::cli
