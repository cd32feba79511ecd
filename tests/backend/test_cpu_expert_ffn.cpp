// Backend::moe_ffn on the CPU (expert_ffn.cpp) against a naive dense reference: every
// chosen expert of every token computed with the backend's plain matmul on that expert's
// rows and its swiglu, the biases, gpt-oss's activation and the weighted sum written out
// here. Checked:
//   - the scalar path equals the reference bit for bit where its products do not depend on
//     the token count (quantized weights: quant::vec_dot per row), and within float
//     rounding otherwise (F32/F16/BF16 take the gemm order for several tokens);
//   - the AVX2 path equals the scalar one bit for bit for float weights (the kernels keep
//     float_dot.h's orders), and for quantized weights within one q8 level of the hidden
//     activations (their block sums are added in another order);
//   - a grouped prefill equals the same tokens one at a time, likewise;
//   - experts no token chose are never read (their bytes are NaN here).

#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/quant/quant.h"
#include "random_rows.h"

using namespace lr;

namespace {

constexpr int32_t kExperts = 8;
constexpr int32_t kUsed = 3;
constexpr int64_t kEmbd = 256;
constexpr int32_t kUnchosen = 5;  // no token routes to this expert: its weights are NaN

// One layer's experts in host memory, and the routes of n_tokens tokens.
struct Problem {
    DType type = DType::F32;
    ExpertActivation act = ExpertActivation::swiglu;
    bool biases = false;
    int64_t n_ff = 0;
    int64_t n_tokens = 0;
    std::vector<uint8_t> gate, up, down;               // stacked, GGUF layout
    std::vector<float> gate_bias, up_bias, down_bias;  // [n_expert][rows]
    std::vector<float> x;                              // [n_tokens][n_embd]
    std::vector<int32_t> ids;                          // [n_tokens][n_used]
    std::vector<float> weights;                        // [n_tokens][n_used]

    ExpertWeights view() const {
        ExpertWeights w{.n_expert = kExperts, .act = act};
        w.gate = {type, kEmbd, kExperts * n_ff, gate.data()};
        w.up = {type, kEmbd, kExperts * n_ff, up.data()};
        w.down = {type, n_ff, kExperts * kEmbd, down.data()};
        if (biases) {
            w.gate_bias = {DType::F32, n_ff, kExperts, gate_bias.data()};
            w.up_bias = {DType::F32, n_ff, kExperts, up_bias.data()};
            w.down_bias = {DType::F32, kEmbd, kExperts, down_bias.data()};
        }
        return w;
    }
    ExpertRoutes routes(int64_t t = 0) const { return {kUsed, ids.data() + t * kUsed, weights.data() + t * kUsed}; }
};

// n_rows rows of n_cols quantized to `type`, ~ N(0, sigma).
std::vector<uint8_t> random_matrix(DType type, int64_t n_cols, int64_t n_rows, float sigma, test::Rng & rng) {
    const size_t rb = row_bytes(type, size_t(n_cols));
    std::vector<uint8_t> out(rb * size_t(n_rows));
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        for (float & v : row) v = rng.normal(sigma);
        quant::quantize_row(type, row.data(), out.data() + size_t(r) * rb, size_t(n_cols));
    }
    return out;
}

Problem make_problem(DType type, ExpertActivation act, bool biases, int64_t n_tokens, uint64_t seed) {
    test::Rng rng(seed);
    Problem p{.type = type, .act = act, .biases = biases, .n_ff = dtype_traits(type).block_elems == 256 ? 256 : 96, .n_tokens = n_tokens};
    // Gate and up large enough for gpt-oss's clamps at +-7 to matter.
    p.gate = random_matrix(type, kEmbd, kExperts * p.n_ff, 0.3f, rng);
    p.up = random_matrix(type, kEmbd, kExperts * p.n_ff, 0.3f, rng);
    p.down = random_matrix(type, p.n_ff, kExperts * kEmbd, 0.05f, rng);
    for (std::vector<uint8_t> * m : {&p.gate, &p.up, &p.down}) {
        const size_t per_expert = m->size() / kExperts;
        std::memset(m->data() + kUnchosen * per_expert, 0xFF, per_expert);
    }
    p.gate_bias.resize(size_t(kExperts * p.n_ff));
    p.up_bias.resize(size_t(kExperts * p.n_ff));
    p.down_bias.resize(size_t(kExperts * kEmbd));
    for (std::vector<float> * b : {&p.gate_bias, &p.up_bias, &p.down_bias}) {
        for (float & v : *b) v = rng.normal(0.1f);
    }
    p.x = rng.activations(size_t(n_tokens * kEmbd), 1.0f);
    for (int64_t t = 0; t < n_tokens; ++t) {
        // kUsed distinct experts, never kUnchosen, in a random order; weights like a softmax's.
        std::vector<int32_t> pool;
        for (int32_t e = 0; e < kExperts; ++e) {
            if (e != kUnchosen) pool.push_back(e);
        }
        for (int32_t j = 0; j < kUsed; ++j) {
            const size_t pick = size_t(rng.next_u64() % pool.size());
            p.ids.push_back(pool[pick]);
            pool.erase(pool.begin() + std::ptrdiff_t(pick));
            p.weights.push_back(float(0.1 + rng.uniform()));
        }
    }
    return p;
}

