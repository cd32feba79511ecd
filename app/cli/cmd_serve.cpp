// serve: an OpenAI-compatible HTTP server on the engine (app/server). Requests wait in a
// queue; one engine thread runs up to --parallel of them at once (continuous batching).
// SIGINT or SIGTERM stops it.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/server/local_server.h"

namespace lr::cli {
namespace {

// The server's own --kv-* flags, as the per-request settings start from them; the
// design's spellings --kv-cache-policy and --h2o-keep-ratio become the CLI's.
Result<server::KvFlags> server_kv_flags(const Args & args) {
    if (args.has("--kv-cache-policy") && args.has("--kv-policy")) {
        return error(StatusCode::invalid_argument, "give --kv-policy or --kv-cache-policy, not both");
    }
    if (args.has("--h2o-keep-ratio") && (args.has("--kv-policy") || args.has("--kv-cache-policy") || args.has("--keep-ratio"))) {
        return error(StatusCode::invalid_argument,
                     "--h2o-keep-ratio sets the policy and the ratio: give neither --kv-policy nor --keep-ratio");
    }
    server::KvFlags flags;
    for (const FlagSpec & spec : kv_flags()) {
        if (!args.has(spec.name)) continue;
        flags.emplace_back(spec.name, spec.takes_value ? *args.get(spec.name) : "");
    }
    if (args.has("--kv-cache-policy")) flags.emplace_back("--kv-policy", *args.get("--kv-cache-policy"));
    if (args.has("--h2o-keep-ratio")) {
        flags.emplace_back("--kv-policy", "h2o");
        flags.emplace_back("--keep-ratio", *args.get("--h2o-keep-ratio"));
    }
    return flags;
}

Result<std::string> api_key(const Args & args) {
    if (args.has("--api-key") && args.has("--api-key-file"))
        return error(StatusCode::invalid_argument, "give --api-key or --api-key-file, not both");
    if (!args.has("--api-key-file")) return args.get_or("--api-key", "");
    LR_ASSIGN_OR_RETURN(std::string key, read_text_file(*args.get("--api-key-file")));
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty()) return error(StatusCode::invalid_argument, *args.get("--api-key-file") + ": the key file is empty");
    return key;
}

bool loopback(const std::string & host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

int run_serve(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         session_flags(),
         sampling_flags(),
         thinking_flags(),
         kv_flags(),
         {
             {"--kv-cache-policy", "", true, false, "same as --kv-policy"},
             {"--h2o-keep-ratio", "", true, false, "same as --kv-policy h2o --keep-ratio R"},
             {"--host", "", true, false, "address to listen on (default 127.0.0.1)"},
             {"--port", "", true, false, "port to listen on (default 8080)"},
             {"--parallel", "-np", true, false, "requests generating at once, sharing the KV budgets (default 4)"},
             {"--api-key", "", true, false, "the key clients must send (Authorization: Bearer KEY)"},
             {"--api-key-file", "", true, false, "read the API key from this file"},
             {"--insecure", "", false, false, "allow another address than loopback without an API key"},
             {"--cors", "", true, false, "allow browser pages of this origin (default: no CORS)"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [options]", exit_code);
    if (!args) return exit_code;
    auto port = args->get_int("--port", 8080, 0, 65535);
    if (!port.ok()) return fail(port.status().message());
    auto parallel = args->get_int("--parallel", 4, 1, 256);
    if (!parallel.ok()) return fail(parallel.status().message());
    auto key = api_key(*args);
    if (!key.ok()) return fail(key.status().message());
    const std::string host = args->get_or("--host", "127.0.0.1");
    if (!loopback(host) && key->empty()) {
        if (!args->has("--insecure")) return fail("serving on " + host + " needs an API key (--api-key or --api-key-file), or --insecure");
        std::fprintf(stderr, "warning: serving on %s without an API key: anyone who can reach this address can use the model\n",
                     host.c_str());
    }
    auto sampler = sampler_params(*args);
    if (!sampler.ok()) return fail(sampler.status().message());
    auto thinking = thinking_choice(*args);
    if (!thinking.ok()) return fail(thinking.status().message());
    auto flags = server_kv_flags(*args);
    if (!flags.ok()) return fail(flags.status().message());
    // The requests' defaults, checked now through the same path as a request's settings.
    const auto kv = server::kv_settings_for_request(*flags, nullptr);
    if (const auto * e = std::get_if<server::ApiError>(&kv)) return fail(e->message);

    // The signals go to a thread of their own (blocked everywhere else, so set before any
    // thread starts, the engine's included); a client that hangs up must not kill the server through SIGPIPE.
    signal(SIGPIPE, SIG_IGN);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    auto options = session_options(*args, *engine.model());
    if (!options.ok()) return fail(options.status().message());
    options->kv = std::get<KvSettings>(kv);

    const std::string model_id = server::served_model_id(engine.model_info().path);
    auto started = server::LocalServer::start(engine.model(), {.session = *options,
                                                               .parallel = uint32_t(*parallel),
                                                               .host = host,
                                                               .port = int(*port),
                                                               .model_id = model_id,
                                                               .api_key = *key,
                                                               .cors_origin = args->get_or("--cors", ""),
                                                               .sampler = *sampler,
                                                               .kv_flags = *flags,
                                                               .thinking = *thinking});
    if (!started.ok()) return fail(started.status().message());
    server::LocalServer & server = **started;
    std::fprintf(stderr, "Longread serving %s on http://%s:%d/v1 (context %u tokens, %lld at once)%s. Ctrl-C stops.\n", model_id.c_str(),
                 host.c_str(), server.port(), server.context_limit(), *parallel, key->empty() ? "" : ", API key required");
    std::atomic<bool> signalled{false};
    std::thread signal_watcher([&] {
        int signal_number = 0;
        sigwait(&stop_signals, &signal_number);
        signalled = true;
        server.stop();
    });
    const bool served = server.wait();
    if (!signalled) pthread_kill(signal_watcher.native_handle(), SIGTERM);  // listen() failed by itself
    signal_watcher.join();
    if (!served) return fail("the server stopped on a socket error");
    if (Status s = report_kv_stats(*args, server.kv_stats()); !s.ok()) return fail(s.message());
    return 0;
}

}  // namespace lr::cli
