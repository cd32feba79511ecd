// Gated DeltaNet's ops on the CPU backend: the gated delta rule's recurrent form against a
// plain double-precision transcription of its definition (backend.h), its chunked form
// against the recurrent one at several chunk sizes and ubatch split points (the state
// carried between calls), and the causal convolution's state carried across ubatches.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "random_rows.h"

using namespace lr;

namespace {

// The ubatch of a gated delta rule, with gates as qwen35 makes them: q and k of unit
// length, beta in (0, 1), log-decays g = a softplus(.) with a in [-16, -1].
struct DeltaInputs {
    DeltaRuleParams p;
    int64_t n = 0;
    std::vector<float> q, k, v, g, beta;
};

DeltaInputs random_inputs(DeltaRuleParams p, int64_t n, uint64_t seed) {
    test::Rng rng(seed);
    DeltaInputs in{.p = p, .n = n};
    auto unit_rows = [&](std::vector<float> & x, int64_t rows, int64_t cols) {
        x.resize(size_t(rows * cols));
        for (int64_t r = 0; r < rows; ++r) {
            float * row = &x[size_t(r * cols)];
            double norm = 0;
            for (int64_t c = 0; c < cols; ++c) {
                row[c] = rng.normal();
                norm += double(row[c]) * row[c];
            }
            for (int64_t c = 0; c < cols; ++c) row[c] = float(row[c] / std::sqrt(norm));
        }
    };
    unit_rows(in.q, n * p.n_k_heads, p.head_k_dim);
    unit_rows(in.k, n * p.n_k_heads, p.head_k_dim);
    in.v.resize(size_t(n * p.n_v_heads * p.head_v_dim));
    for (float & x : in.v) x = rng.normal();
    for (int64_t i = 0; i < n * p.n_v_heads; ++i) {
        in.beta.push_back(float(1.0 / (1.0 + std::exp(-rng.normal()))));
        const double a = -(1.0 + 15.0 * rng.uniform());
        const double dt = std::log1p(std::exp(double(rng.normal()) - 4.0));
        in.g.push_back(float(a * dt));
    }
    return in;
}

struct DeltaResult {
    std::vector<float> out, state;
};

// Tokens [from, to) of the ubatch through the backend, continuing `state`.
void run_part(CpuBackend & b, const DeltaInputs & in, int64_t from, int64_t to, int32_t chunk, std::vector<float> & state,
              std::vector<float> & out) {
    const DeltaRuleParams & p = in.p;
    DeltaRuleParams q = p;
    q.chunk_tokens = chunk;
    const int64_t qk = int64_t(p.n_k_heads) * p.head_k_dim, vv = int64_t(p.n_v_heads) * p.head_v_dim;
    b.gated_delta_rule(in.q.data() + from * qk, in.k.data() + from * qk, in.v.data() + from * vv, in.g.data() + from * p.n_v_heads,
                       in.beta.data() + from * p.n_v_heads, to - from, q, state.data(), out.data() + from * vv);
}

// The ubatch cut at `splits` (each part continuing the state), every part in `chunk` form.
DeltaResult run_delta(CpuBackend & b, const DeltaInputs & in, int32_t chunk, std::vector<int64_t> splits = {}) {
    const DeltaRuleParams & p = in.p;
    DeltaResult r;
    r.out.assign(size_t(in.n * p.n_v_heads * p.head_v_dim), NAN);
    r.state.assign(size_t(p.n_v_heads) * p.head_v_dim * p.head_k_dim, 0.0f);
    splits.insert(splits.begin(), 0);
    splits.push_back(in.n);
    for (size_t i = 0; i + 1 < splits.size(); ++i) run_part(b, in, splits[i], splits[i + 1], chunk, r.state, r.out);
    return r;
}

// The definition, in double: S_h *= exp(g); d = (v - S_h^T k) beta; S_h += k d^T; out = S_h^T q / sqrt(dk).
DeltaResult definition(const DeltaInputs & in) {
    const DeltaRuleParams & p = in.p;
    const int64_t dk = p.head_k_dim, dv = p.head_v_dim;
    DeltaResult r;
    r.out.resize(size_t(in.n * p.n_v_heads * dv));
    r.state.resize(size_t(p.n_v_heads * dv * dk));
    for (int64_t h = 0; h < p.n_v_heads; ++h) {
        std::vector<double> s(size_t(dk * dv), 0.0);  // s[i][j]
        const int64_t kh = h % p.n_k_heads;
        for (int64_t t = 0; t < in.n; ++t) {
            const float * q = &in.q[size_t((t * p.n_k_heads + kh) * dk)];
            const float * k = &in.k[size_t((t * p.n_k_heads + kh) * dk)];
            const float * v = &in.v[size_t((t * p.n_v_heads + h) * dv)];
            const double decay = std::exp(double(in.g[size_t(t * p.n_v_heads + h)])), beta = in.beta[size_t(t * p.n_v_heads + h)];
            for (double & x : s) x *= decay;
            for (int64_t j = 0; j < dv; ++j) {
                double pred = 0;
                for (int64_t i = 0; i < dk; ++i) pred += s[size_t(i * dv + j)] * k[i];
                const double d = (v[j] - pred) * beta;
                for (int64_t i = 0; i < dk; ++i) s[size_t(i * dv + j)] += k[i] * d;
            }
            for (int64_t j = 0; j < dv; ++j) {
                double o = 0;
                for (int64_t i = 0; i < dk; ++i) o += s[size_t(i * dv + j)] * q[i];
                r.out[size_t((t * p.n_v_heads + h) * dv + j)] = float(o / std::sqrt(double(dk)));
            }
        }
        for (int64_t j = 0; j < dv; ++j) {
            for (int64_t i = 0; i < dk; ++i) r.state[size_t((h * dv + j) * dk + i)] = float(s[size_t(i * dv + j)]);
        }
    }
    return r;
}

float max_abs_diff(const std::vector<float> & a, const std::vector<float> & b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return a.size() == b.size() ? d : INFINITY;
}

const DeltaRuleParams kQwen35Tiny{.n_k_heads = 2, .n_v_heads = 4, .head_k_dim = 32, .head_v_dim = 32};

}  // namespace

