#pragma once
// The engine thread: requests wait in a FIFO queue and one thread serves them in turn on
// the Engine (which one thread must drive). A job tells its HTTP thread what happens
// through a channel of events: admitted or rejected (before anything is sent, so a
// refusal can still be a 400), pieces of answer and thinking, and the end. A job's stop
// source cancels it: queued, it is skipped; running, the engine stops within one prefill
// chunk or one token.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "app/server/api_error.h"
#include "app/server/completion_request.h"
#include "app/server/openai_json.h"
#include "app/server/server_metrics.h"
#include "engine/api/session_options.h"
#include "engine/api/session_snapshot.h"

namespace lr {
class Engine;
}

namespace lr::server {

struct JobEvent {
    enum class Kind { admitted, rejected, answer, thinking, finished, failed };
    Kind kind = Kind::answer;
    std::string text;           // answer, thinking
    std::string finish_reason;  // finished: "stop" or "length"
    Usage usage;                // admitted (prompt tokens), finished
    ApiError error;             // rejected, failed
};

// Events from the engine thread to one HTTP thread.
class JobChannel {
public:
    void push(JobEvent event);
    // The next event, or nothing when `timeout` passed first.
    std::optional<JobEvent> next(std::chrono::milliseconds timeout);

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<JobEvent> events_;
};

struct Job {
    CompletionRequest request;
    std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
    std::stop_source stop;
    JobChannel channel;
};

class GenerationQueue {
public:
    // `engine` has a model; `base` is the server's session (context, chunk, cache flags).
    GenerationQueue(Engine & engine, SessionOptions base, ServerMetrics & metrics);
    ~GenerationQueue();  // cancels what runs and waits for the engine thread
    GenerationQueue(const GenerationQueue &) = delete;
    GenerationQueue & operator=(const GenerationQueue &) = delete;

    std::shared_ptr<Job> submit(CompletionRequest request);
    // Stops what runs and what waits (the server is shutting down).
    void cancel_all();

    QueueFigures figures() const;
    // The cache's stats as of the last job (the engine is only read on its own thread).
    KvStats kv_stats() const;

private:
    void serve();
    void run(Job & job);
    void run_chat(Job & job);
    void run_text(Job & job);

    Engine & engine_;
    const SessionOptions base_;
    ServerMetrics & metrics_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::shared_ptr<Job> running_;
    KvStats kv_stats_;
    bool closing_ = false;
    std::thread thread_;
};

}  // namespace lr::server
