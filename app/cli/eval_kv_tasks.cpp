#include "eval_kv_tasks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/runtime/kv_task_evaluation.h"

namespace lr::cli {
namespace {

enum class Task { ppl, summary, retrieval };

constexpr const char * kSummaryFlags[] = {"--reference", "--summary-tokens"};
constexpr const char * kRetrievalFlags[] = {"--lengths", "--depths", "--trials", "--seed"};

Result<Task> task_of(const Args & args) {
    const std::string name = args.get_or("--task", "ppl");
    if (name == "ppl") return Task::ppl;
    if (name == "summary") return Task::summary;
    if (name == "retrieval") return Task::retrieval;
    return error(StatusCode::invalid_argument, "--task: '" + name + "' is not a task (ppl, summary or retrieval)");
}

// A task's flags given to another task are mistakes, not options to ignore.
Status check_flags_belong(const Args & args, Task task) {
    auto refuse = [&](std::span<const char * const> flags, const char * owner) -> Status {
        for (const char * f : flags) {
            if (args.has(f)) return error(StatusCode::invalid_argument, std::string(f) + " needs --task " + owner);
        }
        return {};
    };
    if (task != Task::summary) LR_RETURN_IF_ERROR(refuse(kSummaryFlags, "summary"));
    if (task != Task::retrieval) LR_RETURN_IF_ERROR(refuse(kRetrievalFlags, "retrieval"));
    if (task != Task::ppl) {
        for (const char * f : {"--sweep", "--windows"}) {
            if (args.has(f)) return error(StatusCode::invalid_argument, std::string(f) + " is for --task ppl");
        }
    }
    if (task == Task::retrieval && args.has("-c")) {
        return error(StatusCode::invalid_argument, "-c is not for --task retrieval: each haystack's context is its length (--lengths)");
    }
    return {};
}

Result<std::vector<double>> parse_depths(const std::string & text) {
    std::vector<double> depths;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char * end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0' || !(v >= 0 && v <= 100)) {
            return error(StatusCode::invalid_argument, "--depths: '" + item + "' is not a percentage (0 to 100)");
        }
        depths.push_back(v / 100);
    }
    if (depths.empty()) return error(StatusCode::invalid_argument, "--depths: no depth given");
    return depths;
}

std::string json_rouge(const RougeScores & s) {
    auto one = [](const RougeScore & r) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "{\"precision\":%.6f,\"recall\":%.6f,\"f1\":%.6f}", r.precision, r.recall, r.f1);
        return std::string(buf);
    };
    return "{\"rouge1\":" + one(s.rouge1) + ",\"rouge2\":" + one(s.rouge2) + ",\"rougeL\":" + one(s.rouge_l) + "}";
}

double ratio(uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 0.0; }

