// tokenize: text to ids. info: what a model file is and what it needs.
#include <algorithm>
#include <cstdio>
#include <map>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/backend/backend_factory.h"
#include "engine/gguf/gguf_file.h"
#include "engine/runtime/chat_prompt.h"
#include "engine/tokenizer/vocab.h"
#include "resources/bundled_model.h"

namespace lr::cli {
namespace {

// A layer kind as the memory lines name it.
const char * layer_kind_label(KvLayerKind kind) {
    switch (kind) {
        case KvLayerKind::full: return "full attn";
        case KvLayerKind::sliding_window: return "sliding";
        case KvLayerKind::shared: return "shared";
        case KvLayerKind::recurrent: return "recurrent";
    }
    return "?";
}

// The tokenizer of -m (or of the bundled model) from the file's tokenizer.ggml.* keys
// alone, as llama-tokenize loads it: a vocabulary-only GGUF (llama.cpp's
// ggml-vocab-*.gguf) tokenizes like the model it came from, whatever its architecture.
Result<Tokenizer> load_tokenizer_only(const Args & args) {
    const std::string path = args.get_or("-m", kBundledModelName);
    LR_ASSIGN_OR_RETURN(const gguf::GgufFile file, path == kBundledModelName
                                                       ? gguf::GgufFile::parse(bundled_model_bytes(), kBundledModelName)
                                                       : gguf::GgufFile::open(path));
    LR_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file));
    Result<Tokenizer> tokenizer = Tokenizer::create(std::move(vocab));
    if (!tokenizer.ok()) return error(tokenizer.status().code(), path + ": " + tokenizer.status().message());
    return tokenizer;
}

// How the file scales its rope: ", YaRN x32 from 4096", ", linear scaling x8", ...
std::string rope_scaling_text(const ModelHParams & hp, const ModelWeights & w) {
    char buf[96] = "";
    const double factor = hp.rope_freq_scale > 0 ? 1.0 / double(hp.rope_freq_scale) : 1.0;
    if (w.rope_long) {
        std::snprintf(buf, sizeof buf, ", LongRoPE from %u", hp.n_ctx_orig);
    } else if (hp.rope_scaling == RopeScaling::yarn) {
        std::snprintf(buf, sizeof buf, ", YaRN x%g from %u", factor, hp.n_ctx_orig);
    } else if (hp.rope_scaling == RopeScaling::linear && factor != 1.0) {
        std::snprintf(buf, sizeof buf, ", linear scaling x%g", factor);
    }
    return std::string(buf) + (w.rope_freqs ? ", rope_freqs" : "");
}

}  // namespace

