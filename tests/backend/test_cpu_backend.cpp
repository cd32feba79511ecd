// The CPU backend as the model uses it: its SIMD path against its scalar path
// (CpuBackendOptions::isa), through the thread pool's chunking, and the same bits for
// any thread count.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/activations.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/fp16.h"
#include "engine/common/ggml_expf.h"
#include "engine/quant/quant.h"
#include "random_rows.h"

using namespace lr;

namespace {

struct Weights {
    std::vector<uint8_t> bytes;
    WeightView view;
};

Weights random_weights(DType type, int64_t n_rows, int64_t n_cols, uint64_t seed) {
    Weights w;
    test::Rng rng(seed);
    const size_t rb = row_bytes(type, size_t(n_cols));
    w.bytes.resize(rb * size_t(n_rows));
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        for (float & v : row) v = rng.normal(0.05f);
        quant::quantize_row(type, row.data(), w.bytes.data() + size_t(r) * rb, size_t(n_cols));
    }
    w.view = {.type = type, .n_cols = n_cols, .n_rows = n_rows, .data = w.bytes.data()};
    return w;
}

std::vector<float> matmul(CpuBackend & b, const Weights & w, const std::vector<float> & x, int64_t n_tokens) {
    std::vector<float> y(size_t(w.view.n_rows * n_tokens), NAN);
    b.matmul(w.view, x.data(), n_tokens, y.data());
    return y;
}

}  // namespace

class TestCpuBackend : public QObject {
    Q_OBJECT
private slots:
    void picksAnIsa() {
        CpuBackend best;
        QVERIFY(best.isa() != CpuIsa::best);
        QVERIFY(QString::fromStdString(best.name()).contains(QString::fromLatin1(cpu_isa_name(best.isa()).data())));
        CpuBackend scalar({.n_threads = 1, .isa = CpuIsa::scalar});
        QCOMPARE(scalar.isa(), CpuIsa::scalar);
        QCOMPARE(scalar.n_threads(), 1);
        for (CpuIsa isa : {CpuIsa::best, CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512}) QCOMPARE(cpu_isa_from_name(cpu_isa_name(isa)), isa);
        QVERIFY(!cpu_isa_from_name("sse2"));
    }

    void matmulMatchesScalarPath_data() {
        QTest::addColumn<QString>("type");
        for (const char * t :
             {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}) {
            QTest::newRow(t) << QString(t);
        }
    }
    void matmulMatchesScalarPath() {
        QFETCH(QString, type);
        const DType t = *dtype_from_name(type.toStdString());
        if (detect_cpu_isa() == CpuIsa::scalar) QSKIP("no SIMD ISA here");
        CpuBackend simd({.n_threads = 3}), ref({.n_threads = 2, .isa = CpuIsa::scalar}), single({.n_threads = 1});
        const int64_t n_cols = dtype_traits(t).block_elems == 256 ? 512 : 320;
        const Weights w = random_weights(t, 101, n_cols, 11);
        test::Rng rng(3);
        for (int64_t n_tokens : {1, 7}) {
            const std::vector<float> x = rng.activations(size_t(n_cols * n_tokens));
            const std::vector<float> a = matmul(ref, w, x, n_tokens), b = matmul(simd, w, x, n_tokens);
            double scale = 0;
            for (float v : a) scale = std::max(scale, double(std::fabs(v)));
            for (size_t i = 0; i < a.size(); ++i) {
                QVERIFY2(std::fabs(double(a[i]) - b[i]) <= 1e-5 * scale + 1e-30,
                         qPrintable(QString("output %1: %2 vs %3").arg(i).arg(double(a[i])).arg(double(b[i]))));
            }
            // Rows are computed in chunks that depend on the thread count; the bits do not.
            QVERIFY(matmul(single, w, x, n_tokens) == b);
        }
    }

