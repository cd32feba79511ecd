// perplexity: llama-perplexity's measure of a text file.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/runtime/perplexity.h"

namespace lr::cli {

int run_perplexity(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(),
                                              {
                                                  {"-f", "--file", true, false, "the text to score"},
                                                  {"-c", "--ctx-size", true, false, "window size in tokens (default 512)"},
                                                  {"--chunk", "", true, false, "prefill chunk in tokens (default 256)"},
                                                  {"-h", "--help", false, false, "this help"},
                                              }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "perplexity [-m MODEL] -f FILE [-c N]", exit_code);
    if (!args) return exit_code;
    if (!args->has("-f")) return fail("perplexity needs a text file (-f FILE)");
    auto text = read_text_file(*args->get("-f"));
    if (!text.ok()) return fail(text.status().message());
    auto n_ctx = args->get_int("-c", 512, 4, 1 << 20);
    if (!n_ctx.ok()) return fail(n_ctx.status().message());
    auto chunk = args->get_int("--chunk", 256, 1, 8192);
    if (!chunk.ok()) return fail(chunk.status().message());
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const std::shared_ptr<const Model> model = engine.model();
    if (uint32_t(*n_ctx) > model->hparams().n_ctx_train) {
        return fail("-c " + std::to_string(*n_ctx) + " exceeds the model's trained context (" +
                    std::to_string(model->hparams().n_ctx_train) + ")");
    }
    const std::vector<int32_t> tokens = model->tokenizer().encode(*text, true, false);
    std::fprintf(stderr, "%zu tokens, %lld windows of %lld\n", tokens.size(), (long long)(tokens.size() / size_t(*n_ctx)), *n_ctx);
    InterruptWatcher interrupt;
    auto result = compute_perplexity(
        model, tokens, uint32_t(*n_ctx), {.chunk_tokens = uint32_t(*chunk)},
        [](size_t done, size_t total) { std::fprintf(stderr, "\r[%zu/%zu]", done, total); }, interrupt.arm());
    std::fprintf(stderr, "\n");
    if (!result.ok()) return fail(result.status().message());
    for (size_t i = 0; i < result->chunk_ppl.size(); ++i) std::printf("[%zu]%.4f,", i + 1, result->chunk_ppl[i]);
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result->ppl, result->ppl_error);
    return 0;
}

}  // namespace lr::cli
