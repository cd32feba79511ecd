// Every CUDA op against the CPU's scalar reference (the CPU backend with CpuIsa::scalar,
// quant::dequantize_row, kv_encode_row), with an error bound per op and odd sizes:
//   get_rows, kv_write          bit-identical;
//   add, add_bias               bit-identical;
//   rms_norm, rope, swiglu      within a few ulp (double sums in another order, expf, cos/sin);
//   matmul                      within the float accumulation bound of an exact reference
//                               (double) of what the kernel computes: decode (<= 8 tokens)
//                               multiplies the dequantized weights with x (rounded to f16/bf16
//                               for F16/BF16 weights), prefill with both rounded to f16
//                               (tensor cores); and loosely against the CPU, which quantizes x
//                               to q8 for quantized weights;
//   moe_ffn                     against the CPU op, within the matmul's bounds carried through
//                               the activation (loose for quantized experts: the CPU's q8 x);
//   attention                   within one f16 step of the weights (all-f16 caches round them),
//                               with mixed codecs, holes, GQA, decode and prefill, the mass;
//   l2_norm, copy_rows          bit-identical;
//   sigmoid_mul, causal conv    within a few ulp (expf; the conv's SiLU takes ggml_expf, the
//                               CPU's bits, for whole vectors of 16), the conv state exact;
//   gated_delta_rule            within 1e-5 of the largest value (outputs, state): expf's 2 ulp
//                               on the decays, moved at random on the host, change outputs by
//                               <= 7.5e-8 and a state of 1.2 by <= 9.5e-7 over 512 + 64 tokens;
//   streamed weights            the same results as weights in VRAM;
//   copies                      from another thread, after the ops queued before them.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <thread>

#include "delta_net_cases.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"
#include "gpu_test_support.h"
#include "random_rows.h"

using namespace lr;
using namespace lr::test;

namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float's unit roundoff

struct Matrix {
    DType type;
    int64_t n_rows, n_cols;
    std::vector<uint8_t> bytes;  // n_rows rows of row_bytes(type, n_cols)
    std::vector<float> values;   // the dequantized values, [n_rows][n_cols]
};

Matrix random_matrix(DType type, int64_t n_rows, int64_t n_cols, uint64_t seed) {
    Matrix m{type, n_rows, n_cols, {}, {}};
    Rng rng(seed);
    const size_t rb = row_bytes(type, size_t(n_cols));
    m.bytes.resize(rb * size_t(n_rows));
    m.values.resize(size_t(n_rows * n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        const std::vector<float> x = rng.activations(size_t(n_cols), 0.5f);
        quant::quantize_row(type, x.data(), m.bytes.data() + size_t(r) * rb, size_t(n_cols));
        quant::dequantize_row(type, m.bytes.data() + size_t(r) * rb, m.values.data() + size_t(r * n_cols), size_t(n_cols));
    }
    return m;
}

float round_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }
float round_bf16(float x) { return bf16_to_fp32(fp32_to_bf16(x)); }

// What the CUDA matmul computes, exactly (double), and the sum of |terms| for its bound.
void reference_matmul(const Matrix & w, const std::vector<float> & x, int64_t n_tokens, std::vector<double> & y,
                      std::vector<double> & abs_sum) {
    const bool gemm = n_tokens > 8;
    y.assign(size_t(n_tokens * w.n_rows), 0.0);
    abs_sum.assign(y.size(), 0.0);
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < w.n_rows; ++r) {
            double s = 0, a = 0;
            for (int64_t c = 0; c < w.n_cols; ++c) {
                float wv = w.values[size_t(r * w.n_cols + c)];
                float xv = x[size_t(t * w.n_cols + c)];
                if (w.type == DType::F16) {
                    xv = round_f16(xv);
                } else if (w.type == DType::BF16) {
                    xv = round_bf16(xv);
                } else if (w.type != DType::F32 && gemm) {
                    wv = round_f16(wv);
                    xv = round_f16(xv);
                }
                s += double(wv) * double(xv);
                a += std::fabs(double(wv) * double(xv));
            }
            y[size_t(t * w.n_rows + r)] = s;
            abs_sum[size_t(t * w.n_rows + r)] = a;
        }
    }
}

// A paged KV world (as test_cpu_attention): blocks with per-block codecs, holes and
// per-head positions, in host memory; the device copy of each block.
struct KvWorld {
    KvBlockShape shape;
    std::vector<std::vector<uint8_t>> host;
    std::vector<DeviceBuffer> device;
    std::vector<KvBlockRef> host_refs, device_refs;
    float max_abs_v = 0;

    PagedKvView view(bool on_device, float * mass, std::span<const uint32_t> write_slots = {}) const {
        PagedKvView v;
        v.shape = shape;
        v.blocks = on_device ? device_refs : host_refs;
        v.write_slots = write_slots;
        v.attn_mass = mass;
        return v;
    }
};

KvCodec codec_of(char c) {
    switch (c) {
        case 'f': return KvCodec::f32;
        case '8': return KvCodec::q8;
        case '4': return KvCodec::q4;
        default: return KvCodec::f16;
    }
}

