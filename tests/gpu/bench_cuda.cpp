// The CUDA backend's figures for docs/BENCHMARKS.md (tests/gpu/run_device_checks.sh runs
// it). Never asserts anything about time; writes OUT_DIR/bench.json and prints a summary.
//
//   bench_cuda OUT_DIR [--layers N] [--model FILE] [--keep-model]
//
// Without --model it writes a random-weight Q4_K model of Llama 3 8B's shape (n_layers
// layers, default 32) into OUT_DIR and measures:
//   copy bandwidth     a 1 GiB device-to-device copy (read + write), and the peak from the
//                      memory clock and bus width, the two references of the ratio below;
//   matvec kernel      the decode product alone on ffn_down's shape [4096 x 14336] Q4_K and
//                      Q8_0 (weight bytes per second: the bandwidth ratio of the kernel);
//   delta rule         the gated delta rule alone on a Qwen3.5 Gated DeltaNet layer's shape
//                      (16 k heads, 32 v heads of 128): 512 tokens chunked, one token recurrent
//                      (time per layer);
//   prefill            512 prompt tokens in chunks of 512 (tok/s);
//   decode             64 greedy tokens after that prompt (tok/s; weight bytes read per token x
//                      tok/s = effective bandwidth; ratio to both references);
//   small VRAM tier    a 2048-token prompt with the KV device tier holding about 3 layers of
//                      32: hit rate, prefetch hits and decode tok/s with host and disk tiers;
//   streamed layers    --gpu-layers at half the layers: decode tok/s over PCIe.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/model/random_model_writer.h"
#include "engine/quant/quant.h"
#include "engine/runtime/session.h"

using namespace lr;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

[[noreturn]] void die(const std::string & what) {
    std::fprintf(stderr, "bench_cuda: %s\n", what.c_str());
    std::exit(1);
}

// Device-to-device copy of 1 GiB: 2 GiB moved per copy.
double copy_bandwidth_gbs() {
    const size_t n = size_t(1) << 30;
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) return 0;
    (void)cudaMemset(a, 1, n);
    (void)cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);  // warm-up
    (void)cudaDeviceSynchronize();
    const int reps = 10;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) (void)cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    (void)cudaDeviceSynchronize();
    const double s = seconds_since(t0);
    (void)cudaFree(a);
    (void)cudaFree(b);
    return 2.0 * double(n) * reps / s / 1e9;
}

// The decode product alone: weight bytes per second.
double matvec_gbs(CudaBackend & b, DType type, int64_t n_rows, int64_t n_cols) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    const size_t rb = row_bytes(type, size_t(n_cols));
    std::vector<uint8_t> w(rb * size_t(n_rows));
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        for (float & v : row) v = nd(rng);
        quant::quantize_row(type, row.data(), w.data() + size_t(r) * rb, size_t(n_cols));
    }
    Result<WeightView> wv = b.prepare_weight({type, n_cols, n_rows, w.data()});
    if (!wv.ok()) die(wv.status().message());
    auto x = b.alloc(size_t(n_cols) * 4), y = b.alloc(size_t(n_rows) * 4);
    if (!x.ok() || !y.ok()) die("out of VRAM");
    std::vector<float> xs(size_t(n_cols), 0.5f);
    b.copy_to_device(x->data(), xs.data(), xs.size() * 4);
    for (int i = 0; i < 5; ++i) b.matmul(*wv, x->as<float>(), 1, y->as<float>());
    b.synchronize();
    const int reps = 200;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) b.matmul(*wv, x->as<float>(), 1, y->as<float>());
    b.synchronize();
    return double(w.size()) * reps / seconds_since(t0) / 1e9;
}

