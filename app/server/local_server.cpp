#include "local_server.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "app/server/generation_queue.h"
#include "app/server/http_routes.h"
#include "engine/api/model_info.h"

namespace lr::server {
namespace {

Status cannot_listen(const std::string & host, int port, int errno_value) {
    std::string message = "cannot listen on " + host + ":" + std::to_string(port);
    if (errno_value != 0) message += std::string(": ") + std::strerror(errno_value);
    message += " (another program may be listening there: choose another port)";
    return error(StatusCode::io_error, message);
}

}  // namespace

std::string served_model_id(const std::string & model_path) {
    if (model_path == kBundledModelName) return model_path;
    return std::filesystem::path(model_path).stem().string();
}

Result<std::unique_ptr<LocalServer>> LocalServer::start(std::shared_ptr<const Model> model, LocalServerOptions options) {
    // The queue records into the server's metrics: make the server first, then its queue.
    std::unique_ptr<LocalServer> server(new LocalServer(std::move(options)));
    LR_ASSIGN_OR_RETURN(server->queue_,
                        GenerationQueue::create(std::move(model), server->options_.session, server->options_.parallel, server->metrics_));
    const LocalServerOptions & o = server->options_;
    server->routes_ = std::make_unique<HttpRoutes>(HttpOptions{.model_id = o.model_id, .api_key = o.api_key, .cors_origin = o.cors_origin},
                                                   RequestDefaults{.sampler = o.sampler, .kv_flags = o.kv_flags, .thinking = o.thinking},
                                                   *server->queue_, server->metrics_);
    errno = 0;
    if (o.port == 0) {
        server->port_ = server->routes_->bind_to_any_port(o.host);
        if (server->port_ < 0) return cannot_listen(o.host, 0, errno);
    } else {
        if (!server->routes_->bind(o.host, o.port)) return cannot_listen(o.host, o.port, errno);
        server->port_ = o.port;
    }
    LocalServer & s = *server;
    s.listener_ = std::thread([&s] {
        // httplib writes without MSG_NOSIGNAL: a client that hangs up would kill the process
        // through SIGPIPE. Blocked here, and in the workers listen() starts (they inherit
        // the mask), a write fails with EPIPE instead, whatever the host does with SIGPIPE.
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        const bool served = s.routes_->listen();
        std::lock_guard lock(s.mutex_);
        s.served_ = served;
        s.listening_ = false;
        s.listen_returned_.notify_all();
    });
    return server;
}

LocalServer::LocalServer(LocalServerOptions options) : options_(std::move(options)) {}

LocalServer::~LocalServer() { stop(); }

void LocalServer::stop() {
    std::unique_lock lock(mutex_);
    if (stopped_ || !listener_.joinable()) return;
    stopped_ = true;
    queue_->cancel_all();
    // A stop() before listen() begins would be lost: wait until it runs or has returned.
    while (listening_ && !routes_->running()) {
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        lock.lock();
    }
    lock.unlock();
    routes_->stop();
    listener_.join();
}

bool LocalServer::wait() {
    std::unique_lock lock(mutex_);
    listen_returned_.wait(lock, [&] { return !listening_; });
    return served_;
}

std::string LocalServer::base_url() const { return "http://" + options_.host + ":" + std::to_string(port_) + "/v1"; }

uint32_t LocalServer::context_limit() const { return queue_->context_limit(); }

LocalServerFigures LocalServer::figures() const {
    return {.queue = queue_->figures(),
            .completions_served = metrics_.completions_served(),
            .kv = queue_->kv_stats(),
            .sequences = queue_->sequence_stats()};
}

KvStats LocalServer::kv_stats() const { return queue_->kv_stats(); }

}  // namespace lr::server
