// Every SIMD matmul kernel against the scalar one (quant::vec_dot, float_dot.h), for every
// weight type, at sizes that are not multiples of the tiles, the SIMD width or (where the
// format allows) an even number of blocks:
//   - activations convert to exactly the bytes quant::quantize_activations writes;
//   - F32/F16/BF16 results are bit-identical;
//   - quantized results are within a float-accumulation bound of the exact value (the
//     integer sums are exact; only the order of the float additions differs);
//   - the AVX-512 kernels' decode equals AVX2's bit for bit (their integer sums are the
//     same and their float operations too), and so does their prefill (rows in the lanes of
//     a register on both).

#include <QtTest>

#include <cstring>
#include <vector>

#include "../quant/quant_test_util.h"
#include "engine/backend/cpu/aligned_buffer.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/common/dtype.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "random_rows.h"

using namespace lr;
using namespace lr::cpu;

namespace {

struct Problem {
    DType type;
    int64_t n_cols, n_rows, n_tokens;
    std::vector<uint8_t> w;  // [n_rows][row_bytes]
    std::vector<float> x;    // [n_tokens][n_cols]
};

Problem make_problem(DType type, int64_t n_cols, int64_t n_rows, int64_t n_tokens, uint64_t seed) {
    Problem p{type, n_cols, n_rows, n_tokens, {}, {}};
    test::Rng rng(seed);
    const size_t rb = row_bytes(type, size_t(n_cols));
    p.w.resize(rb * size_t(n_rows));
    for (int64_t r = 0; r < n_rows; ++r) {
        if (!quant::can_quantize(type)) {
            // Types that need an importance matrix: random blocks (any bit pattern is valid).
            const std::vector<uint8_t> row = test::random_blocks(type, size_t(n_cols), rng);
            std::memcpy(p.w.data() + size_t(r) * rb, row.data(), rb);
            continue;
        }
        std::vector<float> row(static_cast<size_t>(n_cols));
        for (float & v : row) v = rng.normal(0.05f);
        quant::quantize_row(type, row.data(), p.w.data() + size_t(r) * rb, size_t(n_cols));
    }
    p.x = rng.activations(size_t(n_cols * n_tokens));
    return p;
}

// y [n_tokens][n_rows] from one kernel, computing rows in uneven chunks.
std::vector<float> run(const MatmulKernel & k, const Problem & p) {
    const size_t arb = k.act_row_bytes(p.n_cols);
    AlignedBuffer act, scratch;
    uint8_t * a = act.reserve(arb * size_t(p.n_tokens));
    for (int64_t t = 0; t < p.n_tokens; ++t) k.convert_act(p.x.data() + t * p.n_cols, p.n_cols, a + size_t(t) * arb);
    std::vector<float> y(size_t(p.n_rows * p.n_tokens), NAN);
    const MatmulJob job{.w = p.w.data(),
                        .w_row_bytes = row_bytes(p.type, size_t(p.n_cols)),
                        .n_cols = p.n_cols,
                        .act = a,
                        .act_row_bytes = arb,
                        .n_tokens = p.n_tokens,
                        .y = y.data(),
                        .y_stride = p.n_rows};
    uint8_t * s = scratch.reserve(std::max<size_t>(64, k.scratch_bytes(p.n_cols, p.n_rows, p.n_tokens)));
    // Chunks of 1, 2, then 5 rows: odd starts and ends for the tiles.
    const int64_t cuts[] = {1, 3, 8};
    int64_t r0 = 0;
    for (int64_t c : cuts) {
        if (c >= p.n_rows) break;
        if (c > r0) {
            k.rows(job, r0, c, s);
            r0 = c;
        }
    }
    k.rows(job, r0, p.n_rows, s);
    return y;
}

// sum_i |w_i * a_i| in double, with the activations as the kernel sees them (quantized).
std::vector<double> abs_products(const Problem & p, std::vector<double> * exact) {
    const DType at = quant::vec_dot_type(p.type);
    std::vector<float> wd(size_t(p.n_cols)), ad(size_t(p.n_cols));
    std::vector<uint8_t> aq(row_bytes(at, size_t(p.n_cols)));
    std::vector<double> l1(size_t(p.n_rows * p.n_tokens));
    exact->assign(l1.size(), 0.0);
    const size_t rb = row_bytes(p.type, size_t(p.n_cols));
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        quant::quantize_activations(at, p.x.data() + t * p.n_cols, aq.data(), size_t(p.n_cols));
        quant::dequantize_row(at, aq.data(), ad.data(), size_t(p.n_cols));
        for (int64_t r = 0; r < p.n_rows; ++r) {
            quant::dequantize_row(p.type, p.w.data() + size_t(r) * rb, wd.data(), size_t(p.n_cols));
            double s = 0, e = 0;
            for (int64_t i = 0; i < p.n_cols; ++i) {
                s += std::fabs(double(wd[size_t(i)]) * ad[size_t(i)]);
                e += double(wd[size_t(i)]) * ad[size_t(i)];
            }
            if (at == DType::Q8_1) {
                // Q4_1/Q5_1 take the activation sum from Q8_1's s = fp16(d * sum), not d * sum.
                const auto * blocks = reinterpret_cast<const quant::block_q8_1 *>(aq.data());
                const uint8_t * wrow = p.w.data() + size_t(r) * rb;
                const size_t wb = rb / size_t(p.n_cols / 32);
                for (int64_t b = 0; b < p.n_cols / 32; ++b) {
                    uint16_t mh;
                    std::memcpy(&mh, wrow + size_t(b) * wb + 2, 2);  // block_q4_1/q5_1: d, then m
                    int sum = 0;
                    for (int8_t q : blocks[b].qs) sum += q;
                    const double m = fp16_to_fp32(mh);
                    e += m * (double(fp16_to_fp32(blocks[b].s)) - double(fp16_to_fp32(blocks[b].d)) * sum);
                    s += std::fabs(m * fp16_to_fp32(blocks[b].s));
                }
            }
            l1[size_t(t * p.n_rows + r)] = s;
            (*exact)[size_t(t * p.n_rows + r)] = e;
        }
    }
    return l1;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

const char * const kTypes[] = {"F32",     "F16",   "BF16",    "Q8_0",   "Q4_0",  "Q4_1",  "Q5_0",  "Q5_1",
                               "IQ4_NL",  "MXFP4", "Q2_K",    "Q3_K",   "Q4_K",  "Q5_K",  "Q6_K",  "IQ4_XS",
                               "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ2_0"};

// How many float terms a dot product of n_cols sums: one per block, except IQ4_XS, whose
// scalar reference scales each 32-element sub-block in float (as ggml's generic code).
double float_terms(DType t, int64_t n_cols) { return double(n_cols) / double(t == DType::IQ4_XS ? 32 : dtype_traits(t).block_elems); }

}  // namespace