// The gated delta rule alone, milliseconds per call over one layer's state.
double delta_rule_ms(CudaBackend & b, int64_t n_tokens, int32_t chunk_tokens) {
    const DeltaRuleParams p{.n_k_heads = 16, .n_v_heads = 32, .head_k_dim = 128, .head_v_dim = 128, .chunk_tokens = chunk_tokens};
    const size_t qk = size_t(n_tokens) * p.n_k_heads * p.head_k_dim, v = size_t(n_tokens) * p.n_v_heads * p.head_v_dim;
    const size_t state_floats = size_t(p.n_v_heads) * p.head_v_dim * p.head_k_dim;
    auto q = b.alloc(qk * 4), k = b.alloc(qk * 4), vv = b.alloc(v * 4), out = b.alloc(v * 4), state = b.alloc(state_floats * 4);
    if (!q.ok() || !k.ok() || !vv.ok() || !out.ok() || !state.ok()) die("out of VRAM");
    // Unit q and k rows (all 1/sqrt(128)), decays and betas as the model's.
    const std::vector<float> unit(qk, 1.0f / std::sqrt(128.0f)), values(v, 0.5f), zeros(state_floats, 0.0f);
    const std::vector<float> g(size_t(n_tokens) * p.n_v_heads, -0.5f), beta(g.size(), 0.5f);
    b.copy_to_device(q->data(), unit.data(), qk * 4);
    b.copy_to_device(k->data(), unit.data(), qk * 4);
    b.copy_to_device(vv->data(), values.data(), v * 4);
    b.copy_to_device(state->data(), zeros.data(), state_floats * 4);
    auto call = [&] {
        b.gated_delta_rule(q->as<float>(), k->as<float>(), vv->as<float>(), g.data(), beta.data(), n_tokens, p, state->as<float>(),
                           out->as<float>());
    };
    call();
    b.synchronize();
    const int reps = 20;
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) call();
    b.synchronize();
    return seconds_since(t0) * 1e3 / reps;
}

std::vector<int32_t> random_tokens(size_t n, uint32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t{1};
    while (t.size() < n) t.push_back(int32_t(3 + rng() % (n_vocab - 3)));
    return t;
}

struct Timing {
    double prefill_tps = 0, decode_tps = 0;
    KvStats stats;
};

