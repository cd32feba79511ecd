// bench-turns: what the second turn of a conversation over a long document costs, and
// reopening it, against re-reading the whole prompt (what llama.cpp does on every turn of
// a hybrid model, whose recurrent states cannot be cut back).
//
//   longread-cli bench-turns -m M --doc 8192,32768 [-n 16] [-q 32] [-t 2] [--chunk 256] [--json]
//
// For each document length D: a session reads a random document of D tokens (turn 1) and
// answers with -n greedy tokens; then the question of turn 2 (-q tokens) is timed to its
// first token three ways:
//   live      in the same session (its cache holds the document, a hybrid the states at
//             the end of turn 1's prompt and reply)
//   reread    a fresh session without prefix cache reads the whole conversation (the anchor)
//   reopened  a fresh session on the prefix cache turn 1 persisted reads the whole
//             conversation (as a new process would; the model stays loaded)
// The prefix cache lives in a temporary directory (--kv-dir to choose one), so nothing
// earlier is restored.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"

namespace lr::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct TurnTimes {
    uint32_t doc_tokens = 0;
    uint32_t conversation_tokens = 0;  // turn 1, its reply and turn 2
    double turn1_s = 0;                // reading the document (to the first token)
    double live_s = 0, reread_s = 0, reopened_s = 0;
    uint64_t restored_tokens = 0;  // by the reopened session
    uint64_t restored_states = 0;
    uint32_t snapshot_interval = 0;
    uint64_t snapshot_bytes = 0;  // one snapshot of a sequence's recurrent states (0: none)
    double store_mib = 0;         // the prefix cache on disk after turn 1 and its reply
};

Status timed_append(Session & s, std::span<const int32_t> tokens, double & seconds) {
    const auto t0 = Clock::now();
    LR_RETURN_IF_ERROR(s.append(tokens));
    seconds = seconds_since(t0);
    return {};
}

int32_t greedy(std::span<const float> logits) { return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()); }

uint64_t directory_bytes(const std::string & dir) {
    uint64_t n = 0;
    std::error_code ec;
    for (const auto & e : std::filesystem::recursive_directory_iterator(dir, ec)) {
        if (e.is_regular_file(ec)) n += e.file_size(ec);
    }
    return n;
}

Result<TurnTimes> measure(const std::shared_ptr<const Model> & model, SessionConfig config, uint32_t doc_tokens, uint32_t n_reply,
                          uint32_t n_question) {
    const int32_t n_vocab = int32_t(model->hparams().n_vocab);
    std::mt19937 rng(doc_tokens);
    auto random_tokens = [&](uint32_t n) {
        std::vector<int32_t> t(n);
        for (int32_t & id : t) id = 3 + int32_t(rng() % uint32_t(n_vocab - 3));  // above the usual specials
        return t;
    };
    std::vector<int32_t> conversation = random_tokens(doc_tokens);

    TurnTimes r;
    r.doc_tokens = doc_tokens;
    {
        LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> live, Session::create(model, config));
        LR_RETURN_IF_ERROR(timed_append(*live, conversation, r.turn1_s));
        for (uint32_t i = 0; i < n_reply; ++i) {
            const int32_t next = greedy(live->logits());
            conversation.push_back(next);
            LR_RETURN_IF_ERROR(live->append(std::span(&next, 1)));
        }
        const std::vector<int32_t> question = random_tokens(n_question);
        conversation.insert(conversation.end(), question.begin(), question.end());
        live->kv_cache().flush();  // turn 1 on disk before turn 2, as between two turns
        r.store_mib = double(directory_bytes(config.kv.dir)) / (1 << 20);
        LR_RETURN_IF_ERROR(timed_append(*live, question, r.live_s));
        r.snapshot_interval = live->kv_cache().snapshot_interval();
        for (const KvLayerKindStats & k : live->kv_stats().layer_kinds) {
            if (k.kind == KvLayerKind::recurrent && k.snapshots > 0) r.snapshot_bytes = k.snapshot_bytes / k.snapshots;
        }
    }
    r.conversation_tokens = uint32_t(conversation.size());
    {
        SessionConfig anchor = config;
        anchor.kv.prefix_cache = false;
        LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> reread, Session::create(model, anchor));
        LR_RETURN_IF_ERROR(timed_append(*reread, conversation, r.reread_s));
    }
    {
        LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> reopened, Session::create(model, config));
        LR_RETURN_IF_ERROR(timed_append(*reopened, conversation, r.reopened_s));
        r.restored_tokens = reopened->kv_stats().restored_tokens;
        r.restored_states = reopened->kv_stats().restored_states;
    }
    return r;
}

}  // namespace