// Holes (empty slots, positions differing per head) only before the last keep_last
// positions, where the ubatch's queries are.
KvWorld make_kv_world(Backend & dev, KvBlockShape shape, uint32_t n_blocks, const std::string & codecs, bool holes, int64_t keep_last,
                      uint64_t seed) {
    KvWorld w;
    w.shape = shape;
    Rng rng(seed);
    const uint32_t d = shape.head_dim, bt = shape.block_tokens;
    const int32_t n_pos = int32_t(bt * n_blocks);
    std::vector<float> row(d);
    for (uint32_t b = 0; b < n_blocks; ++b) {
        const KvCodec kc = codec_of(codecs[b % codecs.size()]);
        const KvCodec vc = codec_of(codecs[(b + 1) % codecs.size()]);
        const KvBlockLayout L{shape, kc, vc};
        std::vector<uint8_t> data(L.block_bytes(), uint8_t(0xAB));  // garbage where nothing is written
        auto * pos = reinterpret_cast<int32_t *>(data.data() + L.pos_offset());
        for (uint32_t g = 0; g < shape.n_head_kv; ++g) {
            for (uint32_t s = 0; s < bt; ++s) {
                const int32_t p = int32_t(b * bt + s);
                const bool empty = holes && rng.next_u64() % 7 == 0 && p < n_pos - int32_t(keep_last);
                pos[L.pos_index(g, s)] = empty ? kInvalidPos : p;
                if (empty) continue;
                for (float & v : row) v = rng.normal(1.0f);
                kv_encode_row(kc, row.data(), data.data() + L.k_row_offset(g, s), d);
                for (float & v : row) {
                    v = rng.normal(1.0f);
                    w.max_abs_v = std::max(w.max_abs_v, std::fabs(v) * 1.1f);
                }
                kv_encode_row(vc, row.data(), data.data() + L.v_row_offset(g, s), d);
            }
        }
        w.device.push_back(to_device(dev, data));
        w.host.push_back(std::move(data));
        w.host_refs.push_back({w.host.back().data(), kc, vc});
        w.device_refs.push_back({w.device.back().as<uint8_t>(), kc, vc});
    }
    return w;
}

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

}  // namespace

Q_DECLARE_METATYPE(DType)
Q_DECLARE_METATYPE(AttentionCase)

class TestCudaOps : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> dev_;
    CpuBackend ref_{{.n_threads = 2, .isa = CpuIsa::scalar}};
    bool cuda_ = false;
    bool gpu_numerics_ = false;  // the CUDA kernels' numerics: on a GPU, or emulated

