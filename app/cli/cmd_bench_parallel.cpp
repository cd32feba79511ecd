// bench-parallel: decode throughput with several sequences generating at once, as `serve
// --parallel N` runs them (SequenceBatch: one forward pass per step for all).
//
//   longread-cli bench-parallel -m M --parallel 1,2,4,8 [-p 64] [-n 64] [-r 3] [-t 2] [--kv-* ...] [--json]
//
// For each N: N sequences of a random -p-token prompt each generate -n tokens (greedy);
// admitted as the server admits them (each reserves its KV out of the shared tier budgets:
// one that does not fit waits for one to end; one that never fits is refused). Reported:
// the aggregate decode rate over the steps where all admitted sequences were generating,
// its ratio to N = 1, how many ran at once, refusals, and the KV a sequence held at the
// end of its prompt and generation. Medians of -r repeats.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/runtime/sequence_batch.h"

namespace lr::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct ParallelRun {
    double decode_tok_s = 0;  // aggregate, over the steps where every running sequence decoded
    uint32_t most_running = 0;
    uint32_t refused = 0;
    uint64_t kv_bytes_per_sequence = 0;  // the KV held at the fullest step, per running sequence
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Result<ParallelRun> run_once(const std::shared_ptr<const Model> & model, const SessionConfig & config, uint32_t n_seq, uint32_t n_prompt,
                             uint32_t n_gen, uint32_t seed) {
    LR_ASSIGN_OR_RETURN(std::unique_ptr<SequenceBatch> batch, SequenceBatch::create(model, config, n_seq));
    std::mt19937 rng(seed);
    const uint32_t n_vocab = model->hparams().n_vocab;
    ParallelRun r;
    uint64_t generated = 0;
    uint32_t waiting = n_seq;
    uint32_t generating = 0;                            // running sequences past their prompt
    std::map<uint64_t, std::shared_ptr<bool>> started;  // by id: whether it has given a token
    double decode_s = 0;
    uint64_t decoded = 0;
    uint64_t fullest_bytes = 0;
    uint32_t fullest_running = 0;
    while (waiting > 0 || batch->running() > 0) {
        while (waiting > 0) {
            BatchSequenceRequest request;
            request.prompt.resize(n_prompt);
            for (int32_t & t : request.prompt) t = int32_t(3 + rng() % (n_vocab - 3));
            request.params.max_tokens = int32_t(n_gen);
            request.params.sampler.temperature = 0;
            request.selection = config.kv;
            auto first = std::make_shared<bool>(false);
            request.sink = [&, first](int32_t token, std::string_view) {
                if (token < 0) return true;
                ++generated;
                if (!*first) ++generating;
                *first = true;
                return true;
            };
            const Result<uint64_t> reservation = batch->reserve(request);
            if (!reservation.ok()) {
                ++r.refused;
                --waiting;
                continue;
            }
            if (!batch->fits_now(*reservation)) break;
            LR_ASSIGN_OR_RETURN(const uint64_t id, batch->add(std::move(request), *reservation));
            started[id] = first;
            --waiting;
        }
        r.most_running = std::max(r.most_running, uint32_t(batch->running()));
        // A step in which no prompt is read: every running sequence decodes one token.
        const bool decode_only = generating == batch->running();
        const uint64_t before = generated;
        const auto t0 = Clock::now();
        for (const SequenceBatch::Finished & f : batch->step()) {
            LR_RETURN_IF_ERROR(f.result.status());
            if (*started.at(f.id)) --generating;
            started.erase(f.id);
        }
        if (decode_only) {
            decode_s += std::chrono::duration<double>(Clock::now() - t0).count();
            decoded += generated - before;
        }
        // What the sequences hold (the tiers' bytes would count the prefix store's too).
        uint64_t used = 0;
        for (const KvLayerKindStats & k : batch->kv_stats().layer_kinds) used += k.bytes;
        if (used > fullest_bytes && batch->running() > 0) {
            fullest_bytes = used;
            fullest_running = uint32_t(batch->running());
        }
    }
    r.decode_tok_s = decode_s > 0 ? double(decoded) / decode_s : 0;
    r.kv_bytes_per_sequence = fullest_running ? fullest_bytes / fullest_running : 0;
    return r;
}

}  // namespace

