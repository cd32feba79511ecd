#pragma once
// The CPU backend: ops parallelized over a persistent thread pool, with SIMD kernels
// chosen once, at construction, for the CPU it runs on (CpuIsa). Weights are read from
// the model file's mapping (no copy); activations for quantized weights are converted to
// the weight's vec_dot_type first, as llama.cpp does, so results match it closely.
// With CpuIsa::scalar every op runs the portable reference code the SIMD kernels are
// tested against (attention included: attention_reference).

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/activations.h"
#include "engine/backend/cpu/aligned_buffer.h"
#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/expert_ffn.h"
#include "engine/backend/cpu/thread_pool.h"

namespace lr {

struct CpuBackendOptions {
    int n_threads = 0;          // 0: the physical core count
    CpuIsa isa = CpuIsa::best;  // scalar: the reference path (tests); an ISA the CPU lacks falls back
};

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(CpuBackendOptions options = {});

    BackendKind kind() const override { return BackendKind::cpu; }
    uint32_t host_threads() const override { return uint32_t(pool_.n_threads()); }
    std::string name() const override;  // "cpu (avx2, 2 threads)"
    int n_threads() const { return pool_.n_threads(); }
    CpuIsa isa() const { return isa_; }

    Result<DeviceBuffer> alloc(size_t n_bytes) override;
    Result<WeightView> prepare_weight(const WeightView & host) override;
    void copy_to_device(void * dst, const void * src_host, size_t n_bytes) override;
    void copy_to_host(void * dst_host, const void * src, size_t n_bytes) override;
    void copy_on_device(void * dst, const void * src, size_t n_bytes) override;
    void synchronize() override {}

    void get_rows(const WeightView & w, const int32_t * ids_host, int64_t n, float * out) override;
    void matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) override;
    void add_bias(float * x, const WeightView & b, int64_t n_rows) override;
    void rms_norm(const float * x, const WeightView & w, float eps, int64_t n_rows, float * out) override;
    void add(float * x, const float * y, int64_t n) override;
    void swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out) override;
    void geglu(const float * gate, const float * up, int64_t n, float * out) override;
    void scale(float * x, int64_t n, float s) override;
    void scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale_host) override;
    void softcap(float * x, int64_t n, float cap) override;
    void moe_ffn(const ExpertWeights & w, const float * x, int64_t n_tokens, const ExpertRoutes & routes, float * out) override;
    void sigmoid_mul(float * x, const float * gate, int64_t n) override;
    void copy_rows(const float * src, int64_t src_stride, int64_t n_rows, int64_t n_cols, float * dst, int64_t dst_stride) override;
    void l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) override;
    void causal_conv_silu(const float * x, int64_t n_tokens, const WeightView & kernel, float * state, float * out) override;
    void gated_delta_rule(const float * q, const float * k, const float * v, const float * g_host, const float * beta_host,
                          int64_t n_tokens, const DeltaRuleParams & p, float * state, float * out) override;
    void rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos_host, const RopeParams & p) override;
    void kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos_host, int64_t n_tokens) override;
    void attention(const float * q, int64_t n_tokens, const int32_t * pos_host, const PagedKvView & view, const AttentionParams & p,
                   float * out) override;

private:
    ThreadPool pool_;
    CpuIsa isa_;
    const cpu::AttentionKernels * attention_kernels_;
    const cpu::ActivationKernels * activation_kernels_;
    cpu::AlignedBuffer act_;                   // activations converted for a matmul kernel
    std::vector<cpu::AlignedBuffer> scratch_;  // [n_threads] kernel scratch
    cpu::AttentionScratch attention_scratch_;
    cpu::ExpertScratch expert_scratch_;
    std::vector<float> ones_;  // SiLU through swiglu's kernel
};

}  // namespace lr