int run_summary(const Args & args, const KvSettings & kv, std::shared_ptr<const Model> model, const std::string & document) {
    SummaryTaskParams params;
    auto n_ctx = args.get_int("-c", model->hparams().n_ctx_train, 8, 1 << 20);
    if (!n_ctx.ok()) return fail(n_ctx.status().message());
    params.n_ctx = uint32_t(*n_ctx);
    auto answer = args.get_int("--summary-tokens", params.answer_tokens, 1, 65536);
    if (!answer.ok()) return fail(answer.status().message());
    params.answer_tokens = uint32_t(*answer);
    if (auto ref = args.get("--reference")) {
        auto text = read_text_file(*ref);
        if (!text.ok()) return fail(text.status().message());
        params.reference = *text;
        if (params.reference.empty()) return fail("--reference: " + *ref + " is empty");
    }
    InterruptWatcher interrupt;
    auto e = evaluate_summary_task(model, document, kv, params, interrupt.arm());
    if (!e.ok()) return fail(e.status().message());

    if (args.has("--json")) {
        std::string out = "{\"task\":\"summary\",\"policy\":" + json_string(describe(kv)) +
                          ",\"chat_template\":" + (e->chat_template ? "true" : "false") +
                          ",\"document_tokens\":" + std::to_string(e->document_tokens) +
                          ",\"document_tokens_used\":" + std::to_string(e->document_tokens_used) +
                          ",\"prompt_tokens\":" + std::to_string(e->prompt_tokens) + ",\"summary_full\":" + json_string(e->full.text) +
                          ",\"summary\":" + json_string(e->policy.text) + ",\"tokens_full\":" + std::to_string(e->full.n_tokens) +
                          ",\"tokens\":" + std::to_string(e->policy.n_tokens) + ",\"rouge_vs_full\":" + json_rouge(e->policy_vs_full);
        if (e->full_vs_reference) {
            out += ",\"rouge_full_vs_reference\":" + json_rouge(*e->full_vs_reference) +
                   ",\"rouge_vs_reference\":" + json_rouge(*e->policy_vs_reference);
        }
        char kv_ratio[32];
        std::snprintf(kv_ratio, sizeof kv_ratio, "%.6f", ratio(e->policy.kv_bytes, e->full.kv_bytes));
        out += std::string(",\"kv_ratio\":") + kv_ratio + ",\"agreement_only\":" + (e->agreement_only ? "true" : "false") +
               ",\"note\":" + json_string(e->note) + "}";
        std::printf("%s\n", out.c_str());
        return 0;
    }
    std::printf("eval-kv --task summary: %s, %s prompt, document of %u tokens", model->hparams().name.c_str(),
                e->chat_template ? "chat-template" : "plain \"Summary:\"", e->document_tokens);
    if (e->document_tokens_used < e->document_tokens) std::printf(" (its first %u fit the context)", e->document_tokens_used);
    std::printf("\npolicy: %s\n\n", describe(kv).c_str());
    std::printf("full cache (%u tokens, %s):\n%s\n\n", e->full.n_tokens, stop_reason_name(e->full.reason), e->full.text.c_str());
    std::printf("policy (%u tokens, %s):\n%s\n\n", e->policy.n_tokens, stop_reason_name(e->policy.reason), e->policy.text.c_str());
    std::printf("| %-24s | %6s | %6s | %6s |\n|%s|%s|%s|%s|\n", "ROUGE F1", "R-1", "R-2", "R-L", std::string(26, '-').c_str(),
                std::string(8, '-').c_str(), std::string(8, '-').c_str(), std::string(8, '-').c_str());
    auto row = [](const char * what, const RougeScores & s) {
        std::printf("| %-24s | %6.4f | %6.4f | %6.4f |\n", what, s.rouge1.f1, s.rouge2.f1, s.rouge_l.f1);
    };
    row("policy vs full cache", e->policy_vs_full);
    if (e->full_vs_reference) {
        row("full cache vs reference", *e->full_vs_reference);
        row("policy vs reference", *e->policy_vs_reference);
    }
    std::printf("\nKV held at the end: %.1f%% of the full cache's.\nnote: %s.\n", 100 * ratio(e->policy.kv_bytes, e->full.kv_bytes),
                e->note.c_str());
    return 0;
}