float oai(float g, float u) {
    const float x = std::min(g, 7.0f);
    const float y = std::max(-7.0f, std::min(u, 7.0f));
    return x / (1.0f + std::exp(1.702f * -x)) * (y + 1.0f);
}

// Every chosen expert of every token with b's matmul (one token at a time).
std::vector<float> dense_reference(CpuBackend & b, const Problem & p) {
    const ExpertWeights w = p.view();
    std::vector<float> out(static_cast<size_t>(p.n_tokens * kEmbd), 0.0f);
    std::vector<float> g(static_cast<size_t>(p.n_ff)), u(static_cast<size_t>(p.n_ff)), y(static_cast<size_t>(kEmbd));
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        const float * xt = p.x.data() + t * kEmbd;
        float * o = out.data() + t * kEmbd;
        for (int32_t j = 0; j < kUsed; ++j) {
            const int32_t e = p.ids[size_t(t * kUsed + j)];
            b.matmul(w.rows_of(w.gate, e), xt, 1, g.data());
            b.matmul(w.rows_of(w.up, e), xt, 1, u.data());
            for (int64_t i = 0; i < p.n_ff && p.biases; ++i) {
                u[size_t(i)] += p.up_bias[size_t(e * p.n_ff + i)];
                g[size_t(i)] += p.gate_bias[size_t(e * p.n_ff + i)];
            }
            if (p.act == ExpertActivation::swiglu_oai) {
                for (int64_t i = 0; i < p.n_ff; ++i) g[size_t(i)] = oai(g[size_t(i)], u[size_t(i)]);
            } else {
                b.swiglu(g.data(), u.data(), 1, p.n_ff, g.data());
            }
            b.matmul(w.rows_of(w.down, e), g.data(), 1, y.data());
            const float weight = p.weights[size_t(t * kUsed + j)];
            for (int64_t c = 0; c < kEmbd; ++c) {
                const float v = (p.biases ? y[size_t(c)] + p.down_bias[size_t(e * kEmbd + c)] : y[size_t(c)]) * weight;
                o[c] = j == 0 ? v : o[c] + v;
            }
        }
    }
    return out;
}

// The op over all tokens at once (grouped), or one token per call.
std::vector<float> run_op(CpuBackend & b, const Problem & p, bool one_at_a_time) {
    const ExpertWeights w = p.view();
    std::vector<float> out(size_t(p.n_tokens * kEmbd), NAN);
    if (!one_at_a_time) {
        b.moe_ffn(w, p.x.data(), p.n_tokens, p.routes(), out.data());
        return out;
    }
    for (int64_t t = 0; t < p.n_tokens; ++t) b.moe_ffn(w, p.x.data() + t * kEmbd, 1, p.routes(t), out.data() + t * kEmbd);
    return out;
}

float max_abs(const std::vector<float> & v) {
    float m = 0;
    for (float x : v) m = std::max(m, std::abs(x));
    return m;
}

// max |a - b|, or infinity when either has a NaN.
float max_diff(const std::vector<float> & a, const std::vector<float> & b) {
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
        m = std::max(m, std::abs(a[i] - b[i]));
    }
    return m;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

}  // namespace

class TestCpuExpertFfn : public QObject {
    Q_OBJECT