class TestDeltaRule : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};

private slots:
    // The recurrent form is the definition, v heads tiled over the q/k heads.
    void recurrentFormIsTheDefinition() {
        const DeltaInputs in = random_inputs(kQwen35Tiny, 150, 1);
        const DeltaResult want = definition(in), got = run_delta(backend_, in, 0);
        const float d_out = max_abs_diff(got.out, want.out), d_state = max_abs_diff(got.state, want.state);
        qInfo("max |d| out %.3g, state %.3g", double(d_out), double(d_state));
        QVERIFY(d_out < 1e-5f);
        QVERIFY(d_state < 1e-5f);
    }

    // The chunked form gives the recurrent form's numbers, whatever the chunk size and
    // wherever the ubatches are cut (the state carried from one call to the next).
    void chunkedFormAgreesWithRecurrent_data() {
        QTest::addColumn<int>("chunk");
        QTest::addColumn<QList<int>>("splits");
        QTest::addColumn<float>("tolerance");
        // Float rounding only: measured max |d| outputs / final state (values of order 1) in
        // the comments; a chunk of 200 tokens sums the most terms in other orders.
        QTest::newRow("chunk-64") << 64 << QList<int>{} << 1e-6f;                        // 1.0e-7 / 1.2e-7
        QTest::newRow("chunk-64-split-7") << 64 << QList<int>{7, 14, 21, 100} << 1e-6f;  // 1.2e-7 / 2.1e-7
        QTest::newRow("chunk-64-split-64-128") << 64 << QList<int>{64, 128} << 1e-6f;    // 1.0e-7 / 1.2e-7
        QTest::newRow("chunk-16") << 16 << QList<int>{} << 1e-6f;                        // 6.0e-8 / 1.2e-7
        QTest::newRow("chunk-5-split-33") << 5 << QList<int>{33} << 1e-6f;               // 4.5e-8 / 1.2e-7
        QTest::newRow("chunk-1") << 1 << QList<int>{} << 1e-6f;                          // 6.0e-8 / 1.2e-7
        QTest::newRow("chunk-200") << 200 << QList<int>{1, 199} << 5e-6f;                // 5.2e-7 / 1.3e-6
    }
    void chunkedFormAgreesWithRecurrent() {
        QFETCH(int, chunk);
        QFETCH(QList<int>, splits);
        QFETCH(float, tolerance);
        const DeltaInputs in = random_inputs(kQwen35Tiny, 200, 2);
        const DeltaResult recurrent = run_delta(backend_, in, 0);
        const DeltaResult chunked = run_delta(backend_, in, chunk, std::vector<int64_t>(splits.begin(), splits.end()));
        const float d_out = max_abs_diff(chunked.out, recurrent.out), d_state = max_abs_diff(chunked.state, recurrent.state);
        qInfo("max |d| out %.3g, state %.3g", double(d_out), double(d_state));
        QVERIFY2(d_out <= tolerance, qPrintable(QString::number(double(d_out))));
        QVERIFY2(d_state <= tolerance, qPrintable(QString::number(double(d_state))));
    }

    // The recurrent form is the same, token by token or in one call.
    void recurrentFormSplitsExactly() {
        const DeltaInputs in = random_inputs(kQwen35Tiny, 40, 3);
        std::vector<int64_t> every;
        for (int64_t t = 1; t < in.n; ++t) every.push_back(t);
        const DeltaResult whole = run_delta(backend_, in, 0), stepped = run_delta(backend_, in, 0, every);
        QCOMPARE(stepped.out, whole.out);
        QCOMPARE(stepped.state, whole.state);
    }

    // The convolution's state carries the last K - 1 inputs: ubatches cut anywhere give the
    // whole run's bits, and the first tokens see zeros before them.
    void convolutionCarriesItsState() {
        const int64_t n_ch = 48, width = 4, n = 23;
        test::Rng rng(4);
        std::vector<float> kernel(size_t(n_ch * width)), x(size_t(n * n_ch));
        for (float & w : kernel) w = rng.normal(0.3f);
        for (float & v : x) v = rng.normal();
        const WeightView kv{.type = DType::F32, .n_cols = width, .n_rows = n_ch, .data = kernel.data()};
        std::vector<float> whole(x.size()), parts(x.size()), state(size_t(n_ch * (width - 1)), 0.0f);
        backend_.causal_conv_silu(x.data(), n, kv, state.data(), whole.data());
        const std::vector<float> final_state = state;
        std::fill(state.begin(), state.end(), 0.0f);
        for (int64_t at = 0, step = 1; at < n; at += step, ++step) {
            const int64_t m = std::min(step, n - at);
            backend_.causal_conv_silu(x.data() + at * n_ch, m, kv, state.data(), parts.data() + at * n_ch);
        }
        QCOMPARE(parts, whole);
        QCOMPARE(state, final_state);
        // Token 0 of channel c: its own input times the kernel's last tap, through SiLU.
        const float pre = x[5] * kernel[5 * width + width - 1];
        QVERIFY(std::fabs(whole[5] - pre / (1.0f + std::exp(-pre))) < 1e-6f);
    }
};

QTEST_GUILESS_MAIN(TestDeltaRule)
#include "test_delta_rule.moc"
