// The CUDA kernels' code, run on the host (cuda_host_emulation.cu), against the CPU
// reference: bit for bit, dequant_one and every lane of dequant_step for every weight type
// (the lane mappings of the matvec and GEMM kernels cover each column exactly once with the
// right value), the KV codecs of kv_write and attention, rope's per-pair code (linear,
// LongRoPE, YaRN), geglu over the CPU's GELU table, the routed experts' clamped SwiGLU and
// weighted sum, and the Gated DeltaNet kernels (sigmoid_mul, l2_norm, the causal convolution
// with its state, the delta rule's recurrent form row by row and its chunked form block by
// block in barrier order, over ubatches that carry the state); within the error bounds of
// test_cuda_ops, the matvec kernel (lane by lane, with the warp's butterfly sum) and the
// five attention kernels (block by block, thread by thread in barrier order, with the
// chunking of a small and a large GPU, sliding windows included). Needs nvcc at build
// time, no GPU at run time (label unit); what it cannot see: races between threads,
// shared-memory limits, the real intrinsics (expf, sincos) and cuBLAS.
#include <QtTest>

#include <cstring>

#include "cuda_host_emulation.h"
#include "delta_net_cases.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"
#include "random_rows.h"

using namespace lr;
using namespace lr::test;

namespace {

struct AttentionCase {
    uint32_t block_tokens, n_head_kv, head_dim, n_blocks;
    int32_t group;
    int64_t n_tokens;
    std::string codecs;  // one letter per block, cycled: h f16, f f32, 8 q8, 4 q4
    bool holes;
    uint32_t page_tokens = 0;  // > 0: each head reads random pages of this many slots (quest)
    int32_t window = 0;        // > 0: sliding window of this many positions
    bool sinks = false;        // a sink logit per query head
};

KvCodec codec_of(char c) {
    switch (c) {
        case 'f': return KvCodec::f32;
        case '8': return KvCodec::q8;
        case '4': return KvCodec::q4;
        default: return KvCodec::f16;
    }
}

}  // namespace

Q_DECLARE_METATYPE(DType)
Q_DECLARE_METATYPE(KvCodec)
Q_DECLARE_METATYPE(AttentionCase)
Q_DECLARE_METATYPE(RopeParams)

