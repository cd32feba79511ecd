// Microbenchmarks of the CPU kernels (Google Benchmark), one thread, per ISA:
//   matmul/<type>/<isa>/<tokens>   a TinyLlama-sized [2048 x 2048] weight (ffn_down's
//                                  [2048 x 5632] with /down, [96 x 2048] with /l2, which
//                                  stays in L2); decode reports the weight bytes streamed
//                                  per second, prefill the multiply-adds;
//   attention/<isa>/<depth>/<tokens>/<window>/<mass>/<bits> one layer's attention (32
//                                  query heads, 4 KV heads, head_dim 64) after `depth`
//                                  cached tokens; window > 0: a sliding layer (gemma3's);
//                                  mass 1: collecting the attention mass; bits: K and V in
//                                  f16 (16) or q8 (8); the exact driver (scalar: the
//                                  reference), attention-flash/ the one-pass one;
//   geglu/<isa>/<n>                GELU-tanh (ggml's f16 table) times up over n values.
// Run: build/tests/bench/bench_cpu_kernels [--benchmark_filter=matmul/Q4_0]

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/backend/cpu/activations.h"
#include "engine/backend/cpu/aligned_buffer.h"
#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/quant/quant.h"

using namespace lr;
using namespace lr::cpu;

namespace {

struct Rng {
    uint64_t s;
    float normal() {
        auto u = [&] {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            return (double(s >> 11) + 0.5) / 9007199254740992.0;
        };
        return float(std::sqrt(-2.0 * std::log(u())) * std::cos(6.283185307179586 * u()));
    }
};

void bench_matmul(benchmark::State & state, DType type, CpuIsa isa, int64_t n_rows, int64_t n_cols) {
    const int64_t n_tokens = state.range(0);
    const MatmulKernel * k = matmul_kernel(isa, type);
    Rng rng{1};
    const size_t rb = row_bytes(type, size_t(n_cols));
    std::vector<uint8_t> w(rb * size_t(n_rows));
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows && quant::can_quantize(type); ++r) {
        for (float & v : row) v = 0.05f * rng.normal();
        quant::quantize_row(type, row.data(), w.data() + size_t(r) * rb, size_t(n_cols));
    }
    // Types that need an importance matrix: random bytes (the speed does not depend on them).
    for (size_t i = 0; i < w.size() && !quant::can_quantize(type); ++i) w[i] = uint8_t(rng.normal() * 1e4f);
    std::vector<float> x(size_t(n_cols * n_tokens)), y(size_t(n_rows * n_tokens));
    for (float & v : x) v = rng.normal();
    const size_t arb = k->act_row_bytes(n_cols);
    AlignedBuffer act, scratch;
    act.reserve(arb * size_t(n_tokens));
    scratch.reserve(std::max<size_t>(64, k->scratch_bytes(n_cols, n_rows, n_tokens)));
    const MatmulJob job{.w = w.data(),
                        .w_row_bytes = rb,
                        .n_cols = n_cols,
                        .act = act.data(),
                        .act_row_bytes = arb,
                        .n_tokens = n_tokens,
                        .y = y.data(),
                        .y_stride = n_rows};
    for (auto _ : state) {
        for (int64_t t = 0; t < n_tokens; ++t) k->convert_act(x.data() + t * n_cols, n_cols, act.data() + size_t(t) * arb);
        k->rows(job, 0, n_rows, scratch.data());
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["weight_GB/s"] = benchmark::Counter(double(w.size()) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["GMAC/s"] = benchmark::Counter(double(n_rows * n_cols * n_tokens) * double(state.iterations()) / 1e9,
                                                  benchmark::Counter::kIsRate);
}

void bench_attention(benchmark::State & state, CpuIsa isa, bool flash) {
    const uint32_t depth = uint32_t(state.range(0));
    const int64_t n_tokens = state.range(1);
    const int32_t window = int32_t(state.range(2));
    const bool collect_mass = state.range(3) != 0;
    const KvCodec codec = state.range(4) == 8 ? KvCodec::q8 : KvCodec::f16;
    const KvBlockShape shape{32, 4, 64};
    const uint32_t n_pos = depth + uint32_t(n_tokens);
    const uint32_t n_blocks = (n_pos + shape.block_tokens - 1) / shape.block_tokens;
    const KvBlockLayout L{shape, codec, codec};
    std::vector<std::vector<uint8_t>> storage;
    std::vector<KvBlockRef> blocks;
    Rng rng{2};
    std::vector<float> v(shape.head_dim);
    for (uint32_t b = 0; b < n_blocks; ++b) {
        storage.emplace_back(L.block_bytes());
        uint8_t * data = storage.back().data();
        auto * pos = reinterpret_cast<int32_t *>(data + L.pos_offset());
        for (uint32_t g = 0; g < shape.n_head_kv; ++g) {
            for (uint32_t s = 0; s < shape.block_tokens; ++s) {
                const uint32_t p = b * shape.block_tokens + s;
                pos[L.pos_index(g, s)] = p < n_pos ? int32_t(p) : kInvalidPos;
                for (float & e : v) e = rng.normal();
                kv_encode_row(codec, v.data(), data + L.k_row_offset(g, s), shape.head_dim);
                kv_encode_row(codec, v.data(), data + L.v_row_offset(g, s), shape.head_dim);
            }
        }
        blocks.push_back({data, codec, codec});
    }
    PagedKvView view;
    view.shape = shape;
    view.blocks = blocks;
    std::vector<float> mass(collect_mass ? size_t(n_blocks) * shape.n_head_kv * shape.block_tokens : 0);
    view.attn_mass = collect_mass ? mass.data() : nullptr;
    const AttentionParams params{.n_head = 32, .n_head_kv = 4, .head_dim = 64, .scale = 0.125f, .window = window};
    std::vector<float> q(size_t(n_tokens) * 32 * 64), out(q.size());
    for (float & e : q) e = rng.normal();
    std::vector<int32_t> positions;
    for (int64_t t = 0; t < n_tokens; ++t) positions.push_back(int32_t(depth + uint32_t(t)));
    ThreadPool pool(1);
    AttentionScratch scratch;
    const AttentionArgs args{
        .q = q.data(), .n_tokens = n_tokens, .pos = positions.data(), .view = &view, .params = params, .out = out.data()};
    for (auto _ : state) {
        if (flash) {
            attention_flash(pool, attention_kernels(isa), args, scratch);
        } else if (isa == CpuIsa::scalar) {
            attention_reference(pool, args);
        } else {
            attention_fused(pool, attention_kernels(isa), args, scratch);
        }
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["tokens/s"] = benchmark::Counter(double(n_tokens) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void bench_geglu(benchmark::State & state, CpuIsa isa) {
    const int64_t n = state.range(0);
    Rng rng{3};
    std::vector<float> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    for (float & v : gate) v = 3.0f * rng.normal();
    for (float & v : up) v = rng.normal();
    const ActivationKernels & k = activation_kernels(isa);
    const float * table = gelu_table();
    for (auto _ : state) {
        k.geglu(gate.data(), up.data(), n, out.data(), table);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["values/s"] = benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void register_all() {
    const CpuIsa best = detect_cpu_isa();
    std::vector<CpuIsa> isas = {CpuIsa::scalar};  // and every level up to the best, side by side
    for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512}) {
        if (isa <= best) isas.push_back(isa);
    }
    const DType types[] = {DType::F32,   DType::F16,    DType::BF16,    DType::Q8_0,   DType::Q4_0,  DType::Q4_1,
                           DType::Q5_0,  DType::Q5_1,   DType::IQ4_NL,  DType::MXFP4,  DType::Q2_K,  DType::Q3_K,
                           DType::Q4_K,  DType::Q5_K,   DType::Q6_K,    DType::IQ4_XS, DType::IQ3_S, DType::IQ3_XXS,
                           DType::IQ2_S, DType::IQ2_XS, DType::IQ2_XXS, DType::IQ1_M,  DType::IQ1_S, DType::TQ2_0};
    for (DType type : types) {
        for (CpuIsa isa : isas) {
            if (isa == CpuIsa::avx512 && !avx512_matmul_kernel(type)) continue;  // it runs AVX2's
            const std::string name = "matmul/" + std::string(dtype_name(type)) + "/" + std::string(cpu_isa_name(isa));
            benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State & s) { bench_matmul(s, type, isa, 2048, 2048); })
                ->Arg(1)
                ->Arg(4)  // a decode step of four sequences
                ->Arg(64)
                ->Unit(benchmark::kMicrosecond);
            benchmark::RegisterBenchmark((name + "/down").c_str(), [=](benchmark::State & s) { bench_matmul(s, type, isa, 2048, 5632); })
                ->Arg(1)
                ->Arg(64)
                ->Unit(benchmark::kMicrosecond);
            // Weights that stay in L2: the kernel's own speed, without memory.
            benchmark::RegisterBenchmark((name + "/l2").c_str(), [=](benchmark::State & s) { bench_matmul(s, type, isa, 96, 2048); })
                ->Arg(1)
                ->Unit(benchmark::kMicrosecond);
        }
    }
    for (CpuIsa isa : isas) {
        for (bool flash : {false, true}) {
            const std::string name = std::string(flash ? "attention-flash/" : "attention/") + std::string(cpu_isa_name(isa));
            benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State & s) { bench_attention(s, isa, flash); })
                ->Args({512, 1, 0, 0, 16})
                ->Args({2048, 1, 0, 0, 16})
                ->Args({4096, 1, 0, 0, 16})
                ->Args({16384, 1, 0, 0, 16})
                ->Args({16384, 1, 0, 1, 16})
                ->Args({4096, 1, 1024, 0, 16})
                ->Args({0, 512, 0, 0, 16})
                ->Args({2048, 64, 0, 0, 16})
                ->Args({4096, 64, 0, 0, 16})
                ->Args({16384, 64, 0, 0, 16})
                ->Args({16384, 64, 0, 1, 16})
                ->Args({4096, 64, 1024, 0, 16})
                ->Args({2048, 1, 0, 0, 8})
                ->Args({16384, 1, 0, 0, 8})
                ->Args({16384, 64, 0, 0, 8})
                ->Unit(benchmark::kMicrosecond);
        }
        if (isa == CpuIsa::avx512) continue;  // AVX2's activations
        benchmark::RegisterBenchmark(("geglu/" + std::string(cpu_isa_name(isa))).c_str(),
                                     [=](benchmark::State & s) { bench_geglu(s, isa); })
            ->Arg(10240)
            ->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace

int main(int argc, char ** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
