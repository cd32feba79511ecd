// tokenize: text to ids. info: what a model file is and what it needs.
#include <cstdio>
#include <map>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/gguf/gguf_file.h"
#include "kvcache/kv_cache_config.h"

namespace lr::cli {

int run_tokenize(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(), {
        {"-p", "--prompt", true, false, "text to tokenize"},
        {"-f", "--file", true, false, "tokenize a file"},
        {"--ids", "", false, false, "print only the ids, as [1, 2, 3]"},
        {"--no-bos", "", false, false, "do not add the BOS token"},
        {"--parse-special", "", false, false, "turn special-token texts (<s>, <|im_end|>) into their ids"},
        {"-h", "--help", false, false, "this help"},
    }});
    auto args = Args::parse(argv, specs);
    if (!args.ok()) return fail(args.status().message());
    if (args->has("-h")) {
        std::printf("usage: longread-cli tokenize [-m MODEL] (-p TEXT | -f FILE) [--ids]\n%s", usage_of(specs).c_str());
        return 0;
    }
    auto text = prompt_text(*args);
    if (!text.ok()) return fail(text.status().message());
    auto loaded = load_model(*args);
    if (!loaded.ok()) return fail(loaded.status().message());
    const Tokenizer & tok = loaded->model->tokenizer();
    const std::vector<int32_t> ids = tok.encode(*text, !args->has("--no-bos"), args->has("--parse-special"));
    if (args->has("--ids")) {
        std::printf("[");
        for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? ", " : "", ids[i]);
        std::printf("]\n");
    } else {
        for (int32_t id : ids) std::printf("%6d -> %s\n", id, json_string(tok.token_to_piece(id, true)).c_str());
    }
    return 0;
}

int run_info(const Argv & argv) {
    const std::vector<FlagSpec> specs = join({model_flags(), {
        {"-c", "--ctx-size", true, false, "context size for the memory estimate (default: trained context)"},
        {"-h", "--help", false, false, "this help"},
    }});
    auto args = Args::parse(argv, specs);
    if (!args.ok()) return fail(args.status().message());
    if (args->has("-h")) {
        std::printf("usage: longread-cli info [-m MODEL] [-c N]\n%s", usage_of(specs).c_str());
        return 0;
    }
    auto loaded = load_model(*args);
    if (!loaded.ok()) return fail(loaded.status().message());
    const Model & model = *loaded->model;
    const ModelHParams & hp = model.hparams();
    const gguf::GgufFile & file = model.file();
    auto n_ctx = args->get_int("-c", hp.n_ctx_train, 1, 1 << 24);
    if (!n_ctx.ok()) return fail(n_ctx.status().message());

    std::printf("file:          %s (GGUF v%u, %.1f MiB)\n", file.path().c_str(), file.version(), double(file.file_size()) / (1 << 20));
    std::printf("name:          %s\n", hp.name.c_str());
    std::printf("architecture:  %s\n", hp.arch_name.c_str());
    std::printf("parameters:    %.3f M\n", double(model.weights().n_params) / 1e6);
    std::printf("layers %u, embedding %u, heads %u (KV %u, head size %u), feed-forward %u, vocabulary %u\n", hp.n_layer, hp.n_embd,
                hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff, hp.n_vocab);
    std::printf("trained context %u, rope base %g%s%s, rms eps %g\n", hp.n_ctx_train, double(hp.rope_freq_base),
                hp.rope_freq_scale != 1.0f ? ", linear scaling" : "", model.weights().rope_freqs ? ", rope_freqs" : "", double(hp.rms_eps));
    std::printf("output:        %s\n", model.weights().tied_output ? "tied to the token embedding" : "own matrix");
    std::map<std::string, int> types;
    for (const gguf::TensorInfo & t : file.tensors()) ++types[std::string(dtype_name(t.type))];
    std::printf("tensor types: ");
    for (const auto & [name, count] : types) std::printf(" %s x%d", name.c_str(), count);
    std::printf("\nchat template: %s%s\n", std::string(chat::chat_family_name(model.chat_template().family())).c_str(),
                model.chat_template().is_builtin() ? " (built in)" : " (the model's own)");
    if (!model.chat_template_note().empty()) std::printf("               note: %s\n", model.chat_template_note().c_str());
    for (const std::string & note : model.tokenizer().vocab().notes) std::printf("tokenizer note: %s\n", note.c_str());

    const double weights_mib = double(model.weights().n_bytes) / (1 << 20);
    const double kv_bytes_per_token = 2.0 * hp.n_layer * hp.n_head_kv * double(kv_codec_row_bytes(KvCodec::f16, hp.head_dim));
    const double kv_mib = kv_bytes_per_token * double(*n_ctx) / (1 << 20);
    std::printf("memory at -c %lld: weights %.1f MiB (mapped from the file) + KV cache %.1f MiB (f16, %.1f KiB/token) = %.1f MiB\n",
                *n_ctx, weights_mib, kv_mib, kv_bytes_per_token / 1024, weights_mib + kv_mib);
    return 0;
}

}  // namespace lr::cli