int run_retrieval(const Args & args, const KvSettings & kv, std::shared_ptr<const Model> model, const std::string & filler) {
    RetrievalTaskParams params;
    if (auto lengths = args.get("--lengths")) {
        auto parsed = parse_token_counts(*lengths, "--lengths");
        if (!parsed.ok()) return fail(parsed.status().message());
        params.lengths = *parsed;
    } else {
        // A quarter, a half and all of the context (at most 4096 tokens: this runs on a CPU too).
        const uint32_t n = std::min<uint32_t>(model->hparams().n_ctx_train, 4096);
        if (n < 4 * kRetrievalExtraTokens) return fail("the model's trained context is too short for a retrieval test");
        params.lengths = {n / 4, n / 2, n - kRetrievalExtraTokens};
    }
    if (auto depths = args.get("--depths")) {
        auto parsed = parse_depths(*depths);
        if (!parsed.ok()) return fail(parsed.status().message());
        params.depths = *parsed;
    }
    auto trials = args.get_int("--trials", params.trials, 1, 1000);
    if (!trials.ok()) return fail(trials.status().message());
    params.trials = uint32_t(*trials);
    auto seed = args.get_int("--seed", (long long)params.seed, 0, INT64_MAX);
    if (!seed.ok()) return fail(seed.status().message());
    params.seed = uint64_t(*seed);

    InterruptWatcher interrupt;
    auto e = evaluate_retrieval_task(
        model, filler, kv, params,
        [](size_t done, size_t total) { std::fprintf(stderr, "\rretrieval: %zu/%zu questions   ", done, total); }, interrupt.arm());
    std::fprintf(stderr, "\r%60s\r", "");
    if (!e.ok()) return fail(e.status().message());

    const size_t n_depths = params.depths.size();
    if (args.has("--json")) {
        std::string cells;
        for (const RetrievalCell & c : e->cells) {
            char buf[192];
            std::snprintf(buf, sizeof buf,
                          "%s{\"length\":%u,\"depth\":%.4f,\"asked\":%u,\"recalled_full\":%u,\"recalled\":%u,\"agreed\":%u}",
                          cells.empty() ? "" : ",", c.length, c.depth, c.n_asked, c.recalled_full, c.recalled, c.agreed);
            cells += buf;
        }
        std::string questions;
        for (const RetrievalQuestion & q : e->questions) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "{\"length\":%u,\"depth\":%.4f,", q.length, q.depth);
            questions += std::string(questions.empty() ? "" : ",") + buf + "\"key\":" + json_string(q.key) +
                         ",\"value\":" + json_string(q.value) + ",\"answer_full\":" + json_string(q.answer_full) +
                         ",\"answer\":" + json_string(q.answer) + "}";
        }
        char totals[256];
        std::snprintf(totals, sizeof totals, "\"asked\":%u,\"recall_full\":%.6f,\"recall\":%.6f,\"agreement\":%.6f,\"kv_ratio\":%.6f",
                      e->n_asked, ratio(e->recalled_full, e->n_asked), ratio(e->recalled, e->n_asked), ratio(e->agreed, e->n_asked),
                      ratio(e->kv_bytes, e->kv_bytes_full));
        std::printf(
            "{\"task\":\"retrieval\",\"policy\":%s,\"trials\":%u,\"seed\":%llu,\"cells\":[%s],\"questions\":[%s],%s,\"agreement_only\":%s,\"note\":%s}\n",
            json_string(describe(kv)).c_str(), params.trials, (unsigned long long)params.seed, cells.c_str(), questions.c_str(), totals,
            e->agreement_only ? "true" : "false", json_string(e->note).c_str());
        return 0;
    }
    std::printf("eval-kv --task retrieval: %s, %u haystacks per length (seed %llu), one fact per depth\npolicy: %s\n",
                model->hparams().name.c_str(), params.trials, (unsigned long long)params.seed, describe(kv).c_str());
    auto table = [&](const char * title, auto cell_text) {
        std::printf("\n%s\n| depth |", title);
        for (uint32_t length : params.lengths) std::printf(" %13u |", length);
        std::printf("\n|-------|");
        for (size_t i = 0; i < params.lengths.size(); ++i) std::printf("---------------|");
        std::printf("\n");
        for (size_t id = 0; id < n_depths; ++id) {
            std::printf("| %4.0f%% |", 100 * params.depths[id]);
            for (size_t il = 0; il < params.lengths.size(); ++il) std::printf(" %13s |", cell_text(e->cells[il * n_depths + id]).c_str());
            std::printf("\n");
        }
    };
    auto pct = [](uint32_t n, uint32_t of) { return std::to_string(int(std::lround(100.0 * ratio(n, of)))) + "%"; };
    table("recall, policy (full cache), by depth and haystack length in tokens:",
          [&](const RetrievalCell & c) { return pct(c.recalled, c.n_asked) + " (" + pct(c.recalled_full, c.n_asked) + ")"; });
    table("agreement with the full cache's answer:", [&](const RetrievalCell & c) { return pct(c.agreed, c.n_asked); });
    std::printf("\nall %u questions: recall %s (full cache %s), agreement %s; KV held %.1f%% of the full cache's.\nnote: %s.\n", e->n_asked,
                pct(e->recalled, e->n_asked).c_str(), pct(e->recalled_full, e->n_asked).c_str(), pct(e->agreed, e->n_asked).c_str(),
                100 * ratio(e->kv_bytes, e->kv_bytes_full), e->note.c_str());
    return 0;
}

}  // namespace

std::vector<FlagSpec> eval_task_flags() {
    return {
        {"--task", "", true, false, "ppl (default: perplexity, KL, top-1), summary (ROUGE) or retrieval (facts planted in -f's text)"},
        {"--reference", "", true, false, "summary: a reference summary to score both runs against"},
        {"--summary-tokens", "", true, false, "summary: its length at most (default 128); -c is the context (default: the trained one)"},
        {"--lengths", "", true, false,
         "retrieval: haystack lengths in tokens, e.g. 256,512 (default: 1/4, 1/2, all of the trained context, at most 4096)"},
        {"--depths", "", true, false, "retrieval: where the facts go, in % of the text (default 0,25,50,75,100)"},
        {"--trials", "", true, false, "retrieval: haystacks per length (default 3)"},
        {"--seed", "", true, false, "retrieval: the seed of the keys and values (default 1)"},
    };
}

std::optional<int> run_eval_kv_task(const Args & args, const KvSettings & kv) {
    auto task = task_of(args);
    if (!task.ok()) return fail(task.status().message());
    if (Status s = check_flags_belong(args, *task); !s.ok()) return fail(s.message());
    if (*task == Task::ppl) return std::nullopt;
    auto text = read_text_file(*args.get("-f"));
    if (!text.ok()) return fail(text.status().message());
    Engine engine;
    if (Status s = load_model(args, engine); !s.ok()) return fail(s.message());
    return *task == Task::summary ? run_summary(args, kv, engine.model(), *text) : run_retrieval(args, kv, engine.model(), *text);
}

}  // namespace lr::cli