int run_bench_turns(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(),
                                              session_flags(),
                                              kv_flags(),
                                              {
                                                  {"--doc", "", true, false, "document lengths in tokens, e.g. 8192,32768 (default 8192)"},
                                                  {"-n", "--n-reply", true, false, "tokens of the first answer (default 16)"},
                                                  {"-q", "--n-question", true, false, "tokens of the second question (default 32)"},
                                                  {"--json", "", false, false, "print one JSON object"},
                                                  {"-h", "--help", false, false, "this help"},
                                              }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "bench-turns [-m MODEL] [--doc 8192,32768] [-n 16] [-q 32] [-t THREADS] [--json]", exit_code);
    if (!args) return exit_code;
    auto n_reply = args->get_int("-n", 16, 1, 4096);
    auto n_question = args->get_int("-q", 32, 1, 65536);
    if (!n_reply.ok()) return fail(n_reply.status().message());
    if (!n_question.ok()) return fail(n_question.status().message());
    auto docs = parse_token_counts(args->get("--doc").value_or("8192"), "--doc");
    if (!docs.ok()) return fail(docs.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const std::shared_ptr<const Model> model = engine.model();
    auto options = session_options(*args, *model);
    if (!options.ok()) return fail(options.status().message());
    SessionConfig config = session_config(*options);
    uint32_t longest = 0;
    for (uint32_t d : *docs) longest = std::max(longest, d);
    if (config.n_ctx == 0) config.n_ctx = std::min(model->hparams().n_ctx_train, longest + uint32_t(*n_reply + *n_question));
    if (longest + uint64_t(*n_reply + *n_question) > config.n_ctx) {
        return fail("--doc " + std::to_string(longest) + " and its turns do not fit the context of " + std::to_string(config.n_ctx) +
                    " tokens: raise -c");
    }
    config.kv.prefix_cache = true;
    std::filesystem::path temporary;
    if (!args->has("--kv-dir")) {
        temporary = std::filesystem::temp_directory_path() / ("longread-bench-turns-" + std::to_string(::getpid()));
        config.kv.dir = temporary.string();
    }

    std::vector<TurnTimes> results;
    for (uint32_t d : *docs) {
        if (!temporary.empty()) std::filesystem::remove_all(temporary);  // each length starts from an empty prefix cache
        auto r = measure(model, config, d, uint32_t(*n_reply), uint32_t(*n_question));
        if (!r.ok()) {
            if (!temporary.empty()) std::filesystem::remove_all(temporary);
            return fail(r.status().message());
        }
        results.push_back(*r);
    }
    if (!temporary.empty()) std::filesystem::remove_all(temporary);

    if (args->has("--json")) {
        std::string out = "{\"model\":" + json_string(model->file().path()) + ",\"backend\":" + json_string(engine.backend().name()) +
                          ",\"chunk\":" + std::to_string(config.chunk_tokens) + ",\"n_reply\":" + std::to_string(*n_reply) +
                          ",\"n_question\":" + std::to_string(*n_question) + ",\"docs\":[";
        for (size_t i = 0; i < results.size(); ++i) {
            const TurnTimes & r = results[i];
            char buf[768];
            std::snprintf(buf, sizeof buf,
                          "%s{\"doc_tokens\":%u,\"conversation_tokens\":%u,\"turn1_s\":%.4f,\"live_s\":%.4f,\"reread_s\":%.4f,"
                          "\"reopened_s\":%.4f,\"restored_tokens\":%llu,\"restored_states\":%llu,\"snapshot_interval\":%u,"
                          "\"snapshot_bytes\":%llu,\"store_mib\":%.2f}",
                          i ? "," : "", r.doc_tokens, r.conversation_tokens, r.turn1_s, r.live_s, r.reread_s, r.reopened_s,
                          (unsigned long long)r.restored_tokens, (unsigned long long)r.restored_states, r.snapshot_interval,
                          (unsigned long long)r.snapshot_bytes, r.store_mib);
            out += buf;
        }
        out += "]}\n";
        std::fputs(out.c_str(), stdout);
        return 0;
    }
    std::printf("model    %s\nbackend  %s, chunk %u, reply %lld tokens, question %lld tokens\n", model->file().path().c_str(),
                engine.backend().name().c_str(), config.chunk_tokens, *n_reply, *n_question);
    std::printf("%8s %8s %10s %10s %10s %10s %10s %10s %12s\n", "doc", "turn1 s", "live s", "reread s", "reopened s", "restored",
                "interval", "snapshot", "store MiB");
    for (const TurnTimes & r : results) {
        std::printf("%8u %8.2f %10.3f %10.2f %10.3f %10llu %10u %8.2f MiB %10.1f\n", r.doc_tokens, r.turn1_s, r.live_s, r.reread_s,
                    r.reopened_s, (unsigned long long)r.restored_tokens, r.snapshot_interval, double(r.snapshot_bytes) / (1 << 20),
                    r.store_mib);
    }
    return 0;
}

}  // namespace lr::cli
