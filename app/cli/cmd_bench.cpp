// bench: prefill and decode speed, as llama-bench measures them (pp: one ubatch of -p
// tokens into an empty cache; tg: -n tokens generated one at a time), plus the memory
// bandwidth measured in the same run and the decode roofline it implies.
//
//   longread-cli bench -m M -p 512 -n 64 -t 2 [--depth 512,2048,4096] [-r 5] [--json]
//                      [--kv-k-bits 8 --kv-v-bits 8 [--kv-residual 128]]
//
// The KV cache is the full one, in memory; its codecs as the flags say (llama-bench's
// -ctk / -ctv), blocks re-encoded once they leave the full-precision window.
//
// Every figure is the median of -r repeats. The bandwidth is measured by streaming the
// weights decode reads (the model's own mapping, so no extra memory), between repeats.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/memory_bandwidth.h"
#include "engine/model/llama_graph.h"

namespace lr::cli {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string json_numbers(const std::vector<double> & v) {
    std::string out = "[";
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.3f", i ? "," : "", v[i]);
        out += buf;
    }
    return out + "]";
}

// Peak resident set of this process (VmHWM), in bytes.
uint64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return uint64_t(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
    }
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    return uint64_t(ru.ru_maxrss) * 1024;
}

// The weights one decode step reads: every matrix and norm, one row of the embeddings, and
// of a mixture's experts as many as a token chooses (the first ones: they stand for any).
std::vector<MemoryRegion> decode_weights(const ModelWeights & w, uint32_t n_expert_used) {
    std::vector<MemoryRegion> regions;
    auto add = [&](const WeightView & v) {
        if (v.data) regions.push_back({v.data, v.row_bytes() * size_t(v.n_rows)});
    };
    auto add_optional = [&](const std::optional<WeightView> & v) {
        if (v) add(*v);
    };
    for (const LayerWeights & L : w.layers) {
        for (const WeightView * v : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) add(*v);
        for (const auto * b : {&L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm, &L.bo, &L.attn_sinks}) add_optional(*b);
        if (L.delta_net) {
            for (const WeightView * v : L.delta_net->all()) add(*v);
        }
        if (!L.moe) continue;
        const MoeWeights & m = *L.moe;
        add(m.router);
        for (const auto * v : {&m.router_bias, &m.shexp_gate, &m.shexp_up, &m.shexp_down, &m.shexp_gate_inp}) add_optional(*v);
        for (int32_t e = 0; e < int32_t(n_expert_used); ++e) {
            for (const WeightView * stack : {&m.experts.gate, &m.experts.up, &m.experts.down}) add(m.experts.rows_of(*stack, e));
        }
    }
    add(w.output_norm);
    add(w.output);
    if (!w.tied_output) regions.push_back({w.token_embd.data, w.token_embd.row_bytes()});
    return regions;
}

std::vector<int32_t> bench_tokens(size_t n, uint32_t n_vocab, uint64_t seed) {
    std::vector<int32_t> t(n);
    uint64_t s = seed;
    for (int32_t & id : t) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        id = int32_t((s >> 33) % n_vocab);
    }
    return t;
}

class Runner {
public:
    Runner(const Model & model, LlamaGraph & graph, KvCacheConfig config) : model_(model), graph_(graph), config_(std::move(config)) {}

    // A fresh cache holding `depth` tokens (prefilled in ubatches), or an error.
    Result<std::unique_ptr<KvCache>> cache_at(uint32_t depth, double * prefill_seconds) {
        const KvCacheConfig & config = config_;
        LR_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::create(config, model_.kv_shape(), model_.backend()));
        const auto t0 = std::chrono::steady_clock::now();
        LR_RETURN_IF_ERROR(feed(*kv, bench_tokens(depth, model_.hparams().n_vocab, 17 + depth)));
        if (prefill_seconds) *prefill_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return kv;
    }

    // Decodes n tokens one at a time after the `at` the cache holds; returns the seconds taken.
    Result<double> decode(KvCache & kv, uint32_t at, uint32_t n) {
        const std::vector<int32_t> tokens = bench_tokens(n, model_.hparams().n_vocab, 99 + at);
        const auto t0 = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < n; ++i) LR_RETURN_IF_ERROR(graph_.forward(kv, 0, std::span(&tokens[i], 1), false, logits_));
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

