#include "cli_common.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/cli/commands.h"
#include "engine/backend/backend_factory.h"

namespace lr::cli {

int fail(const std::string & message) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    return 1;
}

std::vector<FlagSpec> model_flags() {
    return {
        {"-m", "--model", true, false, "GGUF model file (default: the bundled stories260K)"},
        {"-t", "--threads", true, false, "CPU threads (default: the physical cores)"},
        {"--backend", "", true, false, "auto, cpu or cuda (default auto: CUDA when a GPU is usable)"},
        {"--cpu-isa", "", true, false, "CPU kernels: best, avx512, avx2 or scalar (default best: the best this CPU runs)"},
        {"--gpu-layers", "-ngl", true, false, "CUDA: layers whose weights stay in VRAM; the rest stream from RAM (default: what fits)"},
    };
}

std::vector<FlagSpec> session_flags() {
    return {
        {"-c", "--ctx-size", true, false, "context size in tokens (default: the model's trained context)"},
        {"--chunk", "", true, false, "prefill chunk in tokens, or auto: from each prompt's length and the measured rate (default 256)"},
    };
}

std::vector<FlagSpec> sampling_flags() {
    return {
        {"--temp", "", true, false, "temperature; 0 = greedy (default 0.8)"},
        {"--seed", "", true, false, "random seed (default: fixed)"},
        {"--top-k", "", true, false, "top-k (default 40; 0 = off)"},
        {"--top-p", "", true, false, "top-p (default 0.95; 1 = off)"},
        {"--min-p", "", true, false, "min-p (default 0.05; 0 = off)"},
        {"--repeat-penalty", "", true, false, "repetition penalty (default 1.0 = off)"},
        {"--repeat-last-n", "", true, false, "tokens the penalties look back (default 64)"},
        {"--presence-penalty", "", true, false, "presence penalty (default 0)"},
        {"--frequency-penalty", "", true, false, "frequency penalty (default 0)"},
    };
}

std::vector<FlagSpec> thinking_flags() {
    return {
        {"--thinking", "", true, false,
         "on or off: whether the model thinks before it answers, where its template can choose (Qwen3, Gemma 4)"},
        {"--reasoning-effort", "", true, false, "low, medium or high, where the template takes one (gpt-oss)"},
    };
}

std::vector<FlagSpec> kv_flags() {
    return {
        {"--kv-policy", "", true, false, "cache policy: none, h2o, snapkv, streaming, quest (default none)"},
        {"--keep-ratio", "", true, false, "share of the sequence the policy keeps (default 0.2)"},
        {"--kv-budget", "", true, false, "tokens the policy keeps (instead of --keep-ratio)"},
        {"--recent-ratio", "", true, false, "h2o: share of the budget for recent tokens (default 0.5)"},
        {"--sink-tokens", "", true, false, "first tokens never evicted (default 4)"},
        {"--obs-window", "", true, false, "snapkv: observation window (default 32)"},
        {"--then", "", true, false, "snapkv: during decode, none (keep growing) or h2o"},
        {"--quest-pages", "", true, false, "quest: pages each KV head reads per layer (default: from the budget)"},
        {"--quest-blocks", "", true, false, "same as --quest-pages"},
        {"--quest-page", "", true, false, "quest: tokens per page, the unit it ranks and reads (default 8)"},
        {"--kv-k-bits", "", true, false, "K precision: 16, 8 or 4 (default 16)"},
        {"--kv-v-bits", "", true, false, "V precision: 16, 8 or 4 (default 16)"},
        {"--kv-residual", "", true, false, "recent tokens kept in full precision (default 128)"},
        {"--kv-host-bits", "", true, false, "aged blocks moved to RAM take at most 16, 8 or 4 bits (default 0: as on the device)"},
        {"--kv-disk-bits", "", true, false, "aged blocks moved to disk take at most 16, 8 or 4 bits (default 0: as on the device)"},
        {"--kv-block", "", true, false, "KV block size in tokens (default 32)"},
        {"--kv-device-mib", "", true, false, "device tier budget in MiB (default: automatic; fractions allowed)"},
        {"--kv-host-mib", "", true, false, "host RAM tier budget in MiB (default: automatic)"},
        {"--kv-disk-mib", "", true, false, "disk tier budget in MiB (default: automatic)"},
        {"--kv-dir", "", true, false, "cache directory (default ~/.cache/longread/kv)"},
        {"--no-prefix-cache", "", false, false, "do not persist or restore prompt prefixes"},
        {"--kv-stats", "", false, false, "print the KV cache's stats at the end"},
        {"--kv-stats-json", "", true, false, "write the KV cache's stats as JSON to this file"},
        // Placement's order and look-ahead, and the adaptive mode.
        {"--kv-demotion", "", true, false, "which blocks leave a full tier first: cycle, lru or fifo (default cycle)"},
        {"--kv-prefetch", "", true, false, "layers fetched ahead of the one computing: 0, 1 or 2 (default 1)"},
        {"--kv-adapt", "", false, false, "pick the RAM tiers' split, prefetch depth and recent window from what the cache measures"},
        // Warm-up.
        {"--warmup-tokens", "", true, false, "no eviction or re-encoding until a sequence holds this many tokens (default 100; 0: none)"},
        // Per-layer budgets.
        {"--layer-budget", "", true, false,
         "h2o, snapkv, random: the budget over the layers: uniform, pyramid or inverse (default inverse)"},
    };
}

