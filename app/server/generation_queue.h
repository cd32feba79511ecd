#pragma once
// The engine thread: requests wait in a FIFO queue, and one thread runs up to --parallel of
// them at once in a SequenceBatch (continuous batching: one forward pass per step for all).
// The head of the queue starts as soon as its KV reservation fits beside the running ones
// (later ones wait behind it, in order); one that can never fit is refused. A request whose
// cache-wide settings (codecs, blocks, tiers) differ from the batch's waits until the batch
// is idle, which is then rebuilt with them. A job tells its HTTP thread what happens
// through a channel of events: admitted or rejected (before anything is sent, so a refusal
// can still be a 400), pieces of answer and thinking, and the end. A job's stop source
// cancels it: queued, it is skipped; running, its sequence ends at the next step and its
// memory is freed.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "app/server/api_error.h"
#include "app/server/completion_request.h"
#include "app/server/openai_json.h"
#include "app/server/server_metrics.h"
#include "engine/api/session_options.h"
#include "engine/chat/tool_calls.h"
#include "engine/runtime/sequence_batch.h"
#include "kvcache/kv_health.h"

namespace lr::server {

struct JobEvent {
    enum class Kind { admitted, rejected, answer, thinking, tool_calls, finished, failed };
    Kind kind = Kind::answer;
    std::string text;                        // answer, thinking
    std::vector<LogprobEntry> logprobs;      // answer, when asked for: the tokens whose text starts in it (or, at the end, none)
    std::vector<chat::ToolCall> tool_calls;  // tool_calls: the reply's, at its end
    std::string finish_reason;               // finished: "stop", "length" or "tool_calls"
    Usage usage;                             // admitted (prompt tokens), finished
    ApiError error;                          // rejected, failed
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
    // `base` is the server's session (context, chunk, cache flags); out_of_memory and
    // invalid_argument as Session::create says them.
    static Result<std::unique_ptr<GenerationQueue>> create(std::shared_ptr<const Model> model, SessionOptions base, uint32_t parallel,
                                                           ServerMetrics & metrics);
    ~GenerationQueue();  // cancels what runs and waits for the engine thread
    GenerationQueue(const GenerationQueue &) = delete;
    GenerationQueue & operator=(const GenerationQueue &) = delete;

    std::shared_ptr<Job> submit(CompletionRequest request);
    // Stops what runs and what waits (the server is shutting down).
    void cancel_all();

    QueueFigures figures() const;
    // The cache's stats as of the last step.
    KvStats kv_stats() const;
    // The running sequences as of the last step.
    std::vector<SequenceStats> sequence_stats() const;
    uint32_t context_limit() const { return base_.n_ctx; }

private:
    struct Running;
    GenerationQueue(std::shared_ptr<const Model> model, SessionOptions base, uint32_t parallel, std::unique_ptr<SequenceBatch> batch,
                    ServerMetrics & metrics);
    void serve();
    // Starts the jobs at the head of the queue that can start now.
    void admit();
    // Whether `job` has started, been refused, or must wait (false).
    bool try_start(const std::shared_ptr<Job> & job);
    void finish(SequenceBatch::Finished & done);
    // The batch cache's health checks and repairs (kvcache/kv_health.h), when due.
    void check_health();
    // What kv_stats() and sequence_stats() give other threads, as of now.
    void publish_stats();

    std::shared_ptr<const Model> model_;
    SessionOptions base_;
    const uint32_t parallel_;
    std::unique_ptr<SequenceBatch> batch_;
    const chat::ToolCallFormat tool_format_;  // how the model calls tools (none: requests with tools are refused)
    ServerMetrics & metrics_;
    KvHealthMonitor health_;
    std::chrono::steady_clock::time_point last_health_{};   // the first check runs at once
    std::map<uint64_t, std::unique_ptr<Running>> running_;  // by sequence id (the engine thread's)

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::set<std::shared_ptr<Job>> started_;  // the running jobs, for other threads
    KvStats kv_stats_;
    std::vector<SequenceStats> sequence_stats_;
    bool closing_ = false;
    std::thread thread_;
};

}  // namespace lr::server