private:
    // Appends `tokens` to the cache's sequence (positions follow on), in ubatches.
    Status feed(KvCache & kv, const std::vector<int32_t> & tokens) {
        const uint32_t ub = graph_.max_tokens();
        for (size_t i = 0; i < tokens.size(); i += ub) {
            const size_t n = std::min<size_t>(ub, tokens.size() - i);
            LR_RETURN_IF_ERROR(graph_.forward(kv, 0, std::span(tokens).subspan(i, n), false, logits_));
        }
        return {};
    }

    const Model & model_;
    LlamaGraph & graph_;
    KvCacheConfig config_;
    std::vector<float> logits_;
};

// The cache flags bench takes: the codecs and their full-precision window.
std::vector<FlagSpec> kv_codec_flags() {
    std::vector<FlagSpec> out;
    for (const FlagSpec & f : kv_flags()) {
        if (f.name == "--kv-k-bits" || f.name == "--kv-v-bits" || f.name == "--kv-residual") out.push_back(f);
    }
    return out;
}

struct DepthResult {
    uint32_t depth;
    std::vector<double> pp, tg;                // tok/s per repeat
    std::vector<KvLayerKindStats> kv_by_kind;  // what the cache held after the decode
};

// "full 12.0 MiB, sliding_window 40.0 MiB" (text) or [{"kind":..,"bytes":..,"tokens":..}] (JSON).
std::string kv_by_kind_text(const std::vector<KvLayerKindStats> & kinds) {
    std::string out;
    char buf[96];
    for (const KvLayerKindStats & k : kinds) {
        std::snprintf(buf, sizeof buf, "%s%s %.1f MiB", out.empty() ? "" : ", ", std::string(kv_layer_kind_name(k.kind)).c_str(),
                      double(k.bytes) / (1 << 20));
        out += buf;
    }
    return out;
}
std::string kv_by_kind_json(const std::vector<KvLayerKindStats> & kinds) {
    std::string out = "[";
    for (const KvLayerKindStats & k : kinds) {
        out += (out.size() > 1 ? ",{\"kind\":" : "{\"kind\":") + json_string(std::string(kv_layer_kind_name(k.kind))) +
               ",\"layers\":" + std::to_string(k.n_layers) + ",\"bytes\":" + std::to_string(k.bytes) +
               ",\"tokens_kept\":" + std::to_string(k.tokens_kept) + "}";
    }
    return out + "]";
}

}  // namespace

