#include "http_routes.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

#include "app/server/api_key.h"
#include "app/server/event_stream.h"

namespace lr::server {

using nlohmann::json;

namespace {

constexpr const char * kJson = "application/json";

void send_error(httplib::Response & res, const ApiError & error) {
    res.status = error.http_status;
    res.set_content(dump(to_json(error)), kJson);
}

// The endpoint label of a request's metrics: its route, or "other" (unbounded paths would
// make unbounded series).
std::string endpoint_of(const std::string & path) {
    for (const char * route : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"}) {
        if (path == route) return route;
    }
    return "other";
}

std::string reply_id(const char * prefix) {
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%016llx%llu", prefix, static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(counter++));
    return buf;
}

int64_t unix_now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

HttpRoutes::HttpRoutes(HttpOptions options, RequestDefaults defaults, GenerationQueue & queue, ServerMetrics & metrics)
    : options_(std::move(options)), defaults_(std::move(defaults)), queue_(queue), metrics_(metrics) {
    install();
}

bool HttpRoutes::bind(const std::string & host, int port) { return http_.bind_to_port(host, port); }
int HttpRoutes::bind_to_any_port(const std::string & host) { return http_.bind_to_any_port(host); }
bool HttpRoutes::listen() { return http_.listen_after_bind(); }
void HttpRoutes::stop() { http_.stop(); }
bool HttpRoutes::running() const { return http_.is_running(); }

void HttpRoutes::install() {
    // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on
    // the same port binds too and silently takes part of the connections.
    http_.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    http_.set_payload_max_length(options_.max_body_bytes);
    http_.set_pre_routing_handler([this](const httplib::Request & req, httplib::Response & res) {
        if (!options_.cors_origin.empty()) {
            res.set_header("Access-Control-Allow-Origin", options_.cors_origin);
            res.set_header("Vary", "Origin");
        }
        if (req.method == "OPTIONS" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        if (authorized(req.get_header_value("Authorization"), options_.api_key)) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, {.http_status = 401,
                         .message = "Incorrect API key provided (send it as \"Authorization: Bearer KEY\").",
                         .type = "authentication_error",
                         .code = "invalid_api_key"});
        return httplib::Server::HandlerResponse::Handled;
    });
    // Statuses httplib sets itself (404, 413, 400 for a bad request line) get an OpenAI body too.
    http_.set_error_handler([](const httplib::Request & req, httplib::Response & res) {
        if (!res.body.empty()) return;
        ApiError e{.http_status = res.status, .message = "HTTP error " + std::to_string(res.status)};
        if (res.status == 404) e.message = "Unknown endpoint " + req.method + " " + req.path;
        if (res.status == 413) e.message = "The request body is larger than the server accepts";
        send_error(res, e);
    });
    http_.set_logger(
        [this](const httplib::Request & req, const httplib::Response & res) { metrics_.count_request(endpoint_of(req.path), res.status); });
    if (!options_.cors_origin.empty()) {
        http_.Options(R"(/.*)", [](const httplib::Request &, httplib::Response & res) {
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
            res.status = 204;
        });
    }

    http_.Get("/health", [](const httplib::Request &, httplib::Response & res) { res.set_content(R"({"status":"ok"})", kJson); });
    http_.Get("/v1/models", [this](const httplib::Request &, httplib::Response & res) {
        res.set_content(dump(model_list(options_.model_id, unix_now())), kJson);
    });
    http_.Get("/metrics", [this](const httplib::Request &, httplib::Response & res) {
        res.set_content(metrics_.render(queue_.figures(), queue_.kv_stats()), "text/plain; version=0.0.4");
    });
    http_.Post("/v1/chat/completions",
               [this](const httplib::Request & req, httplib::Response & res) { complete(CompletionKind::chat, req, res); });
    http_.Post("/v1/completions",
               [this](const httplib::Request & req, httplib::Response & res) { complete(CompletionKind::text, req, res); });
}

void HttpRoutes::complete(CompletionKind kind, const httplib::Request & req, httplib::Response & res) {
    auto parsed = parse_completion_request(kind, req.body, defaults_);
    if (auto * e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
    CompletionRequest & request = std::get<CompletionRequest>(parsed);
    const bool stream = request.stream;
    const std::shared_ptr<Job> job = queue_.submit(std::move(request));
    // Nothing is sent before the engine admits the job, so a refusal is still a plain error.
    for (;;) {
        const std::optional<JobEvent> e = job->channel.next(std::chrono::hours(1));
        if (!e) continue;
        if (e->kind == JobEvent::Kind::rejected) return send_error(res, e->error);
        if (e->kind == JobEvent::Kind::admitted) break;
    }
    const ReplyIdentity who{reply_id(kind == CompletionKind::chat ? "chatcmpl" : "cmpl"), unix_now(), options_.model_id};
    if (stream) stream_reply(job, who, res);
    else wait_reply(job, who, res);
}

void HttpRoutes::wait_reply(const std::shared_ptr<Job> & job, const ReplyIdentity & who, httplib::Response & res) {
    std::string text, thinking;
    std::vector<LogprobEntry> logprobs;
    json tool_calls;  // null: none
    const bool chat = job->request.kind == CompletionKind::chat;
    for (;;) {
        const std::optional<JobEvent> e = job->channel.next(std::chrono::hours(1));
        if (!e) continue;
        switch (e->kind) {
            case JobEvent::Kind::answer:
                text += e->text;
                logprobs.insert(logprobs.end(), e->logprobs.begin(), e->logprobs.end());
                break;
            case JobEvent::Kind::thinking: thinking += e->text; break;
            case JobEvent::Kind::tool_calls: tool_calls = tool_calls_json(e->tool_calls, who.id); break;
            case JobEvent::Kind::failed: return send_error(res, e->error);
            case JobEvent::Kind::finished: {
                const std::vector<LogprobEntry> * asked = job->request.generate.logprobs >= 0 ? &logprobs : nullptr;
                res.set_content(dump(chat ? chat_completion(who, text, thinking, e->finish_reason, e->usage, chat_logprobs(asked),
                                                            tool_calls)
                                          : text_completion(who, text, e->finish_reason, e->usage, text_logprobs(asked))),
                                kJson);
                return;
            }
            default: break;
        }
    }
}

void HttpRoutes::stream_reply(const std::shared_ptr<Job> & job, const ReplyIdentity & who, httplib::Response & res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, job, who](size_t, httplib::DataSink & sink) {
            const bool ended = write_event_stream(*job, who, options_.ping_interval,
                                                  [&](std::string_view data) { return sink.write(data.data(), data.size()); });
            if (ended) sink.done();
            return ended;
        },
        [job](bool success) {
            if (!success) job->stop.request_stop();
        });
}

}  // namespace lr::server