private slots:
    void initTestCase() {
        LR_REQUIRE_DEVICE(dev_);
        cuda_ = dev_->kind() == BackendKind::cuda;
        gpu_numerics_ = gpu_numerics(*dev_);
        qInfo("device under test: %s", dev_->name().c_str());
    }

    void getRowsBitIdentical_data() {
        QTest::addColumn<DType>("type");
        QTest::addColumn<int>("n_cols");
        const DType floats[] = {DType::F32, DType::F16, DType::BF16};
        const DType legacy[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL};
        const DType kquants[] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
        for (DType t : floats) {
            for (int n : {37, 520}) QTest::addRow("%s-%d", dtype_name(t).data(), n) << t << n;
        }
        for (DType t : legacy) {
            for (int n : {96, 800}) QTest::addRow("%s-%d", dtype_name(t).data(), n) << t << n;
        }
        for (DType t : kquants) {
            for (int n : {256, 768}) QTest::addRow("%s-%d", dtype_name(t).data(), n) << t << n;
        }
    }
    void getRowsBitIdentical() {
        QFETCH(DType, type);
        QFETCH(int, n_cols);
        const Matrix m = random_matrix(type, 23, n_cols, 7);
        const WeightView w = prepare(*dev_, type, n_cols, m.n_rows, m.bytes);
        const std::vector<int32_t> ids = {22, 0, 5, 5, 17, 1, 22};
        DeviceBuffer out = to_device(*dev_, std::vector<float>(ids.size() * size_t(n_cols), NAN));
        dev_->get_rows(w, ids.data(), int64_t(ids.size()), out.as<float>());
        const std::vector<float> got = to_host<float>(*dev_, out.data(), ids.size() * size_t(n_cols));
        for (size_t i = 0; i < ids.size(); ++i) {
            QVERIFY2(std::memcmp(got.data() + i * size_t(n_cols), m.values.data() + size_t(ids[i]) * size_t(n_cols), size_t(n_cols) * 4) ==
                         0,
                     qPrintable(QString("row %1 (id %2)").arg(i).arg(ids[i])));
        }
    }

    void matmulWithinBound_data() {
        QTest::addColumn<DType>("type");
        QTest::addColumn<int>("n_rows");
        QTest::addColumn<int>("n_cols");
        QTest::addColumn<int>("n_tokens");
        const DType all[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                             DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL};
        for (DType t : all) {
            const int block = int(dtype_traits(t).block_elems);
            // Columns: below one 256-step, several steps plus a tail (legacy, floats), odd (floats).
            std::vector<int> cols = block == 256  ? std::vector<int>{256, 1024}
                                    : block == 32 ? std::vector<int>{96, 800}
                                                  : std::vector<int>{37, 544};
            for (int n_cols : cols) {
                for (int n_tokens : {1, 3, 8, 9, 40}) {
                    QTest::addRow("%s-%dx%d-t%d", dtype_name(t).data(), 67, n_cols, n_tokens) << t << 67 << n_cols << n_tokens;
                }
            }
        }
        QTest::addRow("Q4_K-wide-decode") << DType::Q4_K << 4099 << 4096 << 1;
        QTest::addRow("Q6_K-tall-prefill") << DType::Q6_K << 515 << 2048 << 64;
    }
    void matmulWithinBound() {
        QFETCH(DType, type);
        QFETCH(int, n_rows);
        QFETCH(int, n_cols);
        QFETCH(int, n_tokens);
        const Matrix m = random_matrix(type, n_rows, n_cols, uint64_t(n_rows * 31 + n_cols));
        Rng rng(uint64_t(n_tokens) + 99);
        const std::vector<float> x = rng.activations(size_t(n_tokens) * size_t(n_cols));
        const WeightView w = prepare(*dev_, type, n_cols, n_rows, m.bytes);
        DeviceBuffer xd = to_device(*dev_, x);
        DeviceBuffer yd = to_device(*dev_, std::vector<float>(size_t(n_tokens) * size_t(n_rows), NAN));
        dev_->matmul(w, xd.as<float>(), n_tokens, yd.as<float>());
        const std::vector<float> got = to_host<float>(*dev_, yd.data(), size_t(n_tokens) * size_t(n_rows));

        std::vector<double> want, abs_sum;
        reference_matmul(m, x, n_tokens, want, abs_sum);
        // Any summation order of k terms is within (k - 1) u sum|terms| of the exact sum;
        // twice that for the tensor cores' accumulation.
        const double k_bound = (n_tokens > 8 ? 4.0 : 2.0) * double(n_cols) * kU;
        // The CPU quantizes x to q8 for quantized weights (blocks of 256 for the K-quants, 32
        // otherwise): each x moves by at most half a step (amax of its block / 127), so y by at
        // most sum |w| * step. A looser check of the same numbers.
        std::vector<float> cpu(got.size());
        const WeightView wc{type, n_cols, n_rows, m.bytes.data()};
        ref_.matmul(wc, x.data(), n_tokens, cpu.data());
        const bool float_type = type == DType::F32 || type == DType::F16 || type == DType::BF16;
        const int q8_block = dtype_traits(type).block_elems == 256 ? 256 : 32;
        std::vector<double> q8_bound(got.size(), 0.0);
        for (int t = 0; t < n_tokens && !float_type; ++t) {
            std::vector<double> step(static_cast<size_t>(n_cols));
            for (int c0 = 0; c0 < n_cols; c0 += q8_block) {
                double amax = 0;
                for (int c = c0; c < c0 + q8_block; ++c) amax = std::max(amax, std::fabs(double(x[size_t(t) * n_cols + size_t(c)])));
                for (int c = c0; c < c0 + q8_block; ++c) step[size_t(c)] = amax / 127.0;
            }
            for (int r = 0; r < n_rows; ++r) {
                double b = 0;
                for (int c = 0; c < n_cols; ++c) b += std::fabs(double(m.values[size_t(r) * n_cols + size_t(c)])) * step[size_t(c)];
                q8_bound[size_t(t) * n_rows + size_t(r)] = b;
            }
        }
        for (size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(std::isfinite(got[i]), qPrintable(QString("y[%1] = %2").arg(i).arg(double(got[i]))));
            if (gpu_numerics_) {
                const double bound = k_bound * abs_sum[i] + 1e-6;
                QVERIFY2(std::fabs(double(got[i]) - want[i]) <= bound,
                         qPrintable(QString("y[%1] = %2, exact %3, bound %4").arg(i).arg(double(got[i])).arg(want[i]).arg(bound)));
            }
            const double loose = q8_bound[i] + (n_tokens > 8 && !float_type ? 2e-3 : 1e-4) * abs_sum[i] + 1e-5;
            QVERIFY2(std::fabs(double(got[i]) - double(cpu[i])) <= loose,
                     qPrintable(QString("y[%1] = %2, CPU %3").arg(i).arg(double(got[i])).arg(double(cpu[i]))));
        }
    }

    // The routed experts: decode (matvec per expert) and prefill (GEMM for the experts more
    // than 8 tokens chose), SwiGLU and gpt-oss's clamped form with biases, MXFP4 experts
    // (converted to F32 on the device).
    void moeFfn_data() {
        QTest::addColumn<DType>("type");
        QTest::addColumn<bool>("oai");
        QTest::addColumn<int>("n_tokens");
        for (DType t : {DType::F32, DType::Q8_0, DType::MXFP4}) {
            for (int n : {1, 6, 40}) {
                QTest::addRow("%s-swiglu-%d", dtype_name(t).data(), n) << t << false << n;
                QTest::addRow("%s-oai-%d", dtype_name(t).data(), n) << t << true << n;
            }
        }
    }
    void moeFfn() {
        QFETCH(DType, type);
        QFETCH(bool, oai);
        QFETCH(int, n_tokens);
        constexpr int32_t n_expert = 6, n_used = 2;
        constexpr int64_t n_embd = 256, n_ff = 96;
        const Matrix gate = random_matrix(type, n_expert * n_ff, n_embd, 21), up = random_matrix(type, n_expert * n_ff, n_embd, 22);
        const Matrix down = random_matrix(type, n_expert * n_embd, n_ff, 23);
        Rng rng(uint64_t(n_tokens) + 5);
        const std::vector<float> biases = rng.activations(size_t(n_expert * (2 * n_ff + n_embd)), 0.1f);
        const std::vector<uint8_t> bias_bytes(reinterpret_cast<const uint8_t *>(biases.data()),
                                              reinterpret_cast<const uint8_t *>(biases.data() + biases.size()));
        const std::vector<float> x = rng.activations(size_t(n_tokens * n_embd));
        std::vector<int32_t> ids;
        std::vector<float> weights;
        for (int t = 0; t < n_tokens; ++t) {
            ids.push_back(t % 5);  // expert 5 unchosen
            ids.push_back((t * 3 + 1) % 5 == t % 5 ? (t + 2) % 5 : (t * 3 + 1) % 5);
            weights.push_back(float(rng.uniform()));
            weights.push_back(float(rng.uniform()));
        }
        auto experts = [&](Backend & b, bool prepared) {
            auto view = [&](const Matrix & m) {
                return prepared ? prepare(b, m.type, m.n_cols, m.n_rows, m.bytes) : WeightView{m.type, m.n_cols, m.n_rows, m.bytes.data()};
            };
            auto bias = [&](int64_t offset, int64_t n) {
                const WeightView host{DType::F32, n, n_expert, bias_bytes.data() + offset * 4};
                return prepared ? *b.prepare_weight(host) : host;
            };
            ExpertWeights w{.n_expert = n_expert, .act = oai ? ExpertActivation::swiglu_oai : ExpertActivation::swiglu};
            w.gate = view(gate), w.up = view(up), w.down = view(down);
            if (oai) {
                w.gate_bias = bias(0, n_ff), w.up_bias = bias(n_expert * n_ff, n_ff), w.down_bias = bias(2 * n_expert * n_ff, n_embd);
            }
            return w;
        };
        const ExpertRoutes routes{n_used, ids.data(), weights.data()};
        std::vector<float> want(size_t(n_tokens * n_embd));
        ref_.moe_ffn(experts(ref_, false), x.data(), n_tokens, routes, want.data());
        DeviceBuffer xd = to_device(*dev_, x), od = to_device(*dev_, std::vector<float>(want.size(), NAN));
        dev_->moe_ffn(experts(*dev_, true), xd.as<float>(), n_tokens, routes, od.as<float>());
        const std::vector<float> got = to_host<float>(*dev_, od.data(), want.size());
        float scale = 0, diff = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(std::isfinite(got[i]), qPrintable(QString("out[%1] = %2").arg(i).arg(double(got[i]))));
            scale = std::max(scale, std::fabs(want[i]));
            diff = std::max(diff, std::fabs(got[i] - want[i]));
        }
        qInfo("max |out| %.3g, device vs CPU %.3g", double(scale), double(diff));
        // F32 experts: float sums in other orders (and SGEMM); quantized: the CPU's q8 x and,
        // for more than 8 tokens, the device's f16 rounding before the tensor cores.
        QVERIFY2(diff <= (type == DType::F32 ? 1e-4f : 3e-2f) * scale, qPrintable(QString::number(double(diff))));
    }

    // Weights left in page-locked RAM (--gpu-layers) give the same results as in VRAM.
    void streamedWeightsSameResults() {
        if (!cuda_) QSKIP("CUDA only");
        std::unique_ptr<Backend> streaming;
        LR_REQUIRE_DEVICE(streaming, CudaBackendOptions{.weight_vram_budget_bytes = 0});
        for (DType type : {DType::F32, DType::F16, DType::Q4_K, DType::Q8_0}) {
            const int64_t n_rows = 45, n_cols = 512;
            const Matrix m = random_matrix(type, n_rows, n_cols, 5);
            const WeightView in_vram = prepare(*dev_, type, n_cols, n_rows, m.bytes);
            const WeightView in_ram = prepare(*streaming, type, n_cols, n_rows, m.bytes);
            QVERIFY(static_cast<CudaBackend &>(*streaming).streamed_weight_bytes() > 0);
            for (int64_t n_tokens : {1, 5, 20}) {
                Rng rng{uint64_t(n_tokens)};
                const std::vector<float> x = rng.activations(size_t(n_tokens * n_cols));
                DeviceBuffer xa = to_device(*dev_, x), ya = to_device(*dev_, std::vector<float>(size_t(n_tokens * n_rows)));
                DeviceBuffer xb = to_device(*streaming, x), yb = to_device(*streaming, std::vector<float>(size_t(n_tokens * n_rows)));
                dev_->matmul(in_vram, xa.as<float>(), n_tokens, ya.as<float>());
                streaming->matmul(in_ram, xb.as<float>(), n_tokens, yb.as<float>());
                QVERIFY(to_host<float>(*streaming, yb.data(), size_t(n_tokens * n_rows)) ==
                        to_host<float>(*dev_, ya.data(), size_t(n_tokens * n_rows)));
            }
            const std::vector<int32_t> ids = {3, 44, 0};
            DeviceBuffer ra = to_device(*dev_, std::vector<float>(3 * size_t(n_cols))),
                         rb = to_device(*streaming, std::vector<float>(3 * size_t(n_cols)));
            dev_->get_rows(in_vram, ids.data(), 3, ra.as<float>());
            streaming->get_rows(in_ram, ids.data(), 3, rb.as<float>());
            QVERIFY(to_host<float>(*streaming, rb.data(), 3 * size_t(n_cols)) == to_host<float>(*dev_, ra.data(), 3 * size_t(n_cols)));
        }
    }

    void elementwise() {
        Rng rng(11);
        for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000), int64_t(70001), int64_t(172 * 9)}) {
            const std::vector<float> a = rng.activations(size_t(n), 3.0f), b = rng.activations(size_t(n), 3.0f);
            DeviceBuffer ad = to_device(*dev_, a), bd = to_device(*dev_, b), od = to_device(*dev_, std::vector<float>(size_t(n)));
            // add: exact.
            std::vector<float> want = a;
            ref_.add(want.data(), b.data(), n);
            dev_->add(ad.as<float>(), bd.as<float>(), n);
            QVERIFY(to_host<float>(*dev_, ad.data(), size_t(n)) == want);
            // swiglu: ggml_expf the same bits, expf within 2 ulp of std::exp (rows of 172
            // columns where n allows: 10 vectors of 16 and a tail).
            const int64_t n_cols = n % 172 == 0 ? 172 : n, n_rows = n / n_cols;
            std::vector<float> sw(static_cast<size_t>(n));
            ref_.swiglu(a.data(), b.data(), n_rows, n_cols, sw.data());
            DeviceBuffer a2 = to_device(*dev_, a);
            dev_->swiglu(a2.as<float>(), bd.as<float>(), n_rows, n_cols, od.as<float>());
            const std::vector<float> got = to_host<float>(*dev_, od.data(), size_t(n));
            for (size_t i = 0; i < got.size(); ++i) {
                QVERIFY2(std::fabs(got[i] - sw[i]) <= 1e-6f * std::fabs(sw[i]) + 1e-30f,
                         qPrintable(QString("swiglu[%1] %2 vs %3").arg(i).arg(got[i]).arg(sw[i])));
            }
        }
        // geglu: the CPU's GELU table, the same bits; scale and scale_tokens: exact; softcap:
        // tanhf within 2 ulp of std::tanh.
        const int64_t n_tok = 7, n = n_tok * 10001;
        const std::vector<float> g = rng.activations(size_t(n), 5.0f), u = rng.activations(size_t(n));
        const std::vector<float> per_token{1.5f, -2.0f, 0.1f, 3.0f, 1.0f, 0.0f, 7.0f};
        std::vector<float> gl(static_cast<size_t>(n)), sc = g, cap = g;
        ref_.geglu(g.data(), u.data(), n, gl.data());
        ref_.scale(sc.data(), n, 0.37f);
        ref_.scale_tokens(sc.data(), n_tok, n / n_tok, per_token.data());
        ref_.softcap(cap.data(), n, 3.0f);
        DeviceBuffer gd = to_device(*dev_, g), ud = to_device(*dev_, u), gout = to_device(*dev_, std::vector<float>(size_t(n)));
        dev_->geglu(gd.as<float>(), ud.as<float>(), n, gout.as<float>());
        QVERIFY(to_host<float>(*dev_, gout.data(), size_t(n)) == gl);
        DeviceBuffer sd = to_device(*dev_, g), cd = to_device(*dev_, g);
        dev_->scale(sd.as<float>(), n, 0.37f);
        dev_->scale_tokens(sd.as<float>(), n_tok, n / n_tok, per_token.data());
        QVERIFY(to_host<float>(*dev_, sd.data(), size_t(n)) == sc);
        dev_->softcap(cd.as<float>(), n, 3.0f);
        const std::vector<float> capped = to_host<float>(*dev_, cd.data(), size_t(n));
        for (size_t i = 0; i < capped.size(); ++i) {
            QVERIFY2(std::fabs(capped[i] - cap[i]) <= 5e-7f * std::fabs(cap[i]) + 1e-30f,
                     qPrintable(QString("softcap[%1] %2 vs %3").arg(i).arg(capped[i]).arg(cap[i])));
        }
        // add_bias: exact, rows of odd length.
        const int64_t n_rows = 5, n_cols = 37;
        const std::vector<float> x = rng.activations(size_t(n_rows * n_cols)), bias = rng.activations(size_t(n_cols));
        std::vector<float> want = x;
        const WeightView bh{DType::F32, n_cols, 1, bias.data()};
        ref_.add_bias(want.data(), bh, n_rows);
        // The bytes outlive the weight: the CPU backend (the stand-in) keeps pointing at them.
        const std::vector<uint8_t> bias_bytes(reinterpret_cast<const uint8_t *>(bias.data()),
                                              reinterpret_cast<const uint8_t *>(bias.data() + n_cols));
        const WeightView bdv = prepare(*dev_, DType::F32, n_cols, 1, bias_bytes);
        DeviceBuffer xd = to_device(*dev_, x);
        dev_->add_bias(xd.as<float>(), bdv, n_rows);
        QVERIFY(to_host<float>(*dev_, xd.data(), x.size()) == want);
    }

    void rmsNorm_data() {
        QTest::addColumn<int>("n_rows");
        QTest::addColumn<int>("n_cols");
        QTest::newRow("stories") << 3 << 64;
        QTest::newRow("odd") << 7 << 37;
        QTest::newRow("8b") << 2 << 4096;
        QTest::newRow("wide-odd") << 1 << 5003;
    }
    void rmsNorm() {
        QFETCH(int, n_rows);
        QFETCH(int, n_cols);
        Rng rng{uint64_t(n_cols)};
        const std::vector<float> x = rng.activations(size_t(n_rows) * size_t(n_cols), 2.0f);
        std::vector<float> weight(static_cast<size_t>(n_cols));
        for (float & v : weight) v = 1.0f + rng.normal(0.1f);
        std::vector<uint8_t> wbytes(weight.size() * 4);
        std::memcpy(wbytes.data(), weight.data(), wbytes.size());
        std::vector<float> want(x.size());
        ref_.rms_norm(x.data(), {DType::F32, n_cols, 1, weight.data()}, 1e-5f, n_rows, want.data());
        const WeightView wd = prepare(*dev_, DType::F32, n_cols, 1, wbytes);
        DeviceBuffer xd = to_device(*dev_, x), od = to_device(*dev_, std::vector<float>(x.size()));
        dev_->rms_norm(xd.as<float>(), wd, 1e-5f, n_rows, od.as<float>());
        const std::vector<float> got = to_host<float>(*dev_, od.data(), x.size());
        // The double sum in another order can move the float mean by one ulp.
        for (size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(std::fabs(got[i] - want[i]) <= 4e-7f * std::fabs(want[i]) + 1e-30f,
                     qPrintable(QString("%1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        }
    }

    // Gated DeltaNet's row ops, as the model calls them: l2_norm in place, copy_rows taking
    // heads out of interleaved rows, the output gate.
    void deltaNetRowOps() {
        Rng rng(23);
        const int64_t n_rows = 37, n_cols = 128, stride = 3 * n_cols + 5;
        const std::vector<float> x = rng.activations(size_t(n_rows * stride), 2.0f), gate = rng.activations(x.size(), 4.0f);
        DeviceBuffer xd = to_device(*dev_, x), gd = to_device(*dev_, gate),
                     rows = to_device(*dev_, std::vector<float>(size_t(n_rows * n_cols)));
        std::vector<float> want(size_t(n_rows * n_cols));
        ref_.copy_rows(x.data() + n_cols, stride, n_rows, n_cols, want.data(), n_cols);
        dev_->copy_rows(xd.as<float>() + n_cols, stride, n_rows, n_cols, rows.as<float>(), n_cols);
        QVERIFY(to_host<float>(*dev_, rows.data(), want.size()) == want);
        ref_.l2_norm(want.data(), n_rows, n_cols, 1e-6f, want.data());
        dev_->l2_norm(rows.as<float>(), n_rows, n_cols, 1e-6f, rows.as<float>());
        QVERIFY(to_host<float>(*dev_, rows.data(), want.size()) == want);
        std::vector<float> gated = x;
        ref_.sigmoid_mul(gated.data(), gate.data(), int64_t(x.size()));
        dev_->sigmoid_mul(xd.as<float>(), gd.as<float>(), int64_t(x.size()));
        const std::vector<float> got = to_host<float>(*dev_, xd.data(), x.size());
        for (size_t i = 0; i < got.size(); ++i) {  // expf within 2 ulp, then a division and a product
            QVERIFY2(std::fabs(got[i] - gated[i]) <= 6e-7f * std::fabs(gated[i]) + 1e-30f,
                     qPrintable(QString("sigmoid_mul[%1] %2 vs %3").arg(i).arg(got[i]).arg(gated[i])));
        }
    }

    void causalConv_data() { add_conv_rows(); }
    void causalConv() {
        QFETCH(ConvCase, c);
        Rng rng{uint64_t(c.n_channels * c.width)};
        const std::vector<float> kernel = rng.activations(size_t(c.n_channels * c.width), 0.5f);
        std::vector<float> want_state = rng.activations(size_t(c.n_channels * (c.width - 1)));
        std::vector<uint8_t> kernel_bytes(kernel.size() * sizeof(float));
        std::memcpy(kernel_bytes.data(), kernel.data(), kernel_bytes.size());
        const WeightView kd = prepare(*dev_, DType::F32, c.width, c.n_channels, kernel_bytes);
        DeviceBuffer state = to_device(*dev_, want_state);
        for (int64_t n : c.ubatches) {
            const std::vector<float> x = rng.activations(size_t(n * c.n_channels), 2.0f);
            std::vector<float> want(x.size());
            ref_.causal_conv_silu(x.data(), n, {DType::F32, c.width, c.n_channels, kernel.data()}, want_state.data(), want.data());
            DeviceBuffer xd = to_device(*dev_, x), od = to_device(*dev_, std::vector<float>(x.size()));
            dev_->causal_conv_silu(xd.as<float>(), n, kd, state.as<float>(), od.as<float>());
            const std::vector<float> got = to_host<float>(*dev_, od.data(), x.size());
            for (size_t i = 0; i < got.size(); ++i) {  // SiLU's expf within 2 ulp past the last vector of 16
                QVERIFY2(std::fabs(got[i] - want[i]) <= 6e-7f * std::fabs(want[i]) + 1e-30f,
                         qPrintable(QString("%1 tokens, [%2]: %3 vs %4").arg(n).arg(i).arg(got[i]).arg(want[i])));
            }
            QVERIFY(to_host<float>(*dev_, state.data(), want_state.size()) == want_state);
        }
    }

    // Both forms, over ubatches that carry the state (prefill chunked, then decode).
    void gatedDeltaRule_data() { add_delta_rule_rows(); }
    void gatedDeltaRule() {
        QFETCH(DeltaRuleCase, c);
        Rng rng{uint64_t(c.shape.head_k_dim * 31 + c.shape.n_v_heads)};
        std::vector<float> want_state = delta_rule_state(rng, c.shape);
        DeviceBuffer state = to_device(*dev_, want_state);
        const auto bound = [](const std::vector<float> & v) {
            float m = 1.0f;
            for (float x : v) m = std::max(m, std::fabs(x));
            return 1e-5 * m;
        };
        for (const auto & [n, chunk] : c.ubatches) {
            DeltaRuleParams p = c.shape;
            p.chunk_tokens = chunk;
            const DeltaRuleInputs in = delta_rule_inputs(rng, p, n);
            std::vector<float> want(size_t(n * p.n_v_heads * p.head_v_dim));
            ref_.gated_delta_rule(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), n, p, want_state.data(), want.data());
            DeviceBuffer qd = to_device(*dev_, in.q), kd = to_device(*dev_, in.k), vd = to_device(*dev_, in.v);
            DeviceBuffer od = to_device(*dev_, std::vector<float>(want.size()));
            dev_->gated_delta_rule(qd.as<float>(), kd.as<float>(), vd.as<float>(), in.g.data(), in.beta.data(), n, p, state.as<float>(),
                                   od.as<float>());
            const double d_out = largest_difference(to_host<float>(*dev_, od.data(), want.size()), want);
            const double d_state = largest_difference(to_host<float>(*dev_, state.data(), want_state.size()), want_state);
            qInfo("%lld tokens, chunk %d: max |d| out %.3g, state %.3g", static_cast<long long>(n), chunk, d_out, d_state);
            QVERIFY2(d_out <= bound(want), qPrintable(QString("out differs by %1").arg(d_out)));
            QVERIFY2(d_state <= bound(want_state), qPrintable(QString("state differs by %1").arg(d_state)));
        }
    }

    void rope_data() {
        QTest::addColumn<bool>("neox");
        QTest::addColumn<int>("n_rot");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<float>("freq_scale");
        QTest::addColumn<bool>("factors");
        QTest::newRow("llama") << false << 64 << 64 << 1.0f << false;
        QTest::newRow("qwen2-neox") << true << 64 << 64 << 1.0f << false;
        QTest::newRow("partial-rotation") << false << 16 << 40 << 1.0f << false;
        QTest::newRow("neox-partial") << true << 24 << 32 << 1.0f << false;
        QTest::newRow("linear-scaling") << false << 32 << 32 << 0.25f << false;
        QTest::newRow("llama3-factors") << false << 128 << 128 << 1.0f << true;
        QTest::newRow("head-dim-8") << false << 8 << 8 << 1.0f << false;
        QTest::newRow("yarn") << false << 32 << 32 << 0.0625f << false;
        QTest::newRow("yarn-neox-factors") << true << 64 << 64 << 0.03125f << true;
    }
    void rope() {
        QFETCH(bool, neox);
        QFETCH(int, n_rot);
        QFETCH(int, head_dim);
        QFETCH(float, freq_scale);
        QFETCH(bool, factors);
        const int64_t n_heads = 3;
        const std::vector<int32_t> pos = {0, 1, 2, 31, 500, 4095, 100000, 7};
        const int64_t n_tokens = int64_t(pos.size());
        Rng rng{uint64_t(n_rot)};
        const std::vector<float> x = rng.activations(size_t(n_tokens * n_heads * head_dim));
        std::vector<float> ff(size_t(n_rot / 2));
        for (size_t i = 0; i < ff.size(); ++i) ff[i] = i < ff.size() / 3 ? 1.0f : i < ff.size() / 2 ? 2.6945f : 8.0f;
        std::vector<uint8_t> ff_bytes(ff.size() * 4);
        std::memcpy(ff_bytes.data(), ff.data(), ff_bytes.size());
        const WeightView ffd = prepare(*dev_, DType::F32, int64_t(ff.size()), 1, ff_bytes);
        RopeParams p{.mode = neox ? RopeMode::neox : RopeMode::normal,
                     .n_rot = n_rot,
                     .head_dim = head_dim,
                     .freq_base = 500000.0f,
                     .freq_scale = freq_scale,
                     .freq_factors = factors ? ff.data() : nullptr};
        if (QByteArray(QTest::currentDataTag()).startsWith("yarn")) {
            p.ext_factor = 1.0f;
            p.attn_factor = 0.78f;
            p.corr_low = 3.0f;
            p.corr_high = 13.0f;
        }
        std::vector<float> want = x;
        ref_.rope(want.data(), n_tokens, n_heads, pos.data(), p);
        p.freq_factors = factors ? static_cast<const float *>(ffd.data) : nullptr;
        DeviceBuffer xd = to_device(*dev_, x);
        dev_->rope(xd.as<float>(), n_tokens, n_heads, pos.data(), p);
        const std::vector<float> got = to_host<float>(*dev_, xd.data(), x.size());
        // Same angles; cos and sin correctly rounded on both sides but in rare cases.
        for (size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(std::fabs(got[i] - want[i]) <= 1e-6f * (1.0f + std::fabs(want[i])),
                     qPrintable(QString("%1: %2 vs %3").arg(i).arg(got[i]).arg(want[i])));
        }
    }

    // K and V rows written in every codec (f32, f16, and the quantized ones, which the cache
    // only writes when it re-encodes, but the op supports): the same bytes as the CPU.
    void kvWriteSameBytes_data() {
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("block_tokens");
        QTest::addColumn<QString>("codecs");
        QTest::newRow("f16-d64") << 64 << 32 << "h";
        QTest::newRow("f32-d40-bt5") << 40 << 5 << "f";
        QTest::newRow("q8-d64") << 64 << 16 << "8";
        QTest::newRow("q4-d48-group16") << 48 << 16 << "4";
        QTest::newRow("mixed-d40-group8") << 40 << 8 << "h84f";
    }
    void kvWriteSameBytes() {
        QFETCH(int, head_dim);
        QFETCH(int, block_tokens);
        QFETCH(QString, codecs);
        const KvBlockShape shape{uint32_t(block_tokens), 3, uint32_t(head_dim)};
        const int64_t n_tokens = 11;
        KvWorld w = make_kv_world(*dev_, shape, 6, codecs.toStdString(), false, 0, 17);
        Rng rng(3);
        const std::vector<float> k = rng.activations(size_t(n_tokens) * 3 * size_t(head_dim), 2.0f);
        const std::vector<float> v = rng.activations(k.size(), 2.0f);
        std::vector<int32_t> pos;
        std::vector<uint32_t> write_slots;
        for (int64_t i = 0; i < n_tokens; ++i) {
            write_slots.push_back(uint32_t((i * 7 + 3) % (6 * block_tokens)));  // scattered over the blocks
            pos.push_back(int32_t(1000 + i));
        }
        ref_.kv_write(w.view(false, nullptr, write_slots), k.data(), v.data(), pos.data(), n_tokens);
        DeviceBuffer kd = to_device(*dev_, k), vd = to_device(*dev_, v);
        dev_->kv_write(w.view(true, nullptr, write_slots), kd.as<float>(), vd.as<float>(), pos.data(), n_tokens);
        for (size_t b = 0; b < w.host.size(); ++b) {
            const std::vector<uint8_t> got = to_host<uint8_t>(*dev_, w.device[b].data(), w.host[b].size());
            for (size_t i = 0; i < got.size(); ++i) {
                QVERIFY2(got[i] == w.host[b][i],
                         qPrintable(QString("block %1 byte %2: %3 vs %4").arg(b).arg(i).arg(got[i]).arg(w.host[b][i])));
            }
        }
    }

    void attention_data() {
        QTest::addColumn<AttentionCase>("c");
        // block_tokens, n_head_kv, head_dim, n_blocks, group, n_tokens, codecs, holes
        QTest::newRow("decode-f16") << AttentionCase{32, 4, 64, 20, 8, 1, "h", false};
        QTest::newRow("decode-one-kv-head-long") << AttentionCase{32, 1, 128, 300, 8, 1, "h", true};
        QTest::newRow("decode-mixed-codecs") << AttentionCase{16, 2, 64, 13, 4, 1, "h84f", true};
        QTest::newRow("decode-d80-bt8") << AttentionCase{8, 2, 80, 7, 3, 1, "h", true};
        QTest::newRow("decode-d8-stories") << AttentionCase{32, 4, 8, 5, 2, 1, "h", false};
        QTest::newRow("decode-d256") << AttentionCase{32, 2, 256, 6, 4, 1, "h", false};
        QTest::newRow("two-tokens") << AttentionCase{32, 4, 64, 6, 8, 2, "h", false};
        QTest::newRow("prefill-f16") << AttentionCase{32, 4, 64, 8, 8, 37, "h", false};
        QTest::newRow("prefill-odd-blocks") << AttentionCase{5, 3, 48, 23, 2, 41, "h", true};
        QTest::newRow("prefill-mixed") << AttentionCase{16, 2, 64, 12, 4, 29, "hf84", true};
        QTest::newRow("prefill-d8") << AttentionCase{7, 4, 8, 9, 2, 19, "h", false};
        QTest::newRow("prefill-f32") << AttentionCase{32, 2, 64, 4, 4, 64, "f", false};
        QTest::newRow("prefill-block-64") << AttentionCase{64, 2, 128, 5, 4, 70, "h8", true};
        QTest::newRow("no-gqa") << AttentionCase{32, 8, 32, 3, 1, 9, "h", false};
        QTest::newRow("decode-pages") << AttentionCase{32, 4, 64, 20, 8, 1, "h", false, 8};
        QTest::newRow("decode-pages-mixed-long") << AttentionCase{16, 2, 64, 300, 4, 1, "h84f", true, 4};
        QTest::newRow("decode-window-long") << AttentionCase{32, 1, 128, 300, 8, 1, "h", true, 0, 1024};
        QTest::newRow("prefill-window") << AttentionCase{32, 4, 64, 8, 8, 37, "h", false, 0, 32};
        QTest::newRow("prefill-window-odd-mixed") << AttentionCase{5, 3, 48, 23, 2, 41, "h84f", true, 0, 8};
        QTest::newRow("decode-sinks-long") << AttentionCase{32, 1, 128, 300, 8, 1, "h", true, 0, 0, true};
        QTest::newRow("prefill-sinks-window-mixed") << AttentionCase{5, 3, 48, 23, 2, 41, "h84f", true, 0, 8, true};
        QTest::newRow("decode-sinks-pages-mixed") << AttentionCase{16, 2, 64, 300, 4, 1, "h84f", true, 4, 0, true};
    }
    void attention() {
        QFETCH(AttentionCase, c);
        const KvBlockShape shape{c.block_tokens, c.n_head_kv, c.head_dim};
        // The ubatch's tokens are the last n_tokens positions, already written (as after kv_write).
        const KvWorld w = make_kv_world(*dev_, shape, c.n_blocks, c.codecs, c.holes, c.n_tokens, 42);
        const int32_t n_head = int32_t(c.n_head_kv) * c.group;
        const int32_t n_pos = int32_t(c.block_tokens * c.n_blocks);
        Rng rng(9);
        std::vector<float> q(size_t(c.n_tokens) * size_t(n_head) * c.head_dim);
        for (float & v : q) v = rng.normal(1.0f);
        std::vector<int32_t> pos;
        for (int64_t t = 0; t < c.n_tokens; ++t) pos.push_back(n_pos - int32_t(c.n_tokens) + int32_t(t));
        // Sinks about as large as the scores, one far above them: host memory for the
        // reference, device memory for the device.
        std::vector<float> sinks;
        for (int32_t h = 0; c.sinks && h < n_head; ++h) sinks.push_back(h == 1 ? 12.0f : rng.normal(2.0f));
        const DeviceBuffer sinks_d = c.sinks ? to_device(*dev_, sinks) : DeviceBuffer{};
        const AttentionParams p{.n_head = n_head,
                                .n_head_kv = int32_t(c.n_head_kv),
                                .head_dim = int32_t(c.head_dim),
                                .scale = 1.0f / std::sqrt(float(c.head_dim)),
                                .window = c.window,
                                .sinks = c.sinks ? sinks.data() : nullptr};
        AttentionParams p_dev = p;
        p_dev.sinks = sinks_d.as<float>();
        const bool all_f16 = c.codecs.find_first_not_of('h') == std::string::npos;
        const double tol = (all_f16 ? 2e-3 : 5e-5) * double(w.max_abs_v);
        const size_t n_mass = size_t(c.n_blocks) * c.n_head_kv * c.block_tokens;
        // Quest's page masks: random pages per head, the queries' own block read whole.
        std::vector<uint32_t> read_pages;
        for (uint32_t b = 0; c.page_tokens > 0 && b < c.n_blocks; ++b) {
            for (uint32_t g = 0; g < c.n_head_kv; ++g) read_pages.push_back(b + 1 == c.n_blocks ? ~0u : uint32_t(rng.next_u64()));
        }
        auto view = [&](bool on_device, float * mass) {
            PagedKvView v = w.view(on_device, mass);
            v.read_pages = read_pages;
            v.page_tokens = c.page_tokens;
            return v;
        };
        for (bool with_mass : {false, true}) {
            std::vector<float> want(q.size(), NAN), mass_want(n_mass, 0.5f);  // the mass adds to what is there
            ref_.attention(q.data(), c.n_tokens, pos.data(), view(false, with_mass ? mass_want.data() : nullptr), p, want.data());
            DeviceBuffer qd = to_device(*dev_, q), od = to_device(*dev_, std::vector<float>(q.size(), NAN));
            DeviceBuffer md = to_device(*dev_, std::vector<float>(n_mass, 0.5f));
            dev_->attention(qd.as<float>(), c.n_tokens, pos.data(), view(true, with_mass ? md.as<float>() : nullptr), p_dev,
                            od.as<float>());
            const std::vector<float> got = to_host<float>(*dev_, od.data(), q.size());
            double worst = 0;
            for (size_t i = 0; i < got.size(); ++i) {
                QVERIFY2(std::isfinite(got[i]), qPrintable(QString("out[%1] = %2").arg(i).arg(double(got[i]))));
                worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
            }
            QVERIFY2(worst <= tol, qPrintable(QString("mass %1: max |d| %2 > %3").arg(with_mass).arg(worst).arg(tol)));
            if (!with_mass) continue;
            const std::vector<float> mass = to_host<float>(*dev_, md.data(), n_mass);
            double total = 0;
            for (size_t i = 0; i < n_mass; ++i) {
                QVERIFY2(std::fabs(double(mass[i]) - mass_want[i]) <= 1e-5 * double(c.n_tokens * c.group),
                         qPrintable(QString("mass[%1] %2 vs %3").arg(i).arg(double(mass[i])).arg(double(mass_want[i]))));
                total += double(mass[i]) - 0.5;
            }
            // Each query's weights sum to one (less its sink's share).
            if (c.sinks) continue;
            QVERIFY2(std::fabs(total - double(c.n_tokens * n_head)) < 1e-3 * double(c.n_tokens * n_head),
                     qPrintable(QString::number(total)));
        }
    }

    // The copies see every op queued before them, from any thread.
    void copiesFromAnotherThread() {
        const size_t n = 1 << 20;
        const std::vector<float> ones(n, 1.0f);
        DeviceBuffer x = to_device(*dev_, std::vector<float>(n, 0.0f)), y = to_device(*dev_, ones);
        for (int i = 0; i < 50; ++i) dev_->add(x.as<float>(), y.as<float>(), int64_t(n));  // queued, not waited for
        std::vector<float> seen(n, -1.0f);
        DeviceBuffer z = to_device(*dev_, std::vector<float>(n, 0.0f));
        std::thread io([&] {
            dev_->copy_to_host(seen.data(), x.data(), n * sizeof(float));
            dev_->copy_to_device(z.data(), ones.data(), n * sizeof(float));
        });
        io.join();
        QCOMPARE(seen.front(), 50.0f);
        QCOMPARE(seen.back(), 50.0f);
        dev_->add(x.as<float>(), z.as<float>(), int64_t(n));  // sees what the other thread wrote
        QCOMPARE(to_host<float>(*dev_, x.data(), n)[n / 2], 51.0f);
    }

    // The host tier's memory: page-locked with CUDA, readable and writable by the CPU.
    void hostMemory() {
        Result<DeviceBuffer> h = dev_->alloc_host(3000);
        QVERIFY(h.ok());
        std::memset(h->data(), 7, 3000);
        DeviceBuffer d = to_device(*dev_, std::vector<uint8_t>(3000, 0));
        dev_->copy_to_device(d.data(), h->data(), 3000);
        QVERIFY(to_host<uint8_t>(*dev_, d.data(), 3000) == std::vector<uint8_t>(3000, 7));
        if (cuda_) {
            const BackendMemory m = dev_->device_memory();
            QVERIFY(m.total_bytes > 0 && m.free_bytes <= m.total_bytes);
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaOps)
#include "test_cuda_ops.moc"