std::vector<FlagSpec> join(std::initializer_list<std::vector<FlagSpec>> groups) {
    std::vector<FlagSpec> out;
    for (const auto & g : groups) out.insert(out.end(), g.begin(), g.end());
    return out;
}

std::optional<Args> parse_flags(const std::vector<std::string> & argv, const std::vector<FlagSpec> & specs, std::string_view usage,
                                int & exit_code) {
    auto args = Args::parse(argv, specs);
    if (!args.ok()) {
        exit_code = fail(args.status().message());
        return std::nullopt;
    }
    if (args->has("-h")) {
        std::printf("usage: longread-cli %.*s\n%s", int(usage.size()), usage.data(), usage_of(specs).c_str());
        exit_code = 0;
        return std::nullopt;
    }
    return std::move(*args);
}

Status load_model(const Args & args, Engine & engine) {
    LR_ASSIGN_OR_RETURN(long long threads, args.get_int("-t", 0, 0, 1024));
    LR_ASSIGN_OR_RETURN(long long gpu_layers, args.get_int("--gpu-layers", -1, 0, 1 << 20));
    const std::string backend = args.get_or("--backend", "auto");
    if (!backend_choice_from_name(backend))
        return error(StatusCode::invalid_argument, "unknown --backend '" + backend + "' (auto, cpu, cuda)");
    const Result<ModelInfo> info = engine.load({.path = args.get_or("-m", kBundledModelName),
                                                .backend = backend,
                                                .n_threads = int(threads),
                                                .cpu_isa = args.get_or("--cpu-isa", "best"),
                                                .gpu_layers = gpu_layers});
    if (!engine.backend_note().empty()) std::fprintf(stderr, "note: %s\n", engine.backend_note().c_str());
    return info.status();
}

Result<SessionOptions> session_options(const Args & args, const Model & model) {
    SessionOptions options;
    LR_ASSIGN_OR_RETURN(long long n_ctx, args.get_int("-c", 0, 0, 1 << 24));
    options.n_ctx = uint32_t(n_ctx);
    LR_ASSIGN_OR_RETURN(options.chunk_tokens, chunk_tokens(args));
    LR_ASSIGN_OR_RETURN(options.kv, kv_settings(args));
    LR_RETURN_IF_ERROR(validate(session_config(options), model.hparams()));
    return options;
}

Result<uint32_t> chunk_tokens(const Args & args) {
    if (args.get_or("--chunk", "") == "auto") return kAutoChunk;
    const Result<long long> chunk = args.get_int("--chunk", 256, 1, 8192);
    if (!chunk.ok())
        return error(StatusCode::invalid_argument, "option --chunk expects 1 to 8192 tokens or auto, got '" + *args.get("--chunk") + "'");
    return uint32_t(*chunk);
}

Result<std::vector<uint32_t>> parse_token_counts(const std::string & text, std::string_view flag) {
    std::vector<uint32_t> counts;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char * end = nullptr;
        const unsigned long v = std::strtoul(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 1 || v > (1u << 20)) {
            return error(StatusCode::invalid_argument, std::string(flag) + ": '" + item + "' is not a token count (1 to 1048576)");
        }
        counts.push_back(uint32_t(v));
    }
    if (counts.empty()) return error(StatusCode::invalid_argument, std::string(flag) + ": no token count given");
    return counts;
}

SessionConfig session_config(const SessionOptions & options) {
    return {.n_ctx = options.n_ctx, .chunk_tokens = options.chunk_tokens, .kv = options.kv};
}

