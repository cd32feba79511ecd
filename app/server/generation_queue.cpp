#include "generation_queue.h"

#include <exception>

#include "app/server/stop_matcher.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"

namespace lr::server {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

ApiError context_exceeded(uint64_t prompt_tokens, uint32_t n_ctx) {
    ApiError e = invalid_request(
        "This model's maximum context length is " + std::to_string(n_ctx) + " tokens, but the prompt has " + std::to_string(prompt_tokens) +
            " tokens. Shorten the messages, or use a cache policy that runs past it ({\"longread\": {\"kv_policy\": \"streaming\"}}).",
        "messages");
    e.code = "context_length_exceeded";
    e.extra = {{"n_prompt_tokens", prompt_tokens}, {"n_ctx", n_ctx}};
    return e;
}

const char * finish_reason(StopReason reason) {
    return reason == StopReason::max_tokens || reason == StopReason::context_full ? "length" : "stop";
}

// Streams generated text to a job: stop strings held back, latencies recorded.
class ReplyStream {
public:
    ReplyStream(Job & job, ServerMetrics & metrics) : job_(job), metrics_(metrics), stops_(job.request.stop) {}

    bool answer(std::string_view text) {
        token_arrived();
        send(JobEvent::Kind::answer, stops_.feed(text));
        return !stops_.stopped();
    }
    void thinking(std::string_view text) {
        token_arrived();
        send(JobEvent::Kind::thinking, std::string(text));
    }
    void finish(const GenerateResult & result, uint64_t prompt_tokens) {
        send(JobEvent::Kind::answer, stops_.flush());
        const Usage usage{prompt_tokens, result.tokens.size()};
        metrics_.add_tokens(usage.prompt_tokens, usage.completion_tokens);
        job_.channel.push(
            {.kind = JobEvent::Kind::finished, .finish_reason = stops_.stopped() ? "stop" : finish_reason(result.reason), .usage = usage});
    }

private:
    void token_arrived() {
        const Clock::time_point now = Clock::now();
        if (!first_) metrics_.observe_time_to_first_token(seconds_between(job_.arrived, now));
        else metrics_.observe_inter_token(seconds_between(last_, now));
        first_ = true;
        last_ = now;
    }
    void send(JobEvent::Kind kind, std::string text) {
        if (!text.empty()) job_.channel.push({.kind = kind, .text = std::move(text)});
    }

    Job & job_;
    ServerMetrics & metrics_;
    StopMatcher stops_;
    bool first_ = false;
    Clock::time_point last_;
};

// An engine error as the API tells it: bad settings and a prompt that does not fit (the
// measure leaves out the few tokens of the generation prompt) are the client's.
ApiError api_error_of(const Status & status) {
    if (status.code() == StatusCode::invalid_argument) return invalid_request(status.message(), "longread");
    if (status.code() == StatusCode::context_full) {
        ApiError e = invalid_request("This model's maximum context length is exceeded: " + status.message(), "messages");
        e.code = "context_length_exceeded";
        return e;
    }
    return server_error(status.message());
}

void fail(Job & job, bool admitted, const Status & status) {
    job.channel.push({.kind = admitted ? JobEvent::Kind::failed : JobEvent::Kind::rejected, .error = api_error_of(status)});
}

}  // namespace

void JobChannel::push(JobEvent event) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    ready_.notify_one();
}

std::optional<JobEvent> JobChannel::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    JobEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
}

GenerationQueue::GenerationQueue(Engine & engine, SessionOptions base, ServerMetrics & metrics)
    : engine_(engine), base_(std::move(base)), metrics_(metrics), thread_([this] { serve(); }) {}

GenerationQueue::~GenerationQueue() {
    cancel_all();
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void GenerationQueue::cancel_all() {
    std::lock_guard lock(mutex_);
    if (running_) running_->stop.request_stop();
    for (const auto & job : queue_) job->stop.request_stop();
}

std::shared_ptr<Job> GenerationQueue::submit(CompletionRequest request) {
    auto job = std::make_shared<Job>();
    job->request = std::move(request);
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(job);
    }
    wake_.notify_one();
    return job;
}

