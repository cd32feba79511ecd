#pragma once
// The server on a loaded model, started and stopped as one object: its GenerationQueue
// (its own engine thread and KV cache) and its HttpRoutes listening on a thread of their
// own. `longread-cli serve` and the desktop app's "Serve on this computer" both run it.
//
// The model is shared, not copied: its weights are only read, and the backend's ops take
// turns with any other thread running the same model (Model::backend_turn). Whoever
// hands the model in keeps its backend alive until the server is stopped.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/server/kv_request_settings.h"
#include "app/server/server_metrics.h"
#include "engine/api/kv_stats.h"
#include "engine/api/sampling.h"
#include "engine/api/sequence_stats.h"
#include "engine/api/session_options.h"
#include "engine/api/thinking_choice.h"
#include "engine/common/status.h"

namespace lr {
class Model;
}

namespace lr::server {

class GenerationQueue;
class HttpRoutes;

struct LocalServerOptions {
    SessionOptions session;  // the server's own cache: context, chunk, cache-wide settings
    uint32_t parallel = 4;   // requests generating at once
    std::string host = "127.0.0.1";
    int port = 8080;          // 0: any free port (port() says which)
    std::string model_id;     // what /v1/models lists and replies name
    std::string api_key;      // empty: no key asked
    std::string cors_origin;  // empty: no CORS headers
    SamplerParams sampler;    // a request's sampling before its own fields
    KvFlags kv_flags;         // a request's cache settings before its `longread` object (kv_flags_for)
    ThinkingChoice thinking;  // a chat request's before its reasoning_effort and chat_template_kwargs
};

// What the server is doing, for a panel polling it: every figure is the engine thread's
// as of its last step.
struct LocalServerFigures {
    QueueFigures queue;                    // running and waiting requests
    uint64_t completions_served = 0;       // answered with a 2xx status
    KvStats kv;                            // the server's cache (hit_rate(), restored tokens...)
    std::vector<SequenceStats> sequences;  // the running ones
};

// What a model at `model_path` is called in /v1/models: the file's name without its
// extension, or the bundled model's name.
std::string served_model_id(const std::string & model_path);

class LocalServer {
public:
    // Creates the queue (invalid_argument, out_of_memory as Session::create says them),
    // binds (io_error, naming the address and the system's reason, e.g. a port in
    // use) and starts listening.
    static Result<std::unique_ptr<LocalServer>> start(std::shared_ptr<const Model> model, LocalServerOptions options);
    ~LocalServer();  // stop()
    LocalServer(const LocalServer &) = delete;
    LocalServer & operator=(const LocalServer &) = delete;

    // Cancels what runs and waits, stops listening and joins both threads. From any
    // thread; once is enough, again does nothing.
    void stop();
    // Blocks until the server stops listening (stop(), or a socket failure: false).
    bool wait();

    int port() const { return port_; }
    const std::string & host() const { return options_.host; }
    // "http://127.0.0.1:8080/v1", what an OpenAI client takes as its base URL.
    std::string base_url() const;
    uint32_t context_limit() const;
    LocalServerFigures figures() const;
    KvStats kv_stats() const;

private:
    explicit LocalServer(LocalServerOptions options);

    LocalServerOptions options_;
    ServerMetrics metrics_;  // before the queue and the routes, which record into it
    std::unique_ptr<GenerationQueue> queue_;
    std::unique_ptr<HttpRoutes> routes_;
    int port_ = 0;
    std::mutex mutex_;
    std::condition_variable listen_returned_;
    bool listening_ = true;  // until listen() returns
    bool served_ = true;     // what listen() returned
    bool stopped_ = false;
    std::thread listener_;
};

}  // namespace lr::server
