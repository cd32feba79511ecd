#include "generation_queue.h"

#include <exception>

#include "app/server/reply_stream.h"
#include "engine/runtime/chat_prompt.h"
#include "engine/runtime/reply_generator.h"

namespace lr::server {
namespace {

ApiError context_exceeded(uint64_t prompt_tokens, uint32_t n_ctx) {
    ApiError e = invalid_request(
        "This model's maximum context length is " + std::to_string(n_ctx) + " tokens, but the prompt has " + std::to_string(prompt_tokens) +
            " tokens. Shorten the messages, or use a cache policy that runs past it ({\"longread\": {\"kv_policy\": \"streaming\"}}).",
        "messages");
    e.code = "context_length_exceeded";
    e.extra = {{"n_prompt_tokens", prompt_tokens}, {"n_ctx", n_ctx}};
    return e;
}

// A token's log-probabilities with the tokens' texts.
LogprobEntry logprob_entry(const Tokenizer & tokenizer, const TokenLogprobs & lp) {
    LogprobEntry e{.token = tokenizer.token_to_piece(lp.token, true), .logprob = lp.logprob};
    e.top.reserve(lp.top.size());
    for (const auto & [token, logprob] : lp.top) e.top.emplace_back(tokenizer.token_to_piece(token, true), logprob);
    return e;
}

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

struct GenerationQueue::Running {
    std::shared_ptr<Job> job;
    ReplyStream stream;
    std::optional<chat::ThinkingSplitter> splitter;  // a chat reply's
    uint64_t prompt_tokens = 0;
    bool cancel_sent = false;
    std::optional<LogprobEntry> logprob;  // of the token deliver() gets next

    // A generated piece: the thinking apart from the answer; false when a stop string ended
    // it. A token's log-probabilities go with the answer, not with the thinking.
    bool deliver(std::string_view piece) {
        if (!splitter) {
            if (logprob) stream.logprob(std::move(*logprob));
            logprob.reset();
            return stream.answer(piece);
        }
        const chat::ThinkingSplit split = splitter->push(piece);
        if (logprob && !(split.answer.empty() && (!split.thinking.empty() || splitter->in_thinking()))) stream.logprob(std::move(*logprob));
        logprob.reset();
        if (!split.thinking.empty()) stream.thinking(split.thinking);
        return stream.answer(split.answer);
    }
};

Result<std::unique_ptr<GenerationQueue>> GenerationQueue::create(std::shared_ptr<const Model> model, SessionOptions base, uint32_t parallel,
                                                                 ServerMetrics & metrics) {
    LR_ASSIGN_OR_RETURN(std::unique_ptr<SequenceBatch> batch,
                        SequenceBatch::create(model, {.n_ctx = base.n_ctx, .chunk_tokens = base.chunk_tokens, .kv = base.kv}, parallel));
    base.n_ctx = batch->config().n_ctx;
    return std::unique_ptr<GenerationQueue>(new GenerationQueue(std::move(model), base, parallel, std::move(batch), metrics));
}

GenerationQueue::GenerationQueue(std::shared_ptr<const Model> model, SessionOptions base, uint32_t parallel,
                                 std::unique_ptr<SequenceBatch> batch, ServerMetrics & metrics)
    : model_(std::move(model)), base_(std::move(base)), parallel_(parallel), batch_(std::move(batch)),
      tool_format_(tool_call_format(*model_)), metrics_(metrics), health_(system_health_probe(&model_->backend())),
      thread_([this] { serve(); }) {}

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
    {
        std::lock_guard lock(mutex_);
        for (const auto & job : queue_) job->stop.request_stop();
        for (const auto & job : started_) job->stop.request_stop();
    }
    wake_.notify_all();
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
    return {.running = uint32_t(started_.size()), .queued = uint32_t(queue_.size())};
}

KvStats GenerationQueue::kv_stats() const {
    std::lock_guard lock(mutex_);
    return kv_stats_;
}

std::vector<SequenceStats> GenerationQueue::sequence_stats() const {
    std::lock_guard lock(mutex_);
    return sequence_stats_;
}

void GenerationQueue::check_health() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_health_ < std::chrono::milliseconds(KvHealthMonitor::kIntervalMs)) return;
    last_health_ = now;
    {
        std::lock_guard turn(model_->backend_turn());
        health_.check(batch_->kv_cache());
    }
    for (SequenceBatch::Finished & f : batch_->recover_lost()) finish(f);
    publish_stats();
}

void GenerationQueue::publish_stats() {
    KvStats stats = batch_->kv_stats();
    std::vector<SequenceStats> sequences = batch_->sequence_stats();
    std::lock_guard lock(mutex_);
    kv_stats_ = std::move(stats);
    sequence_stats_ = std::move(sequences);
}

