#pragma once
// What the gpu-labelled tests share: the backend under test and buffers on it.
//
// The backend under test is the CUDA backend on device 0. Without a device the tests skip
// (QSKIP "no CUDA device: ..."), unless LONGREAD_GPU_TESTS_ON_CPU says what stands in:
//   =1        the CPU backend (its SIMD kernels), against the same references: the harness
//             itself (buffer sizes, views, copies) runs on machines without a GPU; checks
//             that only hold for the CUDA kernels' numerics are skipped;
//   =emulate  the CPU backend with the CUDA kernels' own code for matmul (matvec.cuh, run
//             lane by lane; the GEMM path in double over f16-rounded inputs), attention
//             (attention.cuh, thread by thread), rope (rope.cuh), geglu (geglu.cuh) and the
//             Gated DeltaNet ops (gates.cuh, l2_norm.cuh, causal_conv.cuh, delta_rule.cuh):
//             whole models with the GPU's numerics, to
//             check the tolerances of the model tests before a GPU runs them.

#include <QtTest>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda_host_emulation.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant.h"

namespace lr::test {

// The CPU backend computing matmul and attention with the CUDA kernels' code (see above).
class EmulatedCudaNumerics final : public Backend {
public:
    BackendKind kind() const override { return BackendKind::cpu; }
    std::string name() const override { return "cpu emulating the CUDA kernels' numerics"; }
    Result<DeviceBuffer> alloc(size_t n) override { return cpu_.alloc(n); }
    Result<WeightView> prepare_weight(const WeightView & host) override { return cpu_.prepare_weight(host); }
    void copy_to_device(void * d, const void * s, size_t n) override { cpu_.copy_to_device(d, s, n); }
    void copy_to_host(void * d, const void * s, size_t n) override { cpu_.copy_to_host(d, s, n); }
    void copy_on_device(void * d, const void * s, size_t n) override { cpu_.copy_on_device(d, s, n); }
    void synchronize() override {}
    void get_rows(const WeightView & w, const int32_t * ids, int64_t n, float * out) override { cpu_.get_rows(w, ids, n, out); }
    void add_bias(float * x, const WeightView & b, int64_t n_rows) override { cpu_.add_bias(x, b, n_rows); }
    void rms_norm(const float * x, const WeightView & w, float eps, int64_t n, float * out) override { cpu_.rms_norm(x, w, eps, n, out); }
    void add(float * x, const float * y, int64_t n) override { cpu_.add(x, y, n); }
    void swiglu(const float * g, const float * u, int64_t n_rows, int64_t n_cols, float * out) override {
        cpu_.swiglu(g, u, n_rows, n_cols, out);
    }
    void geglu(const float * g, const float * u, int64_t n, float * out) override { emulate_geglu(g, u, n, out); }
    void scale(float * x, int64_t n, float s) override { cpu_.scale(x, n, s); }
    void scale_tokens(float * x, int64_t n, int64_t n_cols, const float * s) override { cpu_.scale_tokens(x, n, n_cols, s); }
    void softcap(float * x, int64_t n, float cap) override { cpu_.softcap(x, n, cap); }
    // The experts with the CPU's numerics (the CUDA op's products are its matmul's).
    void moe_ffn(const ExpertWeights & w, const float * x, int64_t n, const ExpertRoutes & r, float * out) override {
        cpu_.moe_ffn(w, x, n, r, out);
    }
    void sigmoid_mul(float * x, const float * gate, int64_t n) override { emulate_sigmoid_mul(x, gate, n); }
    void copy_rows(const float * src, int64_t ss, int64_t n_rows, int64_t n_cols, float * dst, int64_t ds) override {
        cpu_.copy_rows(src, ss, n_rows, n_cols, dst, ds);
    }
    void l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) override {
        emulate_l2_norm(x, n_rows, n_cols, eps, out);
    }
    void causal_conv_silu(const float * x, int64_t n, const WeightView & kernel, float * state, float * out) override {
        emulate_causal_conv_silu(x, n, static_cast<const float *>(kernel.data), kernel.n_rows, kernel.n_cols, state, out);
    }
    void gated_delta_rule(const float * q, const float * k, const float * v, const float * g, const float * beta, int64_t n,
                          const DeltaRuleParams & p, float * state, float * out) override {
        emulate_gated_delta_rule(q, k, v, g, beta, n, p, state, out);
    }
    void rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, const RopeParams & p) override {
        emulate_rope(x, n_tokens, n_heads, pos, p);
    }
    void kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos, int64_t n) override {
        cpu_.kv_write(view, k, v, pos, n);
    }
    void matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) override {
        const auto * bytes = static_cast<const uint8_t *>(w.data);
        if (n_tokens <= 8) {
            emulate_matvec(w.type, bytes, w.row_bytes(), w.n_rows, w.n_cols, x, n_tokens, y);
            return;
        }
        // cuBLAS: F32 as it is; F16/BF16 weights with x rounded to their type; quantized
        // weights and x rounded to f16; products summed (here in double).
        std::vector<float> row(size_t(w.n_cols));
        for (int64_t r = 0; r < w.n_rows; ++r) {
            quant::dequantize_row(w.type, bytes + size_t(r) * w.row_bytes(), row.data(), size_t(w.n_cols));
            const bool quantized = w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16;
            if (quantized) {
                for (float & v : row) v = fp16_to_fp32(fp32_to_fp16(v));
            }
            for (int64_t t = 0; t < n_tokens; ++t) {
                double sum = 0;
                for (int64_t c = 0; c < w.n_cols; ++c) {
                    float xv = x[t * w.n_cols + c];
                    if (w.type == DType::BF16) xv = bf16_to_fp32(fp32_to_bf16(xv));
                    else if (w.type != DType::F32) xv = fp16_to_fp32(fp32_to_fp16(xv));
                    sum += double(row[size_t(c)]) * double(xv);
                }
                y[t * w.n_rows + r] = float(sum);
            }
        }
    }
    void attention(const float * q, int64_t n_tokens, const int32_t * pos, const PagedKvView & view, const AttentionParams & p,
                   float * out) override {
        emulate_attention(q, n_tokens, pos, view, p, out, 132);
    }

