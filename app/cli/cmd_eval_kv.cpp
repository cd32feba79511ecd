// eval-kv: what a cache policy costs in quality, memory and speed, against the full cache.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/eval_kv_tasks.h"
#include "app/cli/interrupt.h"
#include "engine/runtime/attention_map.h"
#include "engine/runtime/kv_evaluation.h"

namespace lr::cli {
namespace {

std::string json_of(const KvSettings & kv, const KvEvaluation & e) {
    char buf[768];
    std::snprintf(
        buf, sizeof buf,
        "{\"policy\":%s,\"ppl_full\":%.6f,\"ppl\":%.6f,\"delta_ppl\":%.6f,\"kld\":%.8f,\"top1_agree\":%.6f,"
        "\"kv_bytes\":%llu,\"kv_bytes_full\":%llu,\"kv_ratio\":%.6f,\"read_ratio\":%.6f,\"tok_s\":%.3f,\"tok_s_full\":%.3f,\"windows\":%zu,"
        "\"scored\":%zu}",
        json_string(describe(kv)).c_str(), e.ppl_full, e.ppl, e.ppl - e.ppl_full, e.kld, e.top1_agree, (unsigned long long)e.kv_bytes,
        (unsigned long long)e.kv_bytes_full, e.kv_bytes_full ? double(e.kv_bytes) / double(e.kv_bytes_full) : 0.0, e.read_ratio, e.tok_s,
        e.tok_s_full, e.n_windows, e.n_scored);
    return buf;
}

void print_row(const KvSettings & kv, const KvEvaluation & e) {
    std::printf("| %-44s | %8.4f | %+8.4f | %9.5f | %6.1f%% | %6.1f%% | %6.1f%% | %5.2fx |\n", describe(kv).c_str(), e.ppl,
                e.ppl - e.ppl_full, e.kld, 100 * e.top1_agree, e.kv_bytes_full ? 100.0 * double(e.kv_bytes) / double(e.kv_bytes_full) : 0.0,
                100 * e.read_ratio, e.tok_s_full > 0 ? e.tok_s / e.tok_s_full : 0.0);
    std::fflush(stdout);
}

}  // namespace

int run_eval_kv(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         kv_flags(),
         {
             {"-f", "--file", true, false, "the text to evaluate on"},
             {"-c", "--ctx-size", true, false, "window size in tokens (default 512)"},
             {"--windows", "", true, false, "evaluate at most this many windows (default: all)"},
             {"--policy", "", true, false, "same as --kv-policy"},
             {"--sweep", "", false, false, "every policy at 50/20/10%, codec and layer budget"},
             {"--json", "", false, false, "print one JSON object (one per line with --sweep)"},
             {"--attention-out", "", true, false,
              "write where the model looks in the first window, full cache and the policy, as JSON to FILE and a plot to FILE.png"},
             {"-h", "--help", false, false, "this help"},
             // Warm-up measurements: prompts read in smaller ubatches.
             {"--chunk", "", true, false, "prefill chunk of each window's prompt half, or auto (default 256)"},
         },
         eval_task_flags()});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "eval-kv [-m MODEL] -f FILE [-c N] --kv-policy P [--keep-ratio R] [--json] [--sweep]", exit_code);
    if (!args) return exit_code;
    if (!args->has("-f")) return fail("eval-kv needs a text file (-f FILE)");
    std::vector<std::string> argv_kv = argv;
    if (args->has("--policy")) {
        argv_kv.push_back("--kv-policy");
        argv_kv.push_back(*args->get("--policy"));
    }
    auto args_kv = Args::parse(argv_kv, join({specs, {{"--kv-policy", "", true, true, ""}}}));
    auto kv = kv_settings(*args_kv);
    if (!kv.ok()) return fail(kv.status().message());
    // --task summary|retrieval (eval_kv_tasks.cpp); ppl, the default, goes on here.
    if (std::optional<int> done = run_eval_kv_task(*args, *kv)) return *done;
    auto n_ctx = args->get_int("-c", 512, 8, 1 << 20);
    if (!n_ctx.ok()) return fail(n_ctx.status().message());
    auto windows = args->get_int("--windows", 0, 0, 1 << 20);
    if (!windows.ok()) return fail(windows.status().message());
    auto chunk = chunk_tokens(*args);
    if (!chunk.ok()) return fail(chunk.status().message());
    auto text = read_text_file(*args->get("-f"));
    if (!text.ok()) return fail(text.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const std::shared_ptr<const Model> model = engine.model();
    if (uint32_t(*n_ctx) > model->hparams().n_ctx_train) return fail("-c exceeds the model's trained context");
    const std::vector<int32_t> tokens = model->tokenizer().encode(*text, true, false);
    const bool json = args->has("--json");

    std::vector<KvSettings> runs;
    if (args->has("--sweep")) {
        for (KvPolicy p : {KvPolicy::h2o, KvPolicy::snapkv, KvPolicy::streaming, KvPolicy::quest, KvPolicy::random}) {
            for (double ratio : {0.5, 0.2, 0.1}) {
                KvSettings s = *kv;
                s.policy = p;
                s.keep_ratio = ratio;
                s.budget_tokens = 0;
                if (p == KvPolicy::snapkv) s.then = KvPolicy::h2o;  // the budget holds during decoding too
                runs.push_back(s);
            }
        }
        for (auto [k, v] : {std::pair{8u, 8u}, {8u, 4u}, {4u, 4u}}) {
            KvSettings s = *kv;
            s.policy = KvPolicy::none;
            s.k_bits = k;
            s.v_bits = v;
            runs.push_back(s);
        }
        // Per-layer budgets: h2o and snapkv (then h2o) with the shapes the rows above do not have.
        for (KvLayerBudget shape : {KvLayerBudget::uniform, KvLayerBudget::pyramid, KvLayerBudget::inverse}) {
            if (shape == kv->layer_budget) continue;
            for (KvPolicy p : {KvPolicy::h2o, KvPolicy::snapkv}) {
                for (double ratio : {0.5, 0.2, 0.1}) {
                    KvSettings s = *kv;
                    s.policy = p;
                    s.keep_ratio = ratio;
                    s.budget_tokens = 0;
                    if (p == KvPolicy::snapkv) s.then = KvPolicy::h2o;
                    s.layer_budget = shape;
                    runs.push_back(s);
                }
            }
        }
    } else {
        runs.push_back(*kv);
    }
    if (!json) {
        std::printf("eval-kv: %s, %zu tokens, windows of %lld\n\n", model->hparams().name.c_str(), tokens.size(), *n_ctx);
        std::printf("| %-44s | %8s | %8s | %9s | %7s | %7s | %7s | %6s |\n", "policy", "PPL", "dPPL", "KL", "top-1", "KV", "read", "speed");
        std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(10, '-').c_str(), std::string(10, '-').c_str(),
                    std::string(11, '-').c_str(), std::string(9, '-').c_str(), std::string(9, '-').c_str(), std::string(9, '-').c_str(),
                    std::string(8, '-').c_str());
    }
    InterruptWatcher interrupt;
    const std::stop_token stop = interrupt.arm();
    for (const KvSettings & s : runs) {
        auto e = evaluate_kv_policy(
            model, tokens, uint32_t(*n_ctx), s, size_t(*windows),
            [&](size_t done, size_t total) { std::fprintf(stderr, "\r%s: %zu/%zu windows   ", describe(s).c_str(), done, total); }, stop,
            *chunk);
        std::fprintf(stderr, "\r%80s\r", "");
        if (!e.ok()) return fail(e.status().message());
        if (json) {
            std::printf("%s\n", json_of(s, *e).c_str());
            std::fflush(stdout);
        } else {
            print_row(s, *e);
        }
    }
    // --attention-out: the first window's attention, full cache against the policy of the
    // flags (attention_map.h).
    if (const std::optional<std::string> out = args->get("--attention-out")) {
        auto compared = compare_attention(model, tokens, uint32_t(*n_ctx), *kv, stop);
        if (!compared.ok()) return fail(compared.status().message());
        if (Status s = write_attention_files(*out, *compared); !s.ok()) return fail(s.message());
        std::fprintf(stderr, "where the model looks: %s, plot %s\n", out->c_str(), attention_plot_path(*out).c_str());
    }
    if (!json && !runs.empty()) {
        std::printf(
            "\nfull cache: PPL as above minus dPPL; KV (held), read (KV rows attention read while decoding) and speed are "
            "relative to the full cache.\n");
    }
    return 0;
}

}  // namespace lr::cli