void GenerationQueue::serve() {
    for (;;) {
        check_health();
        admit();
        if (running_.empty()) {
            std::unique_lock lock(mutex_);
            if (!queue_.empty()) continue;  // the head was just refused or rebuilt the batch
            if (closing_) return;
            // Idle, the cache is still checked when due.
            wake_.wait_for(lock, std::chrono::milliseconds(KvHealthMonitor::kIntervalMs), [&] { return closing_ || !queue_.empty(); });
            continue;
        }
        for (auto & [id, r] : running_) {
            if (r->cancel_sent || !r->job->stop.stop_requested()) continue;
            batch_->cancel(id);
            r->cancel_sent = true;
        }
        // No exception leaves the engine thread: a throw fails the requests of the step.
        std::vector<SequenceBatch::Finished> done;
        try {
            done = batch_->step();
        } catch (const std::exception & e) {
            for (auto & [id, r] : running_) {
                batch_->cancel(id);
                done.push_back({.id = id, .result = error(StatusCode::internal, std::string("the engine failed: ") + e.what())});
            }
            for (SequenceBatch::Finished & f : batch_->step()) (void)f;  // frees their memory
        }
        for (SequenceBatch::Finished & f : done) finish(f);
        publish_stats();
    }
}

void GenerationQueue::admit() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::lock_guard lock(mutex_);
            if (queue_.empty()) return;
            job = queue_.front();
        }
        if (!try_start(job)) return;  // it waits, and those behind it too
        std::lock_guard lock(mutex_);
        queue_.pop_front();
    }
}

bool GenerationQueue::try_start(const std::shared_ptr<Job> & job) {
    if (job->stop.stop_requested()) {
        job->channel.push({.kind = JobEvent::Kind::rejected, .error = server_error("cancelled")});
        return true;
    }
    const CompletionRequest & r = job->request;
    if (!same_cache(r.kv, batch_->config().kv)) {
        // Other codecs, blocks or tiers: a cache of their own, once the running ones are done.
        if (!running_.empty()) return false;
        SessionConfig config{.n_ctx = base_.n_ctx, .chunk_tokens = base_.chunk_tokens, .kv = r.kv};
        Result<std::unique_ptr<SequenceBatch>> rebuilt = SequenceBatch::create(model_, config, parallel_);
        if (!rebuilt.ok()) {
            fail(*job, false, rebuilt.status());
            return true;
        }
        batch_.reset();  // its prefix writes land before the new one looks up
        batch_ = std::move(*rebuilt);
    }
    const bool chat = r.kind == CompletionKind::chat;
    if (!r.conversation.tools.empty() && tool_format_ == chat::ToolCallFormat::none) {
        job->channel.push({.kind = JobEvent::Kind::rejected,
                           .error = invalid_request("this model's chat template does not offer tools in a format Longread reads (Hermes' "
                                                    "<tool_call> JSON, as Qwen2.5 and Qwen3; Qwen3.5's XML; Llama 3.1-3.3's JSON)",
                                                    "tools")});
        return true;
    }
    const std::vector<int32_t> prompt = chat ? render_chat_tokens(*model_, conversation_messages(r.conversation, r.user_text), true,
                                                                  r.conversation.thinking, r.conversation.tools)
                                             : model_->tokenizer().encode(r.prompt, true, false);
    const uint32_t n_ctx = batch_->config().n_ctx;
    if (r.kv.policy != KvPolicy::streaming && prompt.size() >= n_ctx) {
        ApiError e = context_exceeded(prompt.size(), n_ctx);
        if (!chat) e.param = "prompt";
        job->channel.push({.kind = JobEvent::Kind::rejected, .error = e});
        return true;
    }
    BatchSequenceRequest request{.prompt = prompt, .params = r.generate, .selection = r.kv};
    const Result<uint64_t> reservation = batch_->reserve(request);
    if (!reservation.ok()) {
        if (reservation.status().code() == StatusCode::out_of_memory) metrics_.count_refusal();
        fail(*job, false, reservation.status());
        return true;
    }
    if (!batch_->fits_now(*reservation)) return false;
    const chat::ToolCallFormat tools = r.conversation.tools.empty() ? chat::ToolCallFormat::none : tool_format_;
    auto running = std::make_unique<Running>(
        Running{.job = job, .stream = ReplyStream(*job, metrics_, tools), .prompt_tokens = prompt.size()});
    if (chat) running->splitter = reply_splitter(*model_, prompt);
    request.sink = [r = running.get()](int32_t, std::string_view piece) { return r->deliver(piece); };
    if (r.generate.logprobs >= 0) {
        request.logprob_sink = [run = running.get(), &tokenizer = model_->tokenizer()](const TokenLogprobs & lp) {
            run->logprob = logprob_entry(tokenizer, lp);
        };
    }
    const Result<uint64_t> id = batch_->add(std::move(request), *reservation);
    if (!id.ok()) {
        fail(*job, false, id.status());
        return true;
    }
    job->channel.push({.kind = JobEvent::Kind::admitted, .usage = {prompt.size(), 0}});
    running_[*id] = std::move(running);
    std::lock_guard lock(mutex_);
    started_.insert(job);
    return true;
}

void GenerationQueue::finish(SequenceBatch::Finished & done) {
    auto it = running_.find(done.id);
    if (it == running_.end()) return;
    Running & r = *it->second;
    // Off the figures before the last event goes out: a client that has read its end sees
    // the request counted as finished.
    {
        std::lock_guard lock(mutex_);
        started_.erase(r.job);
    }
    if (!done.result.ok()) {
        fail(*r.job, true, done.result.status());
    } else {
        if (r.splitter) {
            const chat::ThinkingSplit rest = r.splitter->flush();
            if (!rest.thinking.empty()) r.stream.thinking(rest.thinking);
            if (!rest.answer.empty()) r.stream.answer(rest.answer);
        }
        r.stream.finish(*done.result, r.prompt_tokens);
    }
    running_.erase(it);
}

}  // namespace lr::server
