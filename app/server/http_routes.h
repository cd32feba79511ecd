#pragma once
// The HTTP side of the server (cpp-httplib): the routes, the API key, the body limit,
// CORS, OpenAI-style errors, and the streaming of a job's events as server-sent events.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <httplib.h>

#include "app/server/completion_request.h"
#include "app/server/generation_queue.h"
#include "app/server/server_metrics.h"

namespace lr::server {

struct HttpOptions {
    std::string model_id;     // what /v1/models lists and replies name
    std::string api_key;      // empty: no key asked
    std::string cors_origin;  // empty: no CORS headers
    size_t max_body_bytes = size_t(32) << 20;
    std::chrono::milliseconds ping_interval{2000};  // ": ping" while a stream waits
};

class HttpRoutes {
public:
    HttpRoutes(HttpOptions options, RequestDefaults defaults, GenerationQueue & queue, ServerMetrics & metrics);

    // Binds; false (with errno set by the system) when the address cannot be used.
    bool bind(const std::string & host, int port);
    int bind_to_any_port(const std::string & host);  // the port, or -1
    // Serves until stop(); returns false on a socket failure.
    bool listen();
    void stop();
    bool running() const;

private:
    void install();
    void complete(CompletionKind kind, const httplib::Request & req, httplib::Response & res);
    void stream_reply(const std::shared_ptr<Job> & job, const ReplyIdentity & who, httplib::Response & res);
    void wait_reply(const std::shared_ptr<Job> & job, const ReplyIdentity & who, httplib::Response & res);

    HttpOptions options_;
    RequestDefaults defaults_;
    GenerationQueue & queue_;
    ServerMetrics & metrics_;
    httplib::Server http_;
};

}  // namespace lr::server
