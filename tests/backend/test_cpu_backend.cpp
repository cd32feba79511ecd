// The CPU backend as the model uses it: its SIMD path against its scalar path
// (CpuBackendOptions::isa), through the thread pool's chunking, and the same bits for
// any thread count.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
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
        simd.swiglu(g.data(), u.data(), n, sa.data());
        ref.swiglu(g.data(), u.data(), n, sb.data());
        QVERIFY(sa == sb);
        std::vector<int32_t> pos = {0, 7, 300};
        std::vector<float> qa = rng.activations(3 * 4 * 64), qb = qa;
        const RopeParams rp{.n_rot = 64, .head_dim = 64};
        simd.rope(qa.data(), 3, 4, pos.data(), rp);
        ref.rope(qb.data(), 3, 4, pos.data(), rp);
        QVERIFY(qa == qb);
    }
};

QTEST_GUILESS_MAIN(TestCpuBackend)
#include "test_cpu_backend.moc"