    void elementwiseOpsMatch() {
        CpuBackend simd({.n_threads = 2}), ref({.n_threads = 1, .isa = CpuIsa::scalar});
        test::Rng rng(9);
        const int64_t n = 5000, rows = 9, cols = n / 10 * 2;
        std::vector<float> x = rng.activations(size_t(rows * cols)), norm(size_t(cols), 1.5f);
        const WeightView nw{.type = DType::F32, .n_cols = cols, .n_rows = 1, .data = norm.data()};
        std::vector<float> a(x.size()), b(x.size());
        simd.rms_norm(x.data(), nw, 1e-5f, rows, a.data());
        ref.rms_norm(x.data(), nw, 1e-5f, rows, b.data());
        QVERIFY(a == b);
        std::vector<float> g = rng.activations(size_t(n)), u = rng.activations(size_t(n)), sa(static_cast<size_t>(n)),
                           sb(static_cast<size_t>(n));
        simd.swiglu(g.data(), u.data(), 29, n / 29, sa.data());  // 172 columns: 10 vectors of 16 and a tail
        ref.swiglu(g.data(), u.data(), 29, n / 29, sb.data());
        QVERIFY(std::memcmp(sa.data(), sb.data(), size_t(n / 29 * 29) * sizeof(float)) == 0);
        std::vector<int32_t> pos = {0, 7, 300};
        std::vector<float> qa = rng.activations(3 * 4 * 64), qb = qa;
        const RopeParams rp{.n_rot = 64, .head_dim = 64};
        simd.rope(qa.data(), 3, 4, pos.data(), rp);
        ref.rope(qb.data(), 3, 4, pos.data(), rp);
        QVERIFY(qa == qb);
        std::vector<float> ga = rng.activations(size_t(n), 4.0f), ya(static_cast<size_t>(n)), yb(static_cast<size_t>(n));
        ga[3] = -10.0f, ga[4] = 10.0f, ga[5] = -11.0f, ga[6] = 12.5f, ga[7] = 0.0f;
        simd.geglu(ga.data(), u.data(), n, ya.data());
        ref.geglu(ga.data(), u.data(), n, yb.data());
        QVERIFY(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
    }

    // GELU as ggml's CPU computes it: the tanh formula at the f16 value of the gate, rounded
    // to f16; 0 at or below -10, the gate at or above 10. The AVX2 gather gives the same bits.
    // SiLU's exp is ggml_expf for the whole vectors of 16 of a row and expf for the rest, in
    // both kernel sets (the same bits), over the whole float range: 2^n leaving the normal
    // range on either side, overflow, underflow, infinities and signed zeros.
    void swigluTakesGgmlExpfPerVector() {
        test::Rng rng(17);
        const int64_t n_rows = 3, n_cols = 172;
        std::vector<float> g = rng.activations(size_t(n_rows * n_cols), 30.0f), u = rng.activations(size_t(n_rows * n_cols));
        const float special[] = {0.0f,   -0.0f,   87.0f,  -87.0f,  88.5f,  -88.5f,  95.0f,    -95.0f,    103.0f,  -103.0f,
                                 130.0f, -130.0f, 140.0f, -140.0f, 1e-30f, -1e-30f, INFINITY, -INFINITY, 3.0e38f, -3.0e38f};
        for (size_t i = 0; i < std::size(special); ++i) g[i * 9] = special[i];
        for (CpuIsa isa : {CpuIsa::scalar, CpuIsa::best}) {
            CpuBackend b({.n_threads = 2, .isa = isa});
            std::vector<float> out(g.size());
            b.swiglu(g.data(), u.data(), n_rows, n_cols, out.data());
            for (int64_t r = 0; r < n_rows; ++r) {
                for (int64_t c = 0; c < n_cols; ++c) {
                    const size_t i = size_t(r * n_cols + c);
                    const float e = c < 160 ? ggml_expf(-g[i]) : std::exp(-g[i]);
                    const float want = g[i] / (1.0f + e) * u[i];
                    QVERIFY2(std::memcmp(&out[i], &want, sizeof(float)) == 0,
                             qPrintable(
                                 QString("isa %1, g %2: %3 vs %4").arg(int(isa)).arg(double(g[i])).arg(double(out[i])).arg(double(want))));
                }
            }
        }
        // ggml_expf is an exp: within 2 ulp of libm's over the range where both are normal.
        for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
            const float a = ggml_expf(x), e = std::exp(x);
            QVERIFY2(std::fabs(a - e) <= 2.0f * (std::nextafter(e, INFINITY) - e), qPrintable(QString::number(double(x))));
        }
    }