class TestCudaHostCodecs : public QObject {
    Q_OBJECT
private slots:
    void dequantBitIdentical_data() {
        QTest::addColumn<DType>("type");
        QTest::addColumn<int>("n_cols");
        const DType all[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                             DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL};
        for (DType t : all) {
            const int block = int(dtype_traits(t).block_elems);
            const std::vector<int> cols = block == 256  ? std::vector<int>{256, 1024}
                                          : block == 32 ? std::vector<int>{96, 800}
                                                        : std::vector<int>{37, 520};
            for (int n : cols) QTest::addRow("%s-%d", dtype_name(t).data(), n) << t << n;
        }
    }
    void dequantBitIdentical() {
        QFETCH(DType, type);
        QFETCH(int, n_cols);
        const int64_t n_rows = 9;
        const size_t rb = row_bytes(type, size_t(n_cols));
        std::vector<uint8_t> w(rb * n_rows);
        std::vector<float> want(size_t(n_rows) * size_t(n_cols));
        Rng rng{uint64_t(n_cols) * 3 + uint64_t(type)};
        for (int64_t r = 0; r < n_rows; ++r) {
            const std::vector<float> x = rng.activations(size_t(n_cols), 0.7f);
            quant::quantize_row(type, x.data(), w.data() + size_t(r) * rb, size_t(n_cols));
            quant::dequantize_row(type, w.data() + size_t(r) * rb, want.data() + size_t(r) * size_t(n_cols), size_t(n_cols));
        }
        std::vector<float> got(want.size(), NAN);
        emulate_dequant_one(type, w.data(), rb, n_rows, n_cols, got.data());
        QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * 4) == 0, "dequant_one differs from quant::dequantize_row");
        // The 16-byte loads of the float types need rows on 16 bytes: then both paths.
        for (bool aligned16 : {false, true}) {
            if (aligned16 && rb % 16 != 0) continue;
            std::fill(got.begin(), got.end(), NAN);
            QVERIFY2(emulate_dequant_steps(type, w.data(), rb, n_rows, n_cols, aligned16, got.data()), "a column written twice or never");
            for (size_t i = 0; i < want.size(); ++i) {
                QVERIFY2(std::memcmp(&got[i], &want[i], 4) == 0, qPrintable(QString("aligned %1, row %2 col %3: %4 vs %5")
                                                                                .arg(aligned16)
                                                                                .arg(i / size_t(n_cols))
                                                                                .arg(i % size_t(n_cols))
                                                                                .arg(double(got[i]))
                                                                                .arg(double(want[i]))));
            }
        }
    }

    // The decode kernel: y within (k - 1) u sum |w x| of the exact product (as test_cuda_ops).
    void matvecWithinBound_data() {
        QTest::addColumn<DType>("type");
        QTest::addColumn<int>("n_cols");
        QTest::addColumn<int>("n_tokens");
        for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                        DType::Q5_K, DType::Q6_K, DType::IQ4_NL}) {
            const int block = int(dtype_traits(t).block_elems);
            const int n_cols = block == 256 ? 512 : block == 32 ? 800 : 37;
            for (int n_tokens : {1, 3, 8}) QTest::addRow("%s-%d-t%d", dtype_name(t).data(), n_cols, n_tokens) << t << n_cols << n_tokens;
        }
    }
    void matvecWithinBound() {
        QFETCH(DType, type);
        QFETCH(int, n_cols);
        QFETCH(int, n_tokens);
        const int64_t n_rows = 7;  // odd: the last warp has one row
        const size_t rb = row_bytes(type, size_t(n_cols));
        std::vector<uint8_t> w(rb * n_rows);
        std::vector<float> values(size_t(n_rows) * size_t(n_cols));
        Rng rng{uint64_t(n_cols) + uint64_t(type)};
        for (int64_t r = 0; r < n_rows; ++r) {
            const std::vector<float> x = rng.activations(size_t(n_cols), 0.5f);
            quant::quantize_row(type, x.data(), w.data() + size_t(r) * rb, size_t(n_cols));
            quant::dequantize_row(type, w.data() + size_t(r) * rb, values.data() + size_t(r) * size_t(n_cols), size_t(n_cols));
        }
        const std::vector<float> x = rng.activations(size_t(n_tokens) * size_t(n_cols));
        std::vector<float> y(size_t(n_tokens) * n_rows, NAN);
        emulate_matvec(type, w.data(), rb, n_rows, n_cols, x.data(), n_tokens, y.data());
        for (int t = 0; t < n_tokens; ++t) {
            for (int64_t r = 0; r < n_rows; ++r) {
                double exact = 0, abs_sum = 0;
                for (int c = 0; c < n_cols; ++c) {
                    float xv = x[size_t(t) * size_t(n_cols) + size_t(c)];
                    if (type == DType::F16) xv = fp16_to_fp32(fp32_to_fp16(xv));
                    if (type == DType::BF16) xv = bf16_to_fp32(fp32_to_bf16(xv));
                    const double term = double(values[size_t(r) * size_t(n_cols) + size_t(c)]) * double(xv);
                    exact += term;
                    abs_sum += std::fabs(term);
                }
                const double got = y[size_t(t) * n_rows + size_t(r)];
                const double bound = 2.0 * n_cols / 16777216.0 * abs_sum + 1e-6;
                QVERIFY2(std::fabs(got - exact) <= bound,
                         qPrintable(QString("y[%1][%2] = %3, exact %4").arg(t).arg(r).arg(got).arg(exact)));
            }
        }
    }

    // The five attention kernels against the CPU's reference attention (bounds of test_cuda_ops).
    void attentionWithinBound_data() {
        QTest::addColumn<AttentionCase>("c");
        QTest::addColumn<int>("n_sm");
        // block_tokens, n_head_kv, head_dim, n_blocks, group, n_tokens, codecs, holes
        const std::pair<const char *, AttentionCase> cases[] = {
            {"decode-f16", {32, 4, 64, 20, 8, 1, "h", false}},
            {"decode-one-kv-head-long", {32, 1, 128, 60, 8, 1, "h", true}},
            {"decode-mixed-codecs", {16, 2, 64, 13, 4, 1, "h84f", true}},
            {"decode-d80-bt8", {8, 2, 80, 7, 3, 1, "h", true}},
            {"decode-d8-stories", {32, 4, 8, 5, 2, 1, "h", false}},
            {"decode-d256", {32, 2, 256, 6, 4, 1, "h", false}},
            {"prefill-f16", {32, 4, 64, 8, 8, 37, "h", false}},
            {"prefill-odd-blocks", {5, 3, 48, 23, 2, 41, "h", true}},
            {"prefill-mixed", {16, 2, 64, 12, 4, 29, "hf84", true}},
            {"prefill-d8", {7, 4, 8, 9, 2, 19, "h", false}},
            {"prefill-block-64", {64, 2, 128, 5, 4, 70, "h8", true}},
            {"no-gqa", {32, 8, 32, 3, 1, 9, "h", false}},
            {"decode-pages", {32, 4, 64, 20, 8, 1, "h", false, 8}},
            {"decode-pages-mixed", {16, 2, 64, 13, 4, 1, "h84f", true, 4}},
            {"decode-window", {32, 4, 64, 20, 8, 1, "h", false, 0, 40}},
            {"prefill-window", {32, 4, 64, 8, 8, 37, "h", false, 0, 32}},
            {"prefill-window-odd", {5, 3, 48, 23, 2, 41, "h", true, 0, 8}},
            {"decode-window-pages", {16, 1, 64, 24, 4, 1, "h84f", true, 4, 64}},
            {"decode-sinks-long", {32, 1, 128, 60, 8, 1, "h", true, 0, 0, true}},
            {"prefill-sinks-window-mixed", {5, 3, 48, 23, 2, 41, "h84f", true, 0, 8, true}},
            {"decode-sinks-window-pages", {16, 1, 64, 24, 4, 1, "h84f", true, 4, 64, true}},
        };
        for (const auto & [name, c] : cases) {
            for (int n_sm : {1, 132}) QTest::addRow("%s-sm%d", name, n_sm) << c << n_sm;
        }
    }
    void attentionWithinBound() {
        QFETCH(AttentionCase, c);
        QFETCH(int, n_sm);
        const KvBlockShape shape{c.block_tokens, c.n_head_kv, c.head_dim};
        const uint32_t d = c.head_dim, bt = c.block_tokens;
        const int32_t n_pos = int32_t(bt * c.n_blocks);
        Rng rng{uint64_t(d) * 7 + bt};
        std::vector<std::vector<uint8_t>> storage;
        std::vector<KvBlockRef> refs;
        float max_abs_v = 0;
        std::vector<float> row(d);
        for (uint32_t b = 0; b < c.n_blocks; ++b) {
            const KvCodec kc = codec_of(c.codecs[b % c.codecs.size()]), vc = codec_of(c.codecs[(b + 1) % c.codecs.size()]);
            const KvBlockLayout L{shape, kc, vc};
            storage.emplace_back(L.block_bytes(), uint8_t(0xAB));
            uint8_t * data = storage.back().data();
            auto * pos = reinterpret_cast<int32_t *>(data + L.pos_offset());
            for (uint32_t g = 0; g < c.n_head_kv; ++g) {
                for (uint32_t sl = 0; sl < bt; ++sl) {
                    const int32_t p = int32_t(b * bt + sl);
                    const bool empty = c.holes && rng.next_u64() % 7 == 0 && p < n_pos - int32_t(c.n_tokens);
                    pos[L.pos_index(g, sl)] = empty ? kInvalidPos : p;
                    if (empty) continue;
                    for (float & v : row) v = rng.normal(1.0f);
                    kv_encode_row(kc, row.data(), data + L.k_row_offset(g, sl), d);
                    for (float & v : row) {
                        v = rng.normal(1.0f);
                        max_abs_v = std::max(max_abs_v, std::fabs(v) * 1.1f);
                    }
                    kv_encode_row(vc, row.data(), data + L.v_row_offset(g, sl), d);
                }
            }
            refs.push_back({data, kc, vc});
        }
        const int32_t n_head = int32_t(c.n_head_kv) * c.group;
        std::vector<float> q(size_t(c.n_tokens) * size_t(n_head) * d);
        for (float & v : q) v = rng.normal(1.0f);
        std::vector<int32_t> qpos;
        for (int64_t t = 0; t < c.n_tokens; ++t) qpos.push_back(n_pos - int32_t(c.n_tokens) + int32_t(t));
        // Sinks about as large as the scores, one far above them.
        std::vector<float> sinks;
        for (int32_t h = 0; c.sinks && h < n_head; ++h) sinks.push_back(h == 1 ? 12.0f : rng.normal(2.0f));
        const AttentionParams p{.n_head = n_head,
                                .n_head_kv = int32_t(c.n_head_kv),
                                .head_dim = int32_t(d),
                                .scale = 1.0f / std::sqrt(float(d)),
                                .window = c.window,
                                .sinks = c.sinks ? sinks.data() : nullptr};
        const bool all_f16 = c.codecs.find_first_not_of('h') == std::string::npos;
        const double tol = (all_f16 ? 2e-3 : 5e-5) * double(max_abs_v);
        const size_t n_mass = size_t(c.n_blocks) * c.n_head_kv * bt;
        CpuBackend ref({.n_threads = 1, .isa = CpuIsa::scalar});
        std::vector<float> want(q.size(), NAN), got(q.size(), NAN), mass_want(n_mass, 0.5f), mass_got(n_mass, 0.5f);
        std::vector<uint32_t> read_pages;
        for (uint32_t b = 0; c.page_tokens > 0 && b < c.n_blocks; ++b) {
            for (uint32_t g = 0; g < c.n_head_kv; ++g) read_pages.push_back(b + 1 == c.n_blocks ? ~0u : uint32_t(rng.next_u64()));
        }
        PagedKvView view;
        view.shape = shape;
        view.blocks = refs;
        view.read_pages = read_pages;
        view.page_tokens = c.page_tokens;
        view.attn_mass = mass_want.data();
        ref.attention(q.data(), c.n_tokens, qpos.data(), view, p, want.data());
        view.attn_mass = mass_got.data();
        emulate_attention(q.data(), c.n_tokens, qpos.data(), view, p, got.data(), n_sm);
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(std::isfinite(got[i]), qPrintable(QString("out[%1] = %2").arg(i).arg(double(got[i]))));
            worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
        }
        QVERIFY2(worst <= tol, qPrintable(QString("max |d| %1 > %2").arg(worst).arg(tol)));
        for (size_t i = 0; i < n_mass; ++i) {
            QVERIFY2(std::fabs(double(mass_got[i]) - mass_want[i]) <= 1e-5 * double(c.n_tokens * c.group),
                     qPrintable(QString("mass[%1] %2 vs %3").arg(i).arg(double(mass_got[i])).arg(double(mass_want[i]))));
        }
    }

    // The rope kernel's per-pair code on the host (std::cos and std::sin where the device
    // takes them in double): the CPU's bits, for every variant the models use.
    void ropeBitIdentical_data() {
        QTest::addColumn<RopeParams>("p");
        QTest::newRow("llama") << RopeParams{.mode = RopeMode::normal, .n_rot = 64, .head_dim = 64};
        QTest::newRow("neox-partial-linear") << RopeParams{
            .mode = RopeMode::neox, .n_rot = 32, .head_dim = 64, .freq_base = 1e6f, .freq_scale = 0.125f};
        QTest::newRow("longrope") << RopeParams{.mode = RopeMode::neox, .n_rot = 32, .head_dim = 32, .attn_factor = 1.118034f};
        QTest::newRow("yarn") << RopeParams{.mode = RopeMode::normal,
                                            .n_rot = 32,
                                            .head_dim = 32,
                                            .freq_base = 1e6f,
                                            .freq_scale = 0.0625f,
                                            .ext_factor = 1.0f,
                                            .attn_factor = 0.78289f,
                                            .corr_low = 3.0f,
                                            .corr_high = 11.0f};
    }
    void ropeBitIdentical() {
        QFETCH(RopeParams, p);
        std::vector<float> factors(size_t(p.n_rot / 2));
        for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + float(i) * 0.37f;
        for (bool with_factors : {false, true}) {
            p.freq_factors = with_factors ? factors.data() : nullptr;
            const std::vector<int32_t> pos{0, 1, 63, 64, 1000, 5000};
            Rng rng{uint64_t(p.n_rot)};
            std::vector<float> want = rng.activations(pos.size() * 3 * size_t(p.head_dim)), got = want;
            CpuBackend cpu({.n_threads = 1, .isa = CpuIsa::scalar});
            cpu.rope(want.data(), int64_t(pos.size()), 3, pos.data(), p);
            emulate_rope(got.data(), int64_t(pos.size()), 3, pos.data(), p);
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0, with_factors ? "with factors" : "without");
        }
    }

    void gegluBitIdentical() {
        Rng rng{3};
        std::vector<float> gate = rng.activations(4000, 4.0f), up = rng.activations(4000);
        gate[0] = -10.0f, gate[1] = 10.0f, gate[2] = -30.0f, gate[3] = 11.0f;
        std::vector<float> want(gate.size()), got(gate.size());
        CpuBackend({.n_threads = 1, .isa = CpuIsa::scalar}).geglu(gate.data(), up.data(), int64_t(gate.size()), want.data());
        emulate_geglu(gate.data(), up.data(), int64_t(gate.size()), got.data());
        QVERIFY(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }

    // moe.cu's per-element code gives CpuBackend::moe_ffn's bits. Experts of one input and
    // one hidden unit make every product a single exact multiplication, so the CPU op is
    // gate, up, bias, swiglu_oai, down, bias and the weighted sum alone.
    void moeActivationAndSumBitIdentical() {
        constexpr int32_t n_expert = 4, n_used = 3;
        constexpr int64_t n_tokens = 500;
        Rng rng{5};
        std::vector<float> gate_w = rng.activations(n_expert, 4.0f), up_w = rng.activations(n_expert, 4.0f);
        std::vector<float> down_w = rng.activations(n_expert), biases = rng.activations(3 * n_expert);
        std::vector<float> x = rng.activations(n_tokens, 2.0f), weights(n_tokens * n_used);
        std::vector<int32_t> ids(n_tokens * n_used);
        for (int64_t t = 0; t < n_tokens; ++t) {
            for (int32_t j = 0; j < n_used; ++j) {
                ids[size_t(t * n_used + j)] = int32_t((t + j) % n_expert);
                weights[size_t(t * n_used + j)] = float(rng.uniform());
            }
        }
        const ExpertWeights w{.n_expert = n_expert,
                              .act = ExpertActivation::swiglu_oai,
                              .gate = {DType::F32, 1, n_expert, gate_w.data()},
                              .up = {DType::F32, 1, n_expert, up_w.data()},
                              .down = {DType::F32, 1, n_expert, down_w.data()},
                              .gate_bias = {DType::F32, 1, n_expert, biases.data()},
                              .up_bias = {DType::F32, 1, n_expert, biases.data() + n_expert},
                              .down_bias = {DType::F32, 1, n_expert, biases.data() + 2 * n_expert}};
        std::vector<float> want(n_tokens);
        CpuBackend({.n_threads = 1, .isa = CpuIsa::scalar})
            .moe_ffn(w, x.data(), n_tokens, {n_used, ids.data(), weights.data()}, want.data());

        // The CUDA op's steps: slot s = (token, choice) in token order here (one column, so
        // the grouping does not change a value).
        const int64_t n_slots = n_tokens * n_used;
        std::vector<float> g(n_slots), u(n_slots), h(n_slots), y(n_slots), got(n_tokens);
        std::vector<int32_t> slot_of(n_slots);
        for (int64_t s = 0; s < n_slots; ++s) {
            const int32_t e = ids[size_t(s)];
            const float xt = x[size_t(s / n_used)];
            g[size_t(s)] = gate_w[size_t(e)] * xt + biases[size_t(e)];
            u[size_t(s)] = up_w[size_t(e)] * xt + biases[size_t(n_expert + e)];
            slot_of[size_t(s)] = int32_t(s);
        }
        emulate_swiglu_oai(g.data(), u.data(), n_slots, h.data());
        for (int64_t s = 0; s < n_slots; ++s)
            y[size_t(s)] = down_w[size_t(ids[size_t(s)])] * h[size_t(s)] + biases[size_t(2 * n_expert + ids[size_t(s)])];
        emulate_moe_combine(y.data(), slot_of.data(), weights.data(), n_used, n_tokens, 1, got.data());
        QVERIFY(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }

    // The Gated DeltaNet kernels give the CPU's bits here, where expf is the host's libm
    // (the device's expf is within 2 ulp: test_cuda_ops bounds that). A zero row and a row
    // below eps take l2_norm's eps branch.
    void sigmoidMulAndL2NormBitIdentical() {
        Rng rng{17};
        CpuBackend cpu({.n_threads = 1, .isa = CpuIsa::scalar});
        for (const auto & [n_rows, n_cols] : {std::pair<int64_t, int64_t>{1, 128}, {48, 128}, {7, 16}, {5, 100}}) {
            std::vector<float> x = rng.activations(size_t(n_rows * n_cols), 2.0f), gate = rng.activations(x.size(), 4.0f);
            if (n_rows > 2) {
                std::fill(x.begin(), x.begin() + n_cols, 0.0f);
                for (int64_t c = 0; c < n_cols; ++c) x[size_t(n_cols + c)] *= 1e-8f;
            }
            std::vector<float> want(x.size()), got = x;
            cpu.l2_norm(x.data(), n_rows, n_cols, 1e-6f, want.data());
            emulate_l2_norm(got.data(), n_rows, n_cols, 1e-6f, got.data());  // in place, as the model calls it
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
                     qPrintable(QString("l2_norm %1x%2: max |d| %3").arg(n_rows).arg(n_cols).arg(largest_difference(got, want))));
            want = x, got = x;
            cpu.sigmoid_mul(want.data(), gate.data(), int64_t(x.size()));
            emulate_sigmoid_mul(got.data(), gate.data(), int64_t(x.size()));
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
                     qPrintable(QString("sigmoid_mul: max |d| %1").arg(largest_difference(got, want))));
        }
    }

    void causalConvBitIdentical_data() { add_conv_rows(); }
    void causalConvBitIdentical() {
        QFETCH(ConvCase, c);
        Rng rng{uint64_t(c.n_channels * c.width)};
        const std::vector<float> kernel = rng.activations(size_t(c.n_channels * c.width), 0.5f);
        std::vector<float> want_state = rng.activations(size_t(c.n_channels * (c.width - 1))), got_state = want_state;
        CpuBackend cpu({.n_threads = 1, .isa = CpuIsa::scalar});
        for (int64_t n : c.ubatches) {
            const std::vector<float> x = rng.activations(size_t(n * c.n_channels), 2.0f);
            std::vector<float> want(x.size()), got(x.size());
            cpu.causal_conv_silu(x.data(), n, {DType::F32, c.width, c.n_channels, kernel.data()}, want_state.data(), want.data());
            emulate_causal_conv_silu(x.data(), n, kernel.data(), c.n_channels, c.width, got_state.data(), got.data());
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
                     qPrintable(QString("%1 tokens: max |d| %2").arg(n).arg(largest_difference(got, want))));
            QVERIFY2(got_state == want_state, qPrintable(QString("state after %1 tokens").arg(n)));
        }
    }

    // Each form of the delta rule, the outputs and the state after every ubatch.
    void deltaRuleBitIdentical_data() { add_delta_rule_rows(); }
    void deltaRuleBitIdentical() {
        QFETCH(DeltaRuleCase, c);
        Rng rng{uint64_t(c.shape.head_k_dim * 31 + c.shape.n_v_heads)};
        std::vector<float> want_state = delta_rule_state(rng, c.shape), got_state = want_state;
        CpuBackend cpu({.n_threads = 1, .isa = CpuIsa::scalar});
        for (const auto & [n, chunk] : c.ubatches) {
            DeltaRuleParams p = c.shape;
            p.chunk_tokens = chunk;
            const DeltaRuleInputs in = delta_rule_inputs(rng, p, n);
            std::vector<float> want(size_t(n * p.n_v_heads * p.head_v_dim)), got(want.size());
            cpu.gated_delta_rule(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), n, p, want_state.data(), want.data());
            emulate_gated_delta_rule(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), n, p, got_state.data(),
                                     got.data());
            const QString at = QString("%1 tokens, chunk %2: ").arg(n).arg(chunk);
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
                     qPrintable(at + QString("out max |d| %1").arg(largest_difference(got, want))));
            QVERIFY2(got_state == want_state, qPrintable(at + QString("state max |d| %1").arg(largest_difference(got_state, want_state))));
        }
    }

    void kvCodecsBitIdentical_data() {
        QTest::addColumn<KvCodec>("codec");
        QTest::addColumn<int>("head_dim");
        for (KvCodec c : {KvCodec::f32, KvCodec::f16, KvCodec::q8, KvCodec::q4}) {
            for (int d : {8, 40, 48, 64, 128}) {
                QTest::addRow("%s-%d", std::string(kv_codec_name(c)).c_str(), d) << c << d;
            }
        }
    }
    void kvCodecsBitIdentical() {
        QFETCH(KvCodec, codec);
        QFETCH(int, head_dim);
        const uint32_t d = uint32_t(head_dim);
        const size_t rb = kv_codec_row_bytes(codec, d);
        Rng rng{uint64_t(head_dim)};
        for (int trial = 0; trial < 50; ++trial) {
            std::vector<float> x = rng.activations(d, trial % 2 ? 3.0f : 0.01f);
            if (trial == 7) std::fill(x.begin(), x.end(), 0.0f);  // zero scale
            if (trial == 8) std::fill(x.begin(), x.end(), 1.5f);  // flat group: max == min
            std::vector<uint8_t> want(rb), got(rb, 0xCD);
            kv_encode_row(codec, x.data(), want.data(), d);
            emulate_kv_encode_row(codec, x.data(), got.data(), d);
            QVERIFY2(got == want, qPrintable(QString("trial %1: encoded bytes differ").arg(trial)));
            std::vector<float> dec(d);
            kv_decode_row(codec, want.data(), dec.data(), d);
            for (uint32_t i = 0; i < d; ++i) {
                const float v = emulate_kv_decode(codec, want.data(), i, d);
                QVERIFY2(std::memcmp(&v, &dec[i], 4) == 0,
                         qPrintable(QString("trial %1 value %2: %3 vs %4").arg(trial).arg(i).arg(double(v)).arg(double(dec[i]))));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaHostCodecs)
#include "test_cuda_host_codecs.moc"