int run_bench_parallel(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(),
                                              session_flags(),
                                              kv_flags(),
                                              {
                                                  {"--parallel", "", true, false, "sequences at once, e.g. 1,2,4,8 (default 1,2,4,8)"},
                                                  {"-p", "--n-prompt", true, false, "prompt tokens per sequence (default 64)"},
                                                  {"-n", "--n-gen", true, false, "tokens each sequence generates (default 64)"},
                                                  {"-r", "--repetitions", true, false, "repeats; figures are medians (default 3)"},
                                                  {"--json", "", false, false, "print one JSON object"},
                                                  {"-h", "--help", false, false, "this help"},
                                              }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "bench-parallel [-m MODEL] [--parallel 1,2,4,8] [-p 64] [-n 64] [-t THREADS] [--json]", exit_code);
    if (!args) return exit_code;
    auto counts = parse_token_counts(args->get_or("--parallel", "1,2,4,8"), "--parallel");
    auto n_prompt = args->get_int("-p", 64, 1, 1 << 20);
    auto n_gen = args->get_int("-n", 64, 1, 1 << 20);
    auto reps = args->get_int("-r", 3, 1, 100);
    if (!counts.ok()) return fail(counts.status().message());
    if (!n_prompt.ok()) return fail(n_prompt.status().message());
    if (!n_gen.ok()) return fail(n_gen.status().message());
    if (!reps.ok()) return fail(reps.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const std::shared_ptr<const Model> model = engine.model();
    auto options = session_options(*args, *model);
    if (!options.ok()) return fail(options.status().message());
    SessionConfig config = session_config(*options);
    if (config.n_ctx == 0) config.n_ctx = std::min(model->hparams().n_ctx_train, uint32_t(*n_prompt + *n_gen + 1));

    struct Row {
        uint32_t n;
        double tok_s;
        ParallelRun last;
        std::vector<double> all;
    };
    std::vector<Row> rows;
    for (uint32_t n : *counts) {
        Row row{.n = n, .tok_s = 0, .last = {}, .all = {}};
        for (long long rep = 0; rep < *reps; ++rep) {
            auto r = run_once(model, config, n, uint32_t(*n_prompt), uint32_t(*n_gen), uint32_t(rep + 1));
            if (!r.ok()) return fail(r.status().message());
            row.all.push_back(r->decode_tok_s);
            row.last = *r;
        }
        row.tok_s = median(row.all);
        rows.push_back(row);
    }
    const double single = rows.empty() || rows[0].n != 1 ? 0 : rows[0].tok_s;
    if (args->has("--json")) {
        std::string out = "{\"model\":" + json_string(model->file().path()) + ",\"backend\":" + json_string(engine.backend().name()) +
                          ",\"policy\":" + json_string(describe(config.kv)) + ",\"n_prompt\":" + std::to_string(*n_prompt) +
                          ",\"n_gen\":" + std::to_string(*n_gen) + ",\"rows\":[";
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row & r = rows[i];
            char buf[320];
            std::snprintf(buf, sizeof buf,
                          "%s{\"parallel\":%u,\"decode_tok_s\":%.3f,\"ratio_to_one\":%.4f,\"most_running\":%u,\"refused\":%u,"
                          "\"kv_bytes_per_sequence\":%llu}",
                          i ? "," : "", r.n, r.tok_s, single > 0 ? r.tok_s / single : 0.0, r.last.most_running, r.last.refused,
                          (unsigned long long)r.last.kv_bytes_per_sequence);
            out += buf;
        }
        std::fputs((out + "]}\n").c_str(), stdout);
        return 0;
    }
    std::printf("model    %s\nbackend  %s, cache %s, prompt %lld, %lld tokens each\n", model->file().path().c_str(),
                engine.backend().name().c_str(), describe(config.kv).c_str(), *n_prompt, *n_gen);
    std::printf("%9s %14s %8s %12s %8s %14s\n", "parallel", "decode tok/s", "x one", "at once", "refused", "KV/sequence");
    for (const Row & r : rows) {
        std::printf("%9u %14.1f %8.2f %12u %8u %10.2f MiB\n", r.n, r.tok_s, single > 0 ? r.tok_s / single : 0.0, r.last.most_running,
                    r.last.refused, double(r.last.kv_bytes_per_sequence) / (1 << 20));
    }
    return 0;
}

}  // namespace lr::cli