private:
    CpuBackend cpu_{{.n_threads = 2}};
};

// Whether `b` computes with the CUDA kernels' numerics (the GPU, or their emulation).
inline bool gpu_numerics(const Backend & b) { return b.kind() == BackendKind::cuda || dynamic_cast<const EmulatedCudaNumerics *>(&b); }

// The backend under test, or nullptr with the reason in `why`.
inline std::unique_ptr<Backend> device_under_test(std::string & why, const CudaBackendOptions & options = {}) {
    Result<std::unique_ptr<CudaBackend>> cuda = CudaBackend::create(options);
    if (cuda.ok()) return std::move(cuda).value();
    why = cuda.status().message();
    const char * on_cpu = std::getenv("LONGREAD_GPU_TESTS_ON_CPU");
    const std::string mode = on_cpu ? on_cpu : "";
    if (mode == "1") return std::make_unique<CpuBackend>(CpuBackendOptions{.n_threads = 2});
    if (mode == "emulate") return std::make_unique<EmulatedCudaNumerics>();
    return nullptr;
}

#define LR_REQUIRE_DEVICE(backend_ptr, ...)                                                 \
    do {                                                                                    \
        std::string lr_why_;                                                                \
        backend_ptr = ::lr::test::device_under_test(lr_why_ __VA_OPT__(, ) __VA_ARGS__);    \
        if (!backend_ptr) QSKIP(qPrintable(QString("no CUDA device: ") + lr_why_.c_str())); \
    } while (0)

// A device buffer holding v.
template <class T>
DeviceBuffer to_device(Backend & b, const std::vector<T> & v) {
    Result<DeviceBuffer> buf = b.alloc(std::max<size_t>(v.size() * sizeof(T), 1));
    if (!buf.ok()) qFatal("%s", buf.status().message().c_str());
    if (!v.empty()) b.copy_to_device(buf->data(), v.data(), v.size() * sizeof(T));
    return std::move(buf).value();
}

// The first n values of a device buffer (after the ops queued before).
template <class T>
std::vector<T> to_host(Backend & b, const void * src, size_t n) {
    std::vector<T> v(n);
    if (n > 0) b.copy_to_host(v.data(), src, n * sizeof(T));
    b.synchronize();
    return v;
}

// A weight uploaded by prepare_weight (the backend keeps it).
inline WeightView prepare(Backend & b, DType type, int64_t n_cols, int64_t n_rows, const std::vector<uint8_t> & bytes) {
    Result<WeightView> w = b.prepare_weight({type, n_cols, n_rows, bytes.data()});
    if (!w.ok()) qFatal("%s", w.status().message().c_str());
    return *w;
}

}  // namespace lr::test