class TestCpuMatmul : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        if (!runs_avx2(detect_cpu_isa())) QSKIP("this CPU has no SIMD ISA with kernels: nothing to compare");
    }

    void activationsConvertExactly_data() {
        QTest::addColumn<QString>("type");
        for (const char * t : kTypes) QTest::newRow(t) << QString(t);
    }
    void activationsConvertExactly() {
        QFETCH(QString, type);
        const DType wt = *dtype_from_name(type.toStdString());
        const MatmulKernel * k = avx2_matmul_kernel(wt);
        QVERIFY(k != nullptr);
        const DType at = quant::vec_dot_type(wt);
        const int64_t block = is_float_type(wt) ? 1 : dtype_traits(wt).block_elems;
        test::Rng rng(7);
        for (int64_t n_blocks : {1, 3, 8, 9}) {
            const int64_t n = block == 1 ? 8 * n_blocks + 3 : block * n_blocks;
            for (int trial = 0; trial < 20; ++trial) {
                std::vector<float> x = rng.activations(size_t(n), trial % 2 ? 1e-3f : 3.0f);
                if (trial == 0) std::fill(x.begin(), x.end(), 0.0f);
                std::vector<uint8_t> ref(row_bytes(at, size_t(n))), got(ref.size());
                quant::quantize_activations(at, x.data(), ref.data(), size_t(n));
                AlignedBuffer act;
                k->convert_act(x.data(), n, act.reserve(k->act_row_bytes(n)));
                k->act_to_standard(act.data(), n, got.data());
                QVERIFY2(ref == got, qPrintable(QString("n %1 trial %2").arg(n).arg(trial)));
            }
        }
    }

    // Decode (up to 8 tokens) and prefill (more) of every SIMD kernel.
    void matchesScalarKernel_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<bool>("avx512");
        for (const char * t : kTypes) {
            QTest::newRow(qPrintable(QString("avx2 %1").arg(t))) << QString(t) << false;
            if (avx512_matmul_kernel(*dtype_from_name(t))) QTest::newRow(qPrintable(QString("avx512 %1").arg(t))) << QString(t) << true;
        }
    }
    void matchesScalarKernel() {
        QFETCH(QString, type);
        QFETCH(bool, avx512);
        if (avx512 && detect_cpu_isa() != CpuIsa::avx512) QSKIP("this CPU has no AVX-512 VNNI: its kernels cannot run here");
        const DType wt = *dtype_from_name(type.toStdString());
        const MatmulKernel * simd = avx512 ? avx512_matmul_kernel(wt) : avx2_matmul_kernel(wt);
        const MatmulKernel * ref = scalar_matmul_kernel(wt);
        QVERIFY(simd && ref);
        const int64_t block = dtype_traits(wt).block_elems;
        std::vector<int64_t> col_counts;
        if (is_float_type(wt)) {
            col_counts = {5, 16, 40, 64, 100, 192, 528, 1040};  // gemm needs % 16; gemv tails
        } else if (block == 32) {
            col_counts = {32, 96, 224, 512, 1056};  // 1, 3, 7, 16, 33 blocks
        } else {
            col_counts = {256, 768, 1280};
        }
        uint64_t seed = 1;
        for (int64_t n_cols : col_counts) {
            // Rows and tokens leave every remainder of the tiles (2 x 3 ... 4 x 6, 16 x 8).
            for (int64_t n_rows : {1, 3, 6, 17}) {
                for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 17, 35}) {
                    const Problem p = make_problem(wt, n_cols, n_rows, n_tokens, seed++);
                    const std::vector<float> a = run(*ref, p), b = run(*simd, p);
                    const QString where = QString("cols %1 rows %2 tokens %3").arg(n_cols).arg(n_rows).arg(n_tokens);
                    if (is_float_type(wt)) {
                        for (size_t i = 0; i < a.size(); ++i) {
                            QVERIFY2(std::memcmp(&a[i], &b[i], sizeof(float)) == 0,
                                     qPrintable(
                                         where +
                                         QString(" output %1: %2 vs %3").arg(i).arg(double(a[i]), 0, 'g', 9).arg(double(b[i]), 0, 'g', 9)));
                        }
                        continue;
                    }
                    std::vector<double> exact;
                    const std::vector<double> l1 = abs_products(p, &exact);
                    const double n_blocks = float_terms(wt, n_cols);
                    for (size_t i = 0; i < a.size(); ++i) {
                        // Each side rounds its float sum of n_blocks terms: a few ulp of the
                        // terms' magnitude per term, at worst.
                        const double bound = 4.0 * 0x1p-24 * (n_blocks + 4.0) * l1[i] + 1e-30;
                        QVERIFY2(std::fabs(a[i] - exact[i]) <= bound,
                                 qPrintable(where + QString(" scalar %1 exact %2").arg(double(a[i])).arg(exact[i])));
                        QVERIFY2(std::fabs(b[i] - exact[i]) <= bound,
                                 qPrintable(where + QString(" output %1: simd %2 exact %3 (scalar %4, bound %5)")
                                                        .arg(i)
                                                        .arg(double(b[i]), 0, 'g', 9)
                                                        .arg(exact[i], 0, 'g', 9)
                                                        .arg(double(a[i]), 0, 'g', 9)
                                                        .arg(bound)));
                    }
                }
            }
        }
    }

    // BF16 follows vdpbf16ps, which reads denormals as zeros and flushes denormal sums: rows
    // of tiny values (denormal weights and activations, products and sums that underflow)
    // give every kernel the scalar kernel's bits, decode and prefill.
    void bf16FlushesDenormalsLikeTheScalarKernel() {
        const MatmulKernel * ref = scalar_matmul_kernel(DType::BF16);
        std::vector<const MatmulKernel *> simd = {avx2_matmul_kernel(DType::BF16)};
        if (detect_cpu_isa() == CpuIsa::avx512) simd.push_back(avx512_matmul_kernel(DType::BF16));
        uint64_t seed = 900;
        // Weights near 2^-120, a third of them denormal; activations near 2^30 (denormal
        // weights give products of 2^-100 that count only if read), then near 2^-20
        // (products and sums below 2^-126).
        for (float x_scale : {0x1p30f, 0x1p-20f}) {
            for (int64_t n_tokens : {1, 3, 8}) {
                Problem p = make_problem(DType::BF16, 128, 9, n_tokens, seed++);
                auto * w = reinterpret_cast<uint16_t *>(p.w.data());
                for (size_t i = 0; i < p.w.size() / 2; ++i) w[i] = uint16_t((w[i] & 0x807f) | (i % 3 == 0 ? 0 : 0x0380));
                for (float & x : p.x) x *= x_scale;
                const std::vector<float> a = run(*ref, p);
                bool any_nonzero = false;
                for (float v : a) any_nonzero = any_nonzero || v != 0.0f;
                QVERIFY(any_nonzero || x_scale < 1.0f);
                for (const MatmulKernel * k : simd) {
                    QVERIFY(k);
                    const std::vector<float> b = run(*k, p);
                    QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0,
                             qPrintable(QString("scale %1 tokens %2").arg(double(x_scale)).arg(n_tokens)));
                }
            }
        }
    }

    // A decode step of a batch of sequences: each token's result must be bit for bit the
    // one it gets alone, so a reply does not depend on what else runs beside it. (The float
    // kernels take gemm's order for several tokens, as the scalar ones do.)
    void batchedTokensGetTheirOwnResults_data() {
        QTest::addColumn<QString>("type");
        for (const char * t : kTypes) {
            if (!is_float_type(*dtype_from_name(t))) QTest::newRow(t) << QString(t);
        }
    }
    void batchedTokensGetTheirOwnResults() {
        QFETCH(QString, type);
        const DType wt = *dtype_from_name(type.toStdString());
        const MatmulKernel * simd = avx2_matmul_kernel(wt);
        QVERIFY(simd);
        const int64_t block = dtype_traits(wt).block_elems;
        uint64_t seed = 100;
        for (int64_t n_cols : {block, 7 * block}) {
            for (int64_t n_tokens : {2, 3, 4, 5, 7, 8}) {
                const Problem p = make_problem(wt, n_cols, 5, n_tokens, seed++);
                const std::vector<float> batched = run(*simd, p);
                for (int64_t t = 0; t < n_tokens; ++t) {
                    Problem one = p;
                    one.n_tokens = 1;
                    one.x.assign(p.x.begin() + t * n_cols, p.x.begin() + (t + 1) * n_cols);
                    const std::vector<float> alone = run(*simd, one);
                    QVERIFY2(std::memcmp(alone.data(), batched.data() + t * p.n_rows, alone.size() * sizeof(float)) == 0,
                             qPrintable(
                                 QString("cols %1 tokens %2: token %3 differs from its result alone").arg(n_cols).arg(n_tokens).arg(t)));
                }
            }
        }
    }

    // Decode and prefill of the quantized types.
    void avx512EqualsAvx2_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<bool>("prefill");
        for (const char * t : kTypes) {
            const DType type = *dtype_from_name(t);
            if (!avx512_matmul_kernel(type)) continue;
            QTest::newRow(qPrintable(QString("decode %1").arg(t))) << QString(t) << false;
            // The quantized types' prefill: rows in the lanes of a register on both.
            if (!is_float_type(type)) QTest::newRow(qPrintable(QString("prefill %1").arg(t))) << QString(t) << true;
        }
    }
    void avx512EqualsAvx2() {
        QFETCH(QString, type);
        QFETCH(bool, prefill);
        if (detect_cpu_isa() != CpuIsa::avx512) QSKIP("this CPU has no AVX-512 VNNI: its kernels cannot run here");
        const DType wt = *dtype_from_name(type.toStdString());
        const MatmulKernel * avx512 = avx512_matmul_kernel(wt);
        const MatmulKernel * avx2 = avx2_matmul_kernel(wt);
        QVERIFY(avx512 && avx2 && avx512 != avx2);
        uint64_t seed = 500;
        const int64_t block = dtype_traits(wt).block_elems;
        const std::vector<int64_t> token_counts = prefill ? std::vector<int64_t>{9, 12, 17, 35} : std::vector<int64_t>{1, 2, 4, 5, 8};
        for (int64_t n_cols : {block, 3 * block, 7 * block, 33 * block}) {
            for (int64_t n_tokens : token_counts) {
                const Problem p = make_problem(wt, n_cols, 17, n_tokens, seed++);
                const std::vector<float> a = run(*avx2, p), b = run(*avx512, p);
                QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0,
                         qPrintable(QString("cols %1 tokens %2").arg(n_cols).arg(n_tokens)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuMatmul)
#include "test_cpu_matmul.moc"