    void gegluIsGgmlsTable() {
        CpuBackend b({.n_threads = 2});
        std::vector<float> gate, up;
        for (int i = -1300; i <= 1300; ++i) {
            gate.push_back(float(i) * 0.0091f);  // -11.8 .. 11.8, through both clamps
            up.push_back(i % 3 == 0 ? 1.0f : -0.5f);
        }
        std::vector<float> out(gate.size());
        b.geglu(gate.data(), up.data(), int64_t(gate.size()), out.data());
        for (size_t i = 0; i < gate.size(); ++i) {
            const float g = gate[i];
            float want;
            if (g <= -10.0f) {
                want = 0.0f;
            } else if (g >= 10.0f) {
                want = g * up[i];
            } else {
                const double x = fp16_to_fp32(fp32_to_fp16(g));
                const double gelu = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)));
                // The float formula and the double one may round to neighbouring halves; in the
                // far negative tail the float 1 + tanh cancels (ggml's values there are ~1e-7).
                const double h = fp16_to_fp32(fp32_to_fp16(float(gelu)));
                QVERIFY2(std::fabs(double(out[i] / up[i]) - h) <= std::fabs(h) * 1e-3 + 3e-7,
                         qPrintable(QString("gelu(%1) = %2, want %3").arg(double(g)).arg(double(out[i] / up[i])).arg(h)));
                continue;
            }
            QCOMPARE(out[i], want);
        }
        // The table is ggml's: f16(gelu(f16 value)).
        const float * table = cpu::gelu_table();
        QCOMPARE(table[fp32_to_fp16(1.0f)], fp16_to_fp32(fp32_to_fp16(cpu::gelu_tanh(1.0f))));
        QCOMPARE(table[fp32_to_fp16(0.0f)], 0.0f);
    }

    void scalesAndSoftcap() {
        CpuBackend b({.n_threads = 2});
        std::vector<float> x{1.0f, -2.0f, 3.0f, 0.5f, -0.25f, 8.0f};
        b.scale(x.data(), 6, 0.5f);
        QCOMPARE(x, (std::vector<float>{0.5f, -1.0f, 1.5f, 0.25f, -0.125f, 4.0f}));
        const std::vector<float> per_token{2.0f, -1.0f};
        b.scale_tokens(x.data(), 2, 3, per_token.data());
        QCOMPARE(x, (std::vector<float>{1.0f, -2.0f, 3.0f, -0.25f, 0.125f, -4.0f}));
        std::vector<float> logits{0.0f, 30.0f, -300.0f, 1.0f};
        b.softcap(logits.data(), 4, 30.0f);
        QCOMPARE(logits[0], 0.0f);
        QVERIFY(std::fabs(logits[1] - 30.0f * std::tanh(1.0f)) < 1e-5f);
        QVERIFY(std::fabs(logits[2] + 30.0f) < 1e-4f);
        QVERIFY(std::fabs(logits[3] - 30.0f * std::tanh(1.0f / 30.0f)) < 1e-6f);
    }

    // Rope against the formulas in double: linear scaling, frequency factors, attn_factor,
    // and YaRN's blend (ggml's rope_yarn: extrapolated pairs below corr_low, interpolated
    // above corr_high, a ramp between; magnitude attn_factor * (1 + 0.1 ln(1 / freq_scale))).
    void ropeMatchesFormula_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<float>("freq_scale");
        QTest::addColumn<float>("ext_factor");
        QTest::addColumn<float>("attn_factor");
        QTest::addColumn<bool>("factors");
        QTest::newRow("plain-normal") << 0 << 1.0f << 0.0f << 1.0f << false;
        QTest::newRow("linear-neox") << 1 << 0.125f << 0.0f << 1.0f << false;
        QTest::newRow("longrope-neox") << 1 << 1.0f << 0.0f << 1.118034f << true;
        QTest::newRow("yarn-normal") << 0 << 0.0625f << 1.0f << 0.78289f << false;
        QTest::newRow("yarn-neox-factors") << 1 << 0.03125f << 1.0f << 1.0f << true;
    }
    void ropeMatchesFormula() {
        QFETCH(int, mode);
        QFETCH(float, freq_scale);
        QFETCH(float, ext_factor);
        QFETCH(float, attn_factor);
        QFETCH(bool, factors);
        const int32_t d = 64, n_rot = 48, n_heads = 3;
        std::vector<float> ff(n_rot / 2);
        for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.5f * float(i);
        const RopeParams p{.mode = mode ? RopeMode::neox : RopeMode::normal,
                           .n_rot = n_rot,
                           .head_dim = d,
                           .freq_base = 10000.0f,
                           .freq_scale = freq_scale,
                           .freq_factors = factors ? ff.data() : nullptr,
                           .ext_factor = ext_factor,
                           .attn_factor = attn_factor,
                           .corr_low = 5.0f,
                           .corr_high = 17.0f};
        const std::vector<int32_t> pos{0, 3, 77, 200};
        test::Rng rng(17);
        const std::vector<float> x = rng.activations(pos.size() * n_heads * d);
        std::vector<float> y = x;
        for (CpuIsa isa : {CpuIsa::scalar, CpuIsa::best}) {
            CpuBackend b({.n_threads = 2, .isa = isa});
            y = x;
            b.rope(y.data(), int64_t(pos.size()), n_heads, pos.data(), p);
            const double mscale = double(attn_factor) * (ext_factor != 0.0f ? 1.0 + 0.1 * std::log(1.0 / freq_scale) : 1.0);
            for (size_t t = 0; t < pos.size(); ++t) {
                for (int32_t h = 0; h < n_heads; ++h) {
                    const size_t at = (t * n_heads + size_t(h)) * d;
                    for (int32_t i = 0; i < n_rot / 2; ++i) {
                        const double extrap = pos[t] * std::pow(10000.0, -2.0 * i / n_rot) / (factors ? ff[size_t(i)] : 1.0);
                        const double interp = freq_scale * extrap;
                        const double ramp = 1.0 - std::clamp((i - 5.0) / 12.0, 0.0, 1.0);
                        const double mix = ramp * ext_factor;
                        const double angle = interp * (1.0 - mix) + extrap * mix;
                        const int32_t a = mode ? i : 2 * i, bb = mode ? i + n_rot / 2 : 2 * i + 1;
                        const double x0 = x[at + size_t(a)], x1 = x[at + size_t(bb)];
                        const double want0 = (x0 * std::cos(angle) - x1 * std::sin(angle)) * mscale;
                        const double want1 = (x0 * std::sin(angle) + x1 * std::cos(angle)) * mscale;
                        // The float angle (repeated products, as ggml) drifts by ~i ulp of theta.
                        const double tol = (std::fabs(x0) + std::fabs(x1)) * (extrap * (i + 2) * 1.2e-7 + 1e-6);
                        QVERIFY2(std::fabs(y[at + size_t(a)] - want0) <= tol && std::fabs(y[at + size_t(bb)] - want1) <= tol,
                                 qPrintable(QString("pos %1 pair %2: %3 %4 vs %5 %6")
                                                .arg(pos[t])
                                                .arg(i)
                                                .arg(double(y[at + size_t(a)]))
                                                .arg(double(y[at + size_t(bb)]))
                                                .arg(want0)
                                                .arg(want1)));
                    }
                    for (int32_t k = n_rot; k < d; ++k) QCOMPARE(y[at + size_t(k)], x[at + size_t(k)]);  // not rotated
                }
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuBackend)
#include "test_cpu_backend.moc"