QueueFigures GenerationQueue::figures() const {
    std::lock_guard lock(mutex_);
    return {.running = running_ ? 1u : 0u, .queued = uint32_t(queue_.size())};
}

KvStats GenerationQueue::kv_stats() const {
    std::lock_guard lock(mutex_);
    return kv_stats_;
}

void GenerationQueue::serve() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
            if (queue_.empty()) return;
            job = queue_.front();
            queue_.pop_front();
            running_ = job;
        }
        // No exception leaves the engine thread: a throw fails the one request.
        try {
            run(*job);
        } catch (const std::exception & e) {
            job->channel.push({.kind = JobEvent::Kind::failed, .error = server_error(std::string("the engine failed: ") + e.what())});
        }
        const SessionSnapshot snapshot = engine_.snapshot();
        std::lock_guard lock(mutex_);
        running_.reset();
        kv_stats_ = snapshot.kv;
    }
}

void GenerationQueue::run(Job & job) {
    if (job.stop.stop_requested()) {
        job.channel.push({.kind = JobEvent::Kind::rejected, .error = server_error("cancelled")});
        return;
    }
    SessionOptions options = base_;
    options.kv = job.request.kv;
    if (Status s = engine_.use_session(options); !s.ok()) return fail(job, false, s);
    if (job.request.kind == CompletionKind::chat) run_chat(job);
    else run_text(job);
}

void GenerationQueue::run_chat(Job & job) {
    const CompletionRequest & r = job.request;
    Conversation whole = r.conversation;
    whole.turns.push_back({"user", r.user_text, {}});
    const Result<ContextMeasure> measure = engine_.measure(whole);
    if (!measure.ok()) return fail(job, false, measure.status());
    if (r.kv.policy != KvPolicy::streaming && measure->prompt_tokens >= measure->context_limit) {
        job.channel.push({.kind = JobEvent::Kind::rejected, .error = context_exceeded(measure->prompt_tokens, measure->context_limit)});
        return;
    }
    job.channel.push({.kind = JobEvent::Kind::admitted, .usage = {measure->prompt_tokens, 0}});
    ReplyStream stream(job, metrics_);
    ReplyParams params{.generate = r.generate};
    params.thinking_sink = [&](std::string_view piece) { stream.thinking(piece); };
    const Result<GenerateResult> result = engine_.reply(
        r.conversation, r.user_text, params, {}, [&](int32_t, std::string_view piece) { return stream.answer(piece); },
        job.stop.get_token());
    if (!result.ok()) return fail(job, true, result.status());
    stream.finish(*result, measure->prompt_tokens);
}

void GenerationQueue::run_text(Job & job) {
    const CompletionRequest & r = job.request;
    Session & session = *engine_.session();
    const std::vector<int32_t> prompt = engine_.model()->tokenizer().encode(r.prompt, true, false);
    if (r.kv.policy != KvPolicy::streaming && prompt.size() >= session.n_ctx()) {
        ApiError e = context_exceeded(prompt.size(), session.n_ctx());
        e.param = "prompt";
        job.channel.push({.kind = JobEvent::Kind::rejected, .error = e});
        return;
    }
    job.channel.push({.kind = JobEvent::Kind::admitted, .usage = {prompt.size(), 0}});
    if (Status s = session.sync(prompt, {}, job.stop.get_token()); !s.ok()) return fail(job, true, s);
    ReplyStream stream(job, metrics_);
    const Result<GenerateResult> result = generate(
        session, r.generate, [&](int32_t, std::string_view piece) { return stream.answer(piece); }, job.stop.get_token());
    if (!result.ok()) return fail(job, true, result.status());
    stream.finish(*result, prompt.size());
}

}  // namespace lr::server