Timing run_session(std::shared_ptr<const Model> model, SessionConfig config, size_t n_prompt, int n_decode) {
    Timing t;
    auto session = Session::create(model, config);
    if (!session.ok()) die(session.status().message());
    const std::vector<int32_t> prompt = random_tokens(n_prompt, model->hparams().n_vocab, 7);
    auto t0 = Clock::now();
    if (Status s = (*session)->append(prompt); !s.ok()) die(s.message());
    t.prefill_tps = double(n_prompt) / seconds_since(t0);
    int32_t next = 0;
    auto greedy = [&] {
        const auto l = (*session)->logits();
        next = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    };
    greedy();
    if (Status s = (*session)->append(std::span(&next, 1)); !s.ok()) die(s.message());  // first step: warm-up
    t0 = Clock::now();
    for (int i = 0; i < n_decode; ++i) {
        greedy();
        if (Status s = (*session)->append(std::span(&next, 1)); !s.ok()) die(s.message());
    }
    t.decode_tps = double(n_decode) / seconds_since(t0);
    t.stats = (*session)->kv_stats();
    return t;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2) die("usage: bench_cuda OUT_DIR [--layers N] [--model FILE] [--keep-model]");
    const std::filesystem::path out = argv[1];
    uint32_t n_layers = 32;
    std::string model_path;
    bool keep_model = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--layers" && i + 1 < argc) n_layers = uint32_t(std::stoul(argv[++i]));
        else if (a == "--model" && i + 1 < argc) model_path = argv[++i];
        else if (a == "--keep-model") keep_model = true;
        else die("unknown argument " + a);
    }
    std::filesystem::create_directories(out);
    std::ostringstream json;
    json << "{\n";

    const CudaProbe probe = probe_cuda_devices();
    if (probe.devices.empty()) {
        json << "  \"device\": null,\n  \"problem\": \"" << probe.problem << "\"\n}\n";
        std::ofstream(out / "bench.json") << json.str();
        std::printf("no CUDA device: %s\n", probe.problem.c_str());
        return 0;
    }
    const CudaDeviceInfo & dev = probe.devices.front();
    std::printf("device: %s, compute %d.%d, %d SMs, %.1f GiB, peak %.0f GB/s\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.n_sm,
                double(dev.total_bytes) / double(1 << 30), dev.peak_bandwidth_gbs);
    const double copy_gbs = copy_bandwidth_gbs();
    std::printf("device-to-device copy: %.0f GB/s\n", copy_gbs);
    json << "  \"device\": \"" << dev.name << "\",\n  \"compute\": \"" << dev.cc_major << "." << dev.cc_minor << "\",\n"
         << "  \"peak_bandwidth_gbs\": " << dev.peak_bandwidth_gbs << ",\n  \"copy_bandwidth_gbs\": " << copy_gbs << ",\n";

    auto cuda = CudaBackend::create();
    if (!cuda.ok()) die(cuda.status().message());
    CudaBackend & backend = **cuda;
    const double mv_q4k = matvec_gbs(backend, DType::Q4_K, 4096, 14336);
    const double mv_q80 = matvec_gbs(backend, DType::Q8_0, 4096, 14336);
    const double mv_f16 = matvec_gbs(backend, DType::F16, 4096, 14336);
    std::printf("matvec [4096 x 14336]: Q4_K %.0f GB/s, Q8_0 %.0f GB/s, F16 %.0f GB/s\n", mv_q4k, mv_q80, mv_f16);
    json << "  \"matvec_gbs\": {\"Q4_K\": " << mv_q4k << ", \"Q8_0\": " << mv_q80 << ", \"F16\": " << mv_f16 << "},\n";
    const double dr_prefill = delta_rule_ms(backend, 512, 64), dr_decode = delta_rule_ms(backend, 1, 0);
    std::printf("delta rule [32 v heads of 128]: 512 tokens chunked %.2f ms, one token %.1f us (per layer)\n", dr_prefill, dr_decode * 1e3);
    json << "  \"delta_rule_ms\": {\"prefill_512\": " << dr_prefill << ", \"decode\": " << dr_decode << "},\n";

    // The model.
    if (model_path.empty()) {
        model_path = (out / ("llama3-8b-shape-" + std::to_string(n_layers) + "L-Q4_K.gguf")).string();
        ModelShape shape = find_model_preset("llama3-8b")->shape;
        shape.n_layer = n_layers;
        const auto t0 = Clock::now();
        RandomModelSpec spec{.shape = shape, .weights = {DType::Q4_K}, .output_path = model_path, .seed = 1};
        if (Status s = write_random_model(spec); !s.ok()) die(s.message());
        std::printf("wrote %s in %.0f s\n", model_path.c_str(), seconds_since(t0));
    }
    auto t0 = Clock::now();
    auto model = Model::load(model_path, backend);
    if (!model.ok()) die(model.status().message());
    const double load_s = seconds_since(t0);
    const ModelWeights & w = (*model)->weights();
    // Bytes decode reads per token: every weight but the embedding (one row of it), and the
    // output matrix even when it is the embedding (tied).
    const uint64_t token_embd_bytes = uint64_t(w.token_embd.n_rows) * w.token_embd.row_bytes();
    const uint64_t per_token = w.n_bytes - token_embd_bytes + (w.tied_output ? token_embd_bytes : 0);
    std::printf("model: %u layers, %.2f GiB of weights (%.2f GiB read per token), loaded in %.1f s\n", (*model)->hparams().n_layer,
                double(w.n_bytes) / double(1 << 30), double(per_token) / double(1 << 30), load_s);

    const std::string kv_dir = (out / "kv").string();
    SessionConfig base{.n_ctx = 4096, .chunk_tokens = 512};
    base.kv.prefix_cache = false;
    base.kv.dir = kv_dir;
    base.kv.device_mib = 4096;
    base.kv.host_mib = 256;
    base.kv.disk_mib = 0.001;
    const Timing t = run_session(*model, base, 512, 64);
    const double eff = double(per_token) * t.decode_tps / 1e9;
    std::printf("prefill 512: %.0f tok/s; decode 64: %.1f tok/s = %.0f GB/s of weights (%.2f of peak, %.2f of copy)\n", t.prefill_tps,
                t.decode_tps, eff, dev.peak_bandwidth_gbs > 0 ? eff / dev.peak_bandwidth_gbs : 0.0, copy_gbs > 0 ? eff / copy_gbs : 0.0);
    json << "  \"model_layers\": " << (*model)->hparams().n_layer << ",\n  \"weight_bytes\": " << w.n_bytes
         << ",\n  \"bytes_per_token\": " << per_token << ",\n  \"prefill_tps\": " << t.prefill_tps
         << ",\n  \"decode_tps\": " << t.decode_tps << ",\n  \"decode_gbs\": " << eff
         << ",\n  \"decode_ratio_peak\": " << (dev.peak_bandwidth_gbs > 0 ? eff / dev.peak_bandwidth_gbs : 0.0)
         << ",\n  \"decode_ratio_copy\": " << (copy_gbs > 0 ? eff / copy_gbs : 0.0) << ",\n";

    // A small VRAM tier: about three layers' KV of the 2048-token context.
    const KvBlockLayout L{{32, (*model)->hparams().n_head_kv, (*model)->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
    const double layer_mib = double(2112 / 32 * L.block_bytes()) / double(1 << 20);
    SessionConfig tiered = base;
    tiered.n_ctx = 2112;
    tiered.kv.device_mib = 3 * layer_mib;
    tiered.kv.host_mib = 8 * layer_mib;
    tiered.kv.disk_mib = 64 * layer_mib;
    const Timing tt = run_session(*model, tiered, 2048, 32);
    std::printf("small VRAM tier (%.0f MiB, %.1f layers of %u): hit rate %.3f, prefetch hits %llu of %llu, decode %.1f tok/s\n",
                tiered.kv.device_mib, tiered.kv.device_mib / layer_mib, (*model)->hparams().n_layer, tt.stats.hit_rate(),
                (unsigned long long)tt.stats.prefetch_hits, (unsigned long long)tt.stats.prefetches, tt.decode_tps);
    json << "  \"tiered\": {\"device_mib\": " << tiered.kv.device_mib << ", \"hit_rate\": " << tt.stats.hit_rate()
         << ", \"prefetches\": " << tt.stats.prefetches << ", \"prefetch_hits\": " << tt.stats.prefetch_hits
         << ", \"bytes_moved\": " << tt.stats.bytes_moved << ", \"decode_tps\": " << tt.decode_tps << "},\n";

    // Half the layers streamed from page-locked RAM (--gpu-layers n/2).
    {
        uint64_t global = 0;
        for (const WeightView * v : {&w.token_embd, &w.output_norm}) global += uint64_t(v->n_rows) * v->row_bytes();
        if (!w.tied_output) global += uint64_t(w.output.n_rows) * w.output.row_bytes();
        const uint64_t per_layer = (w.n_bytes - global) / (*model)->hparams().n_layer;
        const uint32_t half = (*model)->hparams().n_layer / 2;
        auto partial = CudaBackend::create({.weight_vram_budget_bytes = global + half * per_layer});
        if (!partial.ok()) die(partial.status().message());
        auto streamed = Model::load(model_path, **partial);
        if (!streamed.ok()) die(streamed.status().message());
        const Timing ts = run_session(*streamed, base, 64, 16);
        std::printf("gpu layers %u of %u (%.2f GiB streamed): decode %.2f tok/s, prefill 64: %.1f tok/s\n", half,
                    (*model)->hparams().n_layer, double((*partial)->streamed_weight_bytes()) / double(1 << 30), ts.decode_tps,
                    ts.prefill_tps);
        json << "  \"streamed\": {\"gpu_layers\": " << half << ", \"streamed_bytes\": " << (*partial)->streamed_weight_bytes()
             << ", \"decode_tps\": " << ts.decode_tps << ", \"prefill_tps\": " << ts.prefill_tps << "}\n";
    }
    json << "}\n";
    std::ofstream(out / "bench.json") << json.str();
    std::filesystem::remove_all(kv_dir);
    if (!keep_model && model_path.starts_with(out.string())) std::filesystem::remove(model_path);
    return 0;
}