Result<SamplerParams> sampler_params(const Args & args) {
    SamplerParams p;
    LR_ASSIGN_OR_RETURN(double temp, args.get_double("--temp", p.temperature, 0, 100));
    LR_ASSIGN_OR_RETURN(long long seed, args.get_int("--seed", (long long)(p.seed & 0x7fffffffffffffffull), 0, INT64_MAX));
    LR_ASSIGN_OR_RETURN(long long top_k, args.get_int("--top-k", p.top_k, 0, 1 << 30));
    LR_ASSIGN_OR_RETURN(double top_p, args.get_double("--top-p", p.top_p, 0, 1));
    LR_ASSIGN_OR_RETURN(double min_p, args.get_double("--min-p", p.min_p, 0, 1));
    LR_ASSIGN_OR_RETURN(double repeat_penalty, args.get_double("--repeat-penalty", p.repeat_penalty, 0, 100));
    LR_ASSIGN_OR_RETURN(long long last_n, args.get_int("--repeat-last-n", p.repeat_last_n, 0, 1 << 20));
    LR_ASSIGN_OR_RETURN(double presence, args.get_double("--presence-penalty", p.presence_penalty, -100, 100));
    LR_ASSIGN_OR_RETURN(double frequency, args.get_double("--frequency-penalty", p.frequency_penalty, -100, 100));
    p.temperature = float(temp);
    if (args.has("--seed")) p.seed = uint64_t(seed);
    p.top_k = int32_t(top_k);
    p.top_p = float(top_p);
    p.min_p = float(min_p);
    p.repeat_penalty = float(repeat_penalty);
    p.repeat_last_n = int32_t(last_n);
    p.presence_penalty = float(presence);
    p.frequency_penalty = float(frequency);
    LR_RETURN_IF_ERROR(validate_sampler_params(p));
    return p;
}

Result<ThinkingChoice> thinking_choice(const Args & args) {
    ThinkingChoice out;
    if (const auto v = args.get("--thinking")) {
        if (*v != "on" && *v != "off") return error(StatusCode::invalid_argument, "--thinking must be on or off, got '" + *v + "'");
        out.enabled = *v == "on";
    }
    if (const auto v = args.get("--reasoning-effort")) {
        if (*v != "low" && *v != "medium" && *v != "high") {
            return error(StatusCode::invalid_argument, "--reasoning-effort must be low, medium or high, got '" + *v + "'");
        }
        out.effort = *v;
    }
    return out;
}

