// make-model: a random-weight GGUF model of a preset shape, for benchmarks at realistic
// sizes on machines that cannot download one.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/model/random_model_writer.h"

namespace lr::cli {

int run_make_model(const Argv & argv) {
    const std::vector<FlagSpec> specs = {
        {"--preset", "", true, false, "shape: " + model_preset_names() + " (default tiny)"},
        {"--type", "", true, false, "weight type: " + writable_weight_format_names() + " (default: the preset's, F16 for most)"},
        {"-o", "--output", true, false, "the file to write"},
        {"--vocab-from", "", true, false, "copy the tokenizer of this GGUF (its size replaces the preset's vocabulary)"},
        {"--seed", "", true, false, "random seed (default 42)"},
        {"--name", "", true, false, "general.name to write"},
        {"--ctx-train", "", true, false, "trained context to write instead of the preset's (long-context benchmarks)"},
        {"--layers", "", true, false, "layers to write instead of the preset's (a smaller model of the same width)"},
        {"--dense", "", false, false,
         "a mixture of experts' dense counterpart: one FFN as wide as the experts a token uses, the shared one included"},
        {"-t", "--threads", true, false, "threads for quantizing (default: all cores)"},
        {"-h", "--help", false, false, "this help"},
    };
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "make-model --preset P --type T -o OUT.gguf [--vocab-from VOCAB.gguf]", exit_code);
    if (!args) return exit_code;
    if (!args->has("-o")) return fail("make-model needs an output file (-o OUT.gguf)");
    RandomModelSpec spec;
    spec.preset = args->get_or("--preset", "tiny");
    // Without --type, the preset's published layout (gpt-oss: MXFP4_MOE), else F16.
    const ModelPreset * preset = find_model_preset(spec.preset);
    const std::string type = args->get_or("--type", preset ? weight_format_name(preset->weights) : "F16");
    const std::optional<WeightFormat> format = weight_format_from_name(type);
    if (!format) return fail("unknown weight type '" + type + "' (choose from " + writable_weight_format_names() + ")");
    spec.weights = *format;
    spec.output_path = *args->get("-o");
    spec.vocab_from = args->get_or("--vocab-from", "");
    spec.name = args->get_or("--name", "");
    auto seed = args->get_int("--seed", 42, 0, INT64_MAX);
    if (!seed.ok()) return fail(seed.status().message());
    spec.seed = uint64_t(*seed);
    // Overrides of the preset's shape, named in general.name.
    if (args->has("--ctx-train") || args->has("--layers") || args->has("--dense")) {
        if (!preset) return fail("unknown model preset '" + spec.preset + "' (presets: " + model_preset_names() + ")");
        ModelShape shape = preset->shape;
        std::string suffix;
        if (args->has("--ctx-train")) {
            auto ctx = args->get_int("--ctx-train", 0, 16, 1 << 22);
            if (!ctx.ok()) return fail(ctx.status().message());
            shape.n_ctx_train = uint32_t(*ctx);
            suffix += "-ctx" + std::to_string(*ctx);
        }
        if (args->has("--layers")) {
            auto layers = args->get_int("--layers", 0, 1, 1024);
            if (!layers.ok()) return fail(layers.status().message());
            shape.n_layer = uint32_t(*layers);
            suffix += "-" + std::to_string(*layers) + "layers";
        }
        if (args->has("--dense")) {
            if (!shape.is_moe()) return fail("--dense needs a mixture-of-experts preset, and " + spec.preset + " is dense");
            shape = dense_counterpart(shape);
            suffix += "-dense";
        }
        spec.shape = shape;
        if (spec.name.empty()) spec.name = spec.preset + suffix + "-random";
    }
    auto threads = args->get_int("-t", 0, 0, 1024);
    if (!threads.ok()) return fail(threads.status().message());
    spec.n_threads = int(*threads);

    auto plan = plan_random_model(spec);
    if (!plan.ok()) return fail(plan.status().message());
    std::fprintf(stderr, "writing %s: %s, %s, %.2f B parameters, %.1f MiB of tensors\n", spec.output_path.c_str(), plan->name.c_str(),
                 weight_format_name(plan->weights).c_str(), double(plan->n_params) / 1e9, double(plan->n_tensor_bytes) / (1 << 20));
    for (const std::string & note : plan->notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    int last_percent = -1;
    spec.progress = [&](uint64_t done, uint64_t total) {
        const int percent = total ? int(done * 100 / total) : 100;
        if (percent != last_percent) {
            last_percent = percent;
            std::fprintf(stderr, "\r%3d%%", percent);
        }
    };
    InterruptWatcher interrupt;
    Status s = write_random_model(spec, interrupt.arm());
    std::fprintf(stderr, "\n");
    if (!s.ok()) return fail(s.message());
    std::fprintf(stderr, "done\n");
    return 0;
}

}  // namespace lr::cli