int run_bench(const Argv & argv) {
    const std::vector<FlagSpec> specs = join(
        {model_flags(),
         {
             {"-p", "--n-prompt", true, false, "prefill tokens (default 512)"},
             {"-n", "--n-gen", true, false, "decoded tokens (default 64)"},
             {"-r", "--repetitions", true, false, "repeats; figures are medians (default 5)"},
             {"-b", "--ubatch", true, false, "prefill ubatch in tokens (default: -p, at most 512)"},
             {"--depth", "", true, false, "also decode after prefilling these context sizes, e.g. 512,2048,4096"},
             {"--json", "", false, false, "print one JSON object"},
             {"-h", "--help", false, false, "this help"},
         },
         kv_codec_flags()});
    int exit_code = 0;
    auto args = parse_flags(argv, specs, "bench [-m MODEL] [-p 512] [-n 64] [-t THREADS] [--depth 512,2048] [--json]", exit_code);
    if (!args) return exit_code;
    auto n_prompt = args->get_int("-p", 512, 1, 1 << 16);
    auto n_gen = args->get_int("-n", 64, 1, 1 << 16);
    auto reps = args->get_int("-r", 5, 1, 1000);
    if (!n_prompt.ok()) return fail(n_prompt.status().message());
    if (!n_gen.ok()) return fail(n_gen.status().message());
    if (!reps.ok()) return fail(reps.status().message());
    auto ubatch = args->get_int("-b", std::min<long long>(*n_prompt, 512), 1, 8192);
    if (!ubatch.ok()) return fail(ubatch.status().message());
    std::vector<uint32_t> depths;
    if (args->has("--depth")) {
        auto parsed = parse_token_counts(*args->get("--depth"), "--depth");
        if (!parsed.ok()) return fail(parsed.status().message());
        depths = *parsed;
    }
    Engine engine;
    if (Status s = load_model(*args, engine); !s.ok()) return fail(s.message());
    const Model & model = *engine.model();
    const auto * cpu = dynamic_cast<const CpuBackend *>(&engine.backend());
    const int n_threads = cpu ? cpu->n_threads() : 1;

    uint32_t max_depth = uint32_t(*n_prompt);
    for (uint32_t d : depths) max_depth = std::max(max_depth, d);
    const uint32_t max_tokens = max_depth + uint32_t(*n_gen);
    auto graph = LlamaGraph::create(model, uint32_t(*ubatch));
    if (!graph.ok()) return fail(graph.status().message());
    auto settings = kv_settings(*args);  // of its flags, only the codecs' are bench's
    if (!settings.ok()) return fail(settings.status().message());
    KvCacheConfig config;
    config.settings = *settings;
    config.max_tokens = max_tokens;
    if (Status s = validate(config, model.kv_shape()); !s.ok()) return fail(s.message());
    Runner runner(model, *graph, config);

    const std::vector<MemoryRegion> weights = decode_weights(model.weights(), model.hparams().n_expert_used);

    // Warm up: pages of the mapping in, caches and scratch sized.
    (void)measure_read_bandwidth(weights, n_threads);
    {
        auto kv = runner.cache_at(std::min<uint32_t>(uint32_t(*ubatch), 16), nullptr);
        if (!kv.ok()) return fail(kv.status().message());
        auto s = runner.decode(**kv, std::min<uint32_t>(uint32_t(*ubatch), 16), 2);
        if (!s.ok()) return fail(s.status().message());
    }

    std::vector<double> pp, tg, bandwidth;
    uint64_t bytes_per_token = 0;  // what the decoded tokens' forward passes read (LlamaGraph's count)
    std::vector<DepthResult> at_depth;
    for (uint32_t d : depths) at_depth.push_back({d, {}, {}});
    for (long long rep = 0; rep < *reps; ++rep) {
        double seconds = 0;
        auto kv = runner.cache_at(uint32_t(*n_prompt), &seconds);
        if (!kv.ok()) return fail(kv.status().message());
        pp.push_back(double(*n_prompt) / seconds);
        auto empty = runner.cache_at(0, nullptr);
        if (!empty.ok()) return fail(empty.status().message());
        const uint64_t read_before = graph->weight_bytes_read();
        auto t = runner.decode(**empty, 0, uint32_t(*n_gen));
        if (!t.ok()) return fail(t.status().message());
        bytes_per_token = (graph->weight_bytes_read() - read_before) / uint64_t(*n_gen);
        tg.push_back(double(*n_gen) / *t);
        bandwidth.push_back(measure_read_bandwidth(weights, n_threads));
        for (DepthResult & r : at_depth) {
            auto deep = runner.cache_at(r.depth, &seconds);
            if (!deep.ok()) return fail(deep.status().message());
            r.pp.push_back(double(r.depth) / seconds);
            auto td = runner.decode(**deep, r.depth, uint32_t(*n_gen));
            if (!td.ok()) return fail(td.status().message());
            r.tg.push_back(double(*n_gen) / *td);
            r.kv_by_kind = (*deep)->stats().layer_kinds;
        }
    }

    const double bw = median(bandwidth);
    const double roofline = bw / double(bytes_per_token);
    const double tg_med = median(tg);
    const uint64_t rss = peak_rss_bytes();
    const std::string backend_name = engine.backend().name();
    if (args->has("--json")) {
        std::string out = "{\"model\":" + json_string(model.file().path()) + ",\"backend\":" + json_string(backend_name) +
                          ",\"threads\":" + std::to_string(n_threads) + ",\"n_prompt\":" + std::to_string(*n_prompt) +
                          ",\"n_gen\":" + std::to_string(*n_gen) + ",\"ubatch\":" + std::to_string(*ubatch) +
                          ",\"repetitions\":" + std::to_string(*reps) +
                          ",\"kv_k\":" + json_string(std::string(kv_codec_name(config.settings.k_codec()))) +
                          ",\"kv_v\":" + json_string(std::string(kv_codec_name(config.settings.v_codec())));
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      ",\"pp_tok_s\":%.3f,\"tg_tok_s\":%.3f,\"weight_bytes\":%llu,\"bytes_read_per_token\":%llu,\"bandwidth_gb_s\":%.3f,"
                      "\"tg_roofline_tok_s\":%.3f,\"tg_roofline_ratio\":%.4f,\"peak_rss_bytes\":%llu",
                      median(pp), tg_med, (unsigned long long)model.weights().n_bytes, (unsigned long long)bytes_per_token, bw / 1e9,
                      roofline, tg_med / roofline, (unsigned long long)rss);
        out += buf;
        out += ",\"pp_tok_s_all\":" + json_numbers(pp) + ",\"tg_tok_s_all\":" + json_numbers(tg);
        std::vector<double> bw_gb;
        for (double b : bandwidth) bw_gb.push_back(b / 1e9);
        out += ",\"bandwidth_gb_s_all\":" + json_numbers(bw_gb) + ",\"depths\":[";
        for (size_t i = 0; i < at_depth.size(); ++i) {
            const DepthResult & r = at_depth[i];
            std::snprintf(buf, sizeof buf, "%s{\"depth\":%u,\"pp_tok_s\":%.3f,\"tg_tok_s\":%.3f,\"tg_ratio_to_short\":%.4f,", i ? "," : "",
                          r.depth, median(r.pp), median(r.tg), median(r.tg) / tg_med);
            out += buf;
            out += "\"pp_tok_s_all\":" + json_numbers(r.pp) + ",\"tg_tok_s_all\":" + json_numbers(r.tg) +
                   ",\"kv_by_kind\":" + kv_by_kind_json(r.kv_by_kind) + "}";
        }
        out += "]}\n";
        std::fputs(out.c_str(), stdout);
        return 0;
    }
    auto spread = [](const std::vector<double> & v) {
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        char buf[64];
        std::snprintf(buf, sizeof buf, "[%.1f .. %.1f]", *lo, *hi);
        return std::string(buf);
    };
    std::printf("model      %s\nbackend    %s\n", model.file().path().c_str(), backend_name.c_str());
    std::printf("KV cache   K %s, V %s", std::string(kv_codec_name(config.settings.k_codec())).c_str(),
                std::string(kv_codec_name(config.settings.v_codec())).c_str());
    if (kv_codec_bits(config.settings.k_codec()) < 16 || kv_codec_bits(config.settings.v_codec()) < 16) {
        std::printf(" (the last %u tokens in f16)", config.settings.residual_tokens);
    }
    std::printf("\n");
    std::printf("weights    %.1f MiB read per decoded token, of %.1f MiB%s\n", double(bytes_per_token) / (1 << 20),
                double(model.weights().n_bytes) / (1 << 20), model.hparams().is_moe() ? " (of the experts, the chosen ones)" : "");
    std::printf("pp%-6lld   %8.1f tok/s  %s\n", *n_prompt, median(pp), spread(pp).c_str());
    std::printf("tg%-6lld   %8.1f tok/s  %s\n", *n_gen, tg_med, spread(tg).c_str());
    std::printf("bandwidth  %8.1f GB/s   -> roofline %.1f tok/s, tg at %.0f%% of it\n", bw / 1e9, roofline, 100.0 * tg_med / roofline);
    for (const DepthResult & r : at_depth) {
        std::printf("depth %-6u pp %8.1f tok/s %s   tg %8.1f tok/s %s  (%.2f x short)  KV %s\n", r.depth, median(r.pp),
                    spread(r.pp).c_str(), median(r.tg), spread(r.tg).c_str(), median(r.tg) / tg_med, kv_by_kind_text(r.kv_by_kind).c_str());
    }
    std::printf("peak RSS   %.1f MiB\n", double(rss) / (1 << 20));
    return 0;
}

}  // namespace lr::cli