int run_tokenize(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         {
             {"-p", "--prompt", true, false, "text to tokenize"},
             {"-f", "--file", true, false, "tokenize a file"},
             {"--ids", "", false, false, "print only the ids, as [1, 2, 3]"},
             {"--no-bos", "", false, false, "do not add the BOS token"},
             {"--parse-special", "", false, false, "turn special-token texts (<s>, <|im_end|>) into their ids"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "tokenize [-m MODEL] (-p TEXT | -f FILE) [--ids]", exit_code);
    if (!args) return exit_code;
    auto text = prompt_text(*args);
    if (!text.ok()) return fail(text.status().message());
    // -t, --backend and --gpu-layers are accepted for symmetry with the other commands;
    // tokenizing needs no weights and no backend.
    const Result<Tokenizer> tokenizer = load_tokenizer_only(*args);
    if (!tokenizer.ok()) return fail(tokenizer.status().message());
    const Tokenizer & tok = *tokenizer;
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
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         kv_flags(),
         {
             {"-c", "--ctx-size", true, false, "context size for the memory estimate (default: trained context)"},
             {"-h", "--help", false, false, "this help"},
         }});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "info [-m MODEL] [-c N]", exit_code);
    if (!args) return exit_code;
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const Model & model = *engine.model();
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
    if (hp.is_moe()) {
        std::printf("experts:       %u of %u per token, width %u%s\n", hp.n_expert_used, hp.n_expert, hp.n_ff_exp,
                    hp.n_ff_shexp ? (", a shared expert of width " + std::to_string(hp.n_ff_shexp)).c_str() : "");
    }
    std::printf("trained context %u, rope base %g%s, rms eps %g\n", hp.n_ctx_train, double(hp.rope_freq_base),
                rope_scaling_text(hp, model.weights()).c_str(), double(hp.rms_eps));
    if (hp.n_swa > 0) {
        const auto n_sliding = std::count(hp.swa_layers.begin(), hp.swa_layers.end(), uint8_t(1));
        std::printf("sliding window %u tokens on %td of %u layers (rope base %g)\n", hp.n_swa, n_sliding, hp.n_layer,
                    double(hp.rope_freq_base_swa));
    }
    if (hp.full_attention_interval > 0) {
        uint32_t n_recurrent = 0;
        for (uint32_t il = 0; il < hp.n_layer; ++il) n_recurrent += hp.is_recurrent(il);
        std::printf(
            "recurrent:     %u of %u layers Gated DeltaNet (%u q/k and %u v heads of %u, convolution %u), a %s state "
            "per layer and sequence\n",
            n_recurrent, hp.n_layer, hp.ssm_group_count, hp.ssm_time_step_rank, hp.ssm_state_size, hp.ssm_conv_kernel,
            format_bytes(hp.recurrent_state_bytes()).c_str());
        std::printf(
            "policies:      this model keeps %u of %u layers as a fixed-size state; eviction, Quest and the KV codecs "
            "apply to the other %u\n",
            n_recurrent, hp.n_layer, hp.n_layer - n_recurrent);
    }
    if (hp.kv_geometry_varies()) {
        std::printf("KV per layer: ");
        for (uint32_t il = 0; il < hp.n_layer; ++il) std::printf(" %ux%u", hp.n_head_kv_of(il), hp.head_dim_of(il));
        std::printf(" (heads x head size)\n");
    }
    if (hp.n_layer_kv < hp.n_layer) {
        std::printf("KV sharing:    layers %u-%u keep no KV and read that of layer %u (sliding) or %u (global)\n", hp.n_layer_kv,
                    hp.n_layer - 1, hp.n_layer_kv - 2, hp.n_layer_kv - 1);
    }
    if (hp.n_embd_per_layer > 0) std::printf("per-layer inputs: %u values per layer and token\n", hp.n_embd_per_layer);
    std::printf("output:        %s\n", model.weights().tied_output ? "tied to the token embedding" : "own matrix");
    std::map<std::string, int> types;
    for (const gguf::TensorInfo & t : file.tensors()) ++types[std::string(dtype_name(t.type))];
    std::printf("tensor types: ");
    for (const auto & [name, count] : types) std::printf(" %s x%d", name.c_str(), count);
    std::printf("\nchat template: %s%s\n", std::string(chat::chat_family_name(model.chat_template().family())).c_str(),
                model.chat_template().is_builtin() ? " (built in)" : " (the model's own)");
    if (!model.chat_template_note().empty()) std::printf("               note: %s\n", model.chat_template_note().c_str());
    const std::string_view calls = chat::tool_call_format_name(tool_call_format(model));
    std::printf("tool calls:    %s\n",
                calls.empty() ? "none (its template shows no tools in a format Longread reads)" : std::string(calls).c_str());
    for (const std::string & note : model.tokenizer().vocab().notes) std::printf("tokenizer note: %s\n", note.c_str());

    // The backends of this build, the GPUs found, and where the weights went.
    const BackendInventory inventory = probe_backends();
    std::string compiled;
    for (const std::string & b : inventory.compiled) compiled += (compiled.empty() ? "" : ", ") + b;
    std::printf("backends:      %s compiled in; running on %s\n", compiled.c_str(), engine.backend().name().c_str());
    if (inventory.devices.empty()) std::printf("cuda devices:  none (%s)\n", inventory.cuda_problem.c_str());
    for (const GpuDevice & d : inventory.devices) {
        std::printf("cuda device %d: %s, compute %d.%d, %d SMs, %s (%s free)", d.index, d.name.c_str(), d.cc_major, d.cc_minor, d.n_sm,
                    format_bytes(d.total_bytes).c_str(), format_bytes(d.free_bytes).c_str());
        if (d.peak_bandwidth_gbs > 0) std::printf(", %.0f GB/s", d.peak_bandwidth_gbs);
        std::printf("\n");
    }
    if (const GpuOffloadPlan * g = engine.gpu_plan()) {
        std::printf("gpu layers:    %u of %u in VRAM (%s of weights)%s\n", g->n_gpu_layers, g->n_layer,
                    format_bytes(g->weight_vram_bytes).c_str(),
                    g->n_gpu_layers < g->n_layer ? ", the others streamed from page-locked RAM" : "");
    }

    // What the memory planner predicts with these cache settings on this machine.
    auto kv = kv_settings(*args);
    if (!kv.ok()) return fail(kv.status().message());
    const MachinePlan forecast = engine.plan_memory(uint32_t(*n_ctx), 256, *kv);
    const MemoryPlan & plan = forecast.plan;
    const KvTierCapacities & caps = forecast.capacities;
    const std::string & dir = forecast.kv_dir;
    std::printf("memory at -c %lld (%s):\n", *n_ctx, describe(*kv).c_str());
    std::printf("  weights       %s (%s)\n", format_bytes(plan.weight_bytes).c_str(),
                forecast.weights_on_device ? "uploaded to the GPU" : "mapped from the file");
    if (plan.expert_weight_bytes > 0) {
        std::printf("    experts     %s (%u per layer, %u chosen per token)\n", format_bytes(plan.expert_weight_bytes).c_str(), hp.n_expert,
                    hp.n_expert_used);
        std::printf("    per token   %s active (the other weights and the chosen experts)\n",
                    format_bytes(plan.active_weight_bytes_per_token).c_str());
    }
    std::printf("  KV cache      %s (%s per token at f16)\n", format_bytes(plan.kv_bytes).c_str(),
                format_bytes(plan.kv_bytes_per_token).c_str());
    for (const KvLayerKindPlan & k : plan.layer_kinds) {
        std::printf("    %-12s%u layers, %s\n", layer_kind_label(k.kind), k.n_layers, format_bytes(k.kv_bytes).c_str());
    }
    std::printf("    device      %s of %s\n", format_bytes(plan.kv_device_bytes).c_str(), format_bytes(caps.device_bytes).c_str());
    std::printf("    host RAM    %s of %s\n", format_bytes(plan.kv_host_bytes).c_str(), format_bytes(caps.host_bytes).c_str());
    std::printf("    disk        %s of %s (%s)\n", format_bytes(plan.kv_disk_bytes).c_str(), format_bytes(caps.disk_bytes).c_str(),
                dir.c_str());
    std::printf("    metadata    %s in RAM besides the tiers (positions%s)\n", format_bytes(plan.mirror_bytes).c_str(),
                kv->policy == KvPolicy::quest                                   ? ", key bounds"
                : kv->policy == KvPolicy::h2o || kv->policy == KvPolicy::snapkv ? ", attention mass"
                                                                                : "");
    std::printf("  activations   %s\n", format_bytes(plan.scratch_bytes).c_str());
    std::printf("  runtime       %s (the file's header, the tokenizer's tables, the engine's code)\n",
                format_bytes(plan.runtime_bytes).c_str());
    std::printf("  in memory     %s with the context full (all but the disk tier)\n", format_bytes(plan.resident_bytes()).c_str());
    std::printf("  largest context that fits: %u tokens\n", plan.max_context);
    // What serve --parallel admits: each sequence reserves its peak KV out of the budgets.
    const uint64_t capacity = caps.device_bytes + caps.host_bytes + caps.disk_bytes;
    std::printf("  sequences of %lld tokens the KV budgets hold at once (serve --parallel):", *n_ctx);
    const char * separator = " ";
    for (KvPolicy policy : {KvPolicy::none, KvPolicy::h2o, KvPolicy::snapkv, KvPolicy::streaming}) {
        KvSettings each = *kv;
        each.policy = policy;
        if (!validate(each).ok()) continue;
        const uint64_t per_sequence = engine.plan_memory(uint32_t(*n_ctx), 256, each).plan.kv_bytes;
        std::string label(kv_policy_name(policy));
        if (policy != KvPolicy::none) {
            label += each.budget_tokens > 0 ? " " + std::to_string(each.budget_tokens) + " tokens"
                                            : " " + std::to_string(int(each.keep_ratio * 100 + 0.5)) + "%";
        }
        std::printf("%s%s %llu", separator, label.c_str(), static_cast<unsigned long long>(per_sequence > 0 ? capacity / per_sequence : 0));
        separator = ", ";
    }
    std::printf("\n");
    std::printf("%s\n", plan.message.c_str());
    return 0;
}

}  // namespace lr::cli