Result<KvSettings> kv_settings(const Args & args) {
    KvSettings k;
    if (args.has("--kv-policy")) {
        const std::string name = *args.get("--kv-policy");
        const std::optional<KvPolicy> p = kv_policy_from_name(name);
        if (!p) return error(StatusCode::invalid_argument, "unknown --kv-policy '" + name + "' (none, h2o, snapkv, streaming, quest)");
        k.policy = *p;
    }
    if (args.has("--then")) {
        const std::optional<KvPolicy> p = kv_policy_from_name(*args.get("--then"));
        if (!p) return error(StatusCode::invalid_argument, "unknown --then '" + *args.get("--then") + "' (none or h2o)");
        k.then = *p;
    }
    LR_ASSIGN_OR_RETURN(k.keep_ratio, args.get_double("--keep-ratio", k.keep_ratio, 0, 1));
    LR_ASSIGN_OR_RETURN(long long budget, args.get_int("--kv-budget", k.budget_tokens, 0, 1 << 26));
    LR_ASSIGN_OR_RETURN(k.recent_ratio, args.get_double("--recent-ratio", k.recent_ratio, 0, 1));
    LR_ASSIGN_OR_RETURN(long long sinks, args.get_int("--sink-tokens", k.sink_tokens, 0, 1024));
    LR_ASSIGN_OR_RETURN(long long obs, args.get_int("--obs-window", k.obs_window, 1, 4096));
    const char * const pages_flag = args.has("--quest-pages") || !args.has("--quest-blocks") ? "--quest-pages" : "--quest-blocks";
    LR_ASSIGN_OR_RETURN(long long quest, args.get_int(pages_flag, k.quest_pages, 0, 1 << 20));
    LR_ASSIGN_OR_RETURN(long long page, args.get_int("--quest-page", k.quest_page, 1, 256));
    LR_ASSIGN_OR_RETURN(long long k_bits, args.get_int("--kv-k-bits", k.k_bits, 4, 32));
    LR_ASSIGN_OR_RETURN(long long v_bits, args.get_int("--kv-v-bits", k.v_bits, 4, 32));
    LR_ASSIGN_OR_RETURN(long long host_bits, args.get_int("--kv-host-bits", k.host_bits, 0, 16));
    LR_ASSIGN_OR_RETURN(long long disk_bits, args.get_int("--kv-disk-bits", k.disk_bits, 0, 16));
    LR_ASSIGN_OR_RETURN(long long residual, args.get_int("--kv-residual", k.residual_tokens, 0, 1 << 20));
    LR_ASSIGN_OR_RETURN(long long block, args.get_int("--kv-block", k.block_tokens, 4, 256));
    LR_ASSIGN_OR_RETURN(k.device_mib, args.get_double("--kv-device-mib", 0, 0, 1e9));
    LR_ASSIGN_OR_RETURN(k.host_mib, args.get_double("--kv-host-mib", 0, 0, 1e9));
    LR_ASSIGN_OR_RETURN(k.disk_mib, args.get_double("--kv-disk-mib", 0, 0, 1e9));
    k.budget_tokens = uint32_t(budget);
    k.sink_tokens = uint32_t(sinks);
    k.obs_window = uint32_t(obs);
    k.quest_pages = uint32_t(quest);
    k.quest_page = uint32_t(page);
    k.k_bits = uint32_t(k_bits);
    k.v_bits = uint32_t(v_bits);
    k.host_bits = uint32_t(host_bits);
    k.disk_bits = uint32_t(disk_bits);
    k.residual_tokens = uint32_t(residual);
    k.block_tokens = uint32_t(block);
    k.dir = args.get_or("--kv-dir", "");
    k.prefix_cache = !args.has("--no-prefix-cache");
    if (args.has("--kv-demotion")) {
        const std::string name = *args.get("--kv-demotion");
        const std::optional<KvDemotion> order = kv_demotion_from_name(name);
        if (!order) return error(StatusCode::invalid_argument, "unknown --kv-demotion '" + name + "' (cycle, lru or fifo)");
        k.demotion = *order;
    }
    LR_ASSIGN_OR_RETURN(long long prefetch, args.get_int("--kv-prefetch", k.prefetch_layers, 0, 2));
    k.prefetch_layers = uint32_t(prefetch);
    k.adapt = args.has("--kv-adapt");
    // Warm-up.
    LR_ASSIGN_OR_RETURN(long long warmup, args.get_int("--warmup-tokens", k.warmup_tokens, 0, 1 << 20));
    k.warmup_tokens = uint32_t(warmup);
    if (const std::optional<std::string> name = args.get("--layer-budget")) {
        const std::optional<KvLayerBudget> shape = kv_layer_budget_from_name(*name);
        if (!shape) return error(StatusCode::invalid_argument, "unknown --layer-budget '" + *name + "' (uniform, pyramid or inverse)");
        k.layer_budget = *shape;
    }
    LR_RETURN_IF_ERROR(validate(k));
    return k;
}

Status report_kv_stats(const Args & args, const KvStats & stats) {
    if (args.has("--kv-stats")) std::fprintf(stderr, "KV cache:\n%s", to_text(stats).c_str());
    if (const std::optional<std::string> path = args.get("--kv-stats-json")) {
        std::FILE * f = std::fopen(path->c_str(), "w");
        if (!f) return error(StatusCode::io_error, *path + ": cannot write the KV stats");
        const std::string json = to_json(stats) + "\n";
        const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
        if (std::fclose(f) != 0 || !ok) return error(StatusCode::io_error, *path + ": write failed");
    }
    return {};
}

Result<std::string> read_text_file(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return error(StatusCode::not_found, path + ": cannot open the file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return error(StatusCode::io_error, path + ": read failed");
    return ss.str();
}

Result<std::string> prompt_text(const Args & args) {
    if (args.has("-p") && args.has("-f")) return error(StatusCode::invalid_argument, "give the prompt with -p or -f, not both");
    if (args.has("-f")) return read_text_file(*args.get("-f"));
    return args.get_or("-p", "");
}

std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        switch (c) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            default: break;
        }
        if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            continue;
        }
        if (c < 0x80) {
            out += char(c);
            continue;
        }
        // Copy a whole valid UTF-8 sequence; escape a stray byte as its code point.
        const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        bool valid = len != 0 && i + len <= text.size();
        for (size_t k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
        if (valid) {
            out.append(text.substr(i, len));
            i += len - 1;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        }
    }
    return out + "\"";
}

}  // namespace lr::cli
