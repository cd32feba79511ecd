// summarize: a document of any length, in one pass when it fits the context, else
// map-reduce over chunks. The same summarizer the desktop app runs. Ctrl-C stops.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"

namespace lr::cli {

int run_summarize(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         session_flags(),
         sampling_flags(),
         {
             {"-f", "--file", true, false, "the document (UTF-8 text)"},
             {"-n", "--n-predict", true, false, "tokens per summary at most (default 384; less on small contexts)"},
             {"--instruction", "", true, false, "what to ask for (default: a summary in a few short paragraphs)"},
             {"--json", "", false, false, "print the result as JSON (method, chunks, levels, text)"},
             {"-q", "--quiet", false, false, "no progress on stderr"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "summarize [-m MODEL] -f FILE [-c N] [-n N] [--json]", exit_code);
    if (!args) return exit_code;
    if (!args->has("-f")) return fail("give the document with -f FILE");
    const std::string path = *args->get("-f");
    auto text = read_text_file(path);
    if (!text.ok()) return fail(text.status().message());
    if (text->find_first_not_of(" \t\r\n") == std::string::npos) return fail(path + ": the file has no text to summarize");

    SummarizeParams params;
    params.title = path.substr(path.find_last_of('/') + 1);
    auto sampler = sampler_params(*args);
    if (!sampler.ok()) return fail(sampler.status().message());
    if (args->has("--temp") || args->has("--repeat-penalty") || args->has("--seed")) params.sampler = *sampler;
    auto answer = args->get_int("-n", params.answer_tokens, 16, 65536);
    if (!answer.ok()) return fail(answer.status().message());
    params.answer_tokens = uint32_t(*answer);
    if (args->has("--instruction")) params.instruction = *args->get("--instruction");

    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    auto options = session_options(*args, *engine.model());
    if (!options.ok()) return fail(options.status().message());
    if (Status s = engine.use_session(*options); !s.ok()) return fail(s.message());

    const bool json = args->has("--json");
    const bool quiet = args->has("-q");
    InterruptWatcher interrupt;
    const std::stop_token stop = interrupt.arm();
    int last_pass = -1;
    auto result = engine.summarize(
        *text, params,
        [&](const SummaryProgress & p) {
            if (quiet || int(p.passes_done) == last_pass || p.method == SummaryMethod::one_pass) return;
            last_pass = int(p.passes_done);
            std::fprintf(stderr, "map-reduce: pass %u of ~%u (%s, level %u, chunk %u of %u)\n", p.passes_done + 1, p.passes_total,
                         p.stage == SummaryStage::map      ? "map"
                         : p.stage == SummaryStage::reduce ? "reduce"
                                                           : "final",
                         p.level, p.index + 1, p.count);
        },
        [&](int32_t, std::string_view piece) {
            if (!json) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
            }
            return true;
        },
        stop);
    interrupt.disarm();
    if (!result.ok()) return fail(result.status().message());
    if (json) {
        std::printf("{\"method\":%s,\"document_tokens\":%u,\"chunks\":%u,\"levels\":%u,\"passes\":%u,\"stop_reason\":%s,\"text\":%s}\n",
                    json_string(summary_method_name(result->method)).c_str(), result->document_tokens, result->n_chunks, result->n_levels,
                    result->n_passes, json_string(stop_reason_name(result->reason)).c_str(), json_string(result->text).c_str());
    } else {
        std::printf("\n");
    }
    std::fprintf(stderr, "method: %s%s\n", result->describe().c_str(), result->reason == StopReason::cancelled ? " (stopped)" : "");
    return result->reason == StopReason::cancelled ? 130 : 0;
}

}  // namespace lr::cli