    CpuBackend scalar_{{.n_threads = 2, .isa = CpuIsa::scalar}};
    CpuBackend simd_{{.n_threads = 2}};

private slots:
    void matchesDenseReference_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<bool>("oai");
        QTest::addColumn<int>("n_tokens");
        for (const char * type : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "MXFP4", "Q4_K", "Q6_K"}) {
            for (int n_tokens : {1, 13}) {
                QTest::addRow("%s-swiglu-%d", type, n_tokens) << QString(type) << false << n_tokens;
                QTest::addRow("%s-oai-biases-%d", type, n_tokens) << QString(type) << true << n_tokens;
            }
        }
    }
    void matchesDenseReference() {
        QFETCH(QString, type);
        QFETCH(bool, oai);
        QFETCH(int, n_tokens);
        const DType t = *dtype_from_name(type.toStdString());
        const Problem p = make_problem(t, oai ? ExpertActivation::swiglu_oai : ExpertActivation::swiglu, oai, n_tokens,
                                       uint64_t(n_tokens) * 131 + uint64_t(t));
        const std::vector<float> ref = dense_reference(scalar_, p);
        const std::vector<float> grouped = run_op(scalar_, p, false);
        const std::vector<float> single = run_op(scalar_, p, true);
        const float scale = max_abs(ref);
        QVERIFY(scale > 0 && std::isfinite(scale));
        // One token per call: the reference's own products, bit for bit.
        QCOMPARE(max_diff(single, ref), 0.0f);
        const float grouped_diff = max_diff(grouped, ref);
        qInfo("max |ref| %.3g, scalar grouped vs reference %.3g", double(scale), double(grouped_diff));
        if (is_float_type(t)) {
            // The gemm order for several tokens: float rounding, plus a last-bit f16/bf16
            // rounding of the hidden activations that may go the other way.
            QVERIFY2(grouped_diff <= (t == DType::F32 ? 1e-5f : 4e-3f) * scale, qPrintable(QString::number(grouped_diff)));
        } else {
            QCOMPARE(grouped_diff, 0.0f);
        }
    }

    void simdMatchesScalar_data() { matchesDenseReference_data(); }
    void simdMatchesScalar() {
        if (simd_.isa() == CpuIsa::scalar) QSKIP("this CPU has no SIMD ISA with kernels: nothing to compare");
        QFETCH(QString, type);
        QFETCH(bool, oai);
        QFETCH(int, n_tokens);
        const DType t = *dtype_from_name(type.toStdString());
        const Problem p = make_problem(t, oai ? ExpertActivation::swiglu_oai : ExpertActivation::swiglu, oai, n_tokens,
                                       uint64_t(n_tokens) * 71 + uint64_t(t));
        const float scale = max_abs(dense_reference(scalar_, p));
        for (bool one_at_a_time : {false, true}) {
            const std::vector<float> a = run_op(scalar_, p, one_at_a_time);
            const std::vector<float> b = run_op(simd_, p, one_at_a_time);
            const float d = max_diff(a, b);
            qInfo("%s: simd vs scalar %.3g (max |out| %.3g)", one_at_a_time ? "one at a time" : "grouped", double(d), double(scale));
            if (is_float_type(t)) {
                QCOMPARE(d, 0.0f);
            } else {
                // The block sums in another order can move a hidden activation across a q8
                // level: at most a few levels of one block, times a row of down.
                QVERIFY2(d <= 1e-2f * scale, qPrintable(QString::number(d)));
            }
        }
    }

    // A prefill ubatch grouped by expert gives what decoding its tokens one by one gives.
    void groupedPrefillMatchesTokenByToken_data() {
        QTest::addColumn<QString>("type");
        for (const char * type : {"F32", "Q8_0", "MXFP4", "Q4_K"}) QTest::newRow(type) << QString(type);
    }
    void groupedPrefillMatchesTokenByToken() {
        QFETCH(QString, type);
        const DType t = *dtype_from_name(type.toStdString());
        const Problem p = make_problem(t, ExpertActivation::swiglu_oai, true, 37, 5);
        const float scale = max_abs(dense_reference(scalar_, p));
        for (CpuBackend * b : {&scalar_, &simd_}) {
            const float d = max_diff(run_op(*b, p, false), run_op(*b, p, true));
            qInfo("%s: grouped vs one at a time %.3g", b->name().c_str(), double(d));
            QVERIFY2(d <= (t == DType::F32 ? 1e-5f : 1e-2f) * scale, qPrintable(QString::number(d)));
            if (b == &scalar_ && t != DType::F32) QCOMPARE(d, 0.0f);
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuExpertFfn)
#include "test_cpu_expert_ffn.moc"
