#pragma once
// The CUDA backend: the Backend ops on one NVIDIA GPU, with cuBLAS for prefill.
//
// Memory. alloc() is VRAM (small buffers such as KV blocks carved from slabs), so the KV
// cache's device tier lives in VRAM; alloc_host() is page-locked RAM, the host tier.
// prepare_weight() uploads weights to VRAM until weight_vram_budget_bytes is used up;
// from the first matrix that does not fit, matrices stay in mapped page-locked host RAM
// and the kernels read them over PCIe ("streamed"; --gpu-layers). The model prepares its
// tensors in file order (token embedding, output, then layer 0, 1, ...), so the budget
// keeps the first layers in VRAM. Vectors (norms, biases, rope factors) are always in VRAM.
//
// Streams. The ops are queued on one stream, in order, without waiting; synchronize()
// waits for them. copy_to_device / copy_to_host run on a stream of the calling thread
// (the KV cache's I/O thread has its own, so prefetches of the next layer's blocks overlap
// the ops): each copy first waits, on the GPU, for an event recorded on the ops' stream
// (so it sees every op queued before it), then the calling thread waits on the copy's
// own event. No call waits for the whole device.
//
// Ops: decode (<= 8 tokens) products are the matvec kernels, one per weight type; longer
// ubatches dequantize the weights to f16 and multiply on tensor cores (cuBLAS, f32
// accumulation); F32 weights use cuBLAS's SGEMM. Attention: attention.cu. Routed experts:
// the ubatch grouped by expert on the host (ExpertGroups), each chosen expert's rows one
// matmul over its tokens, the rest in moe.cu. Gated DeltaNet: delta_rule.cu (g and beta
// uploaded, the chunked form's scratch a workspace), causal_conv.cu, l2_norm.cu.
// Threads: the ops and alloc from one thread at a time; the copies from any thread.
// Linking: cudart statically, cuBLAS opened at run time (cuda_blas.h), so a program built
// with this backend starts on machines without a driver or the toolkit's libraries.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace lr {

struct CudaDeviceInfo {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;  // compute capability
    uint64_t total_bytes = 0;
    uint64_t free_bytes = 0;
    int n_sm = 0;
    double peak_bandwidth_gbs = 0;  // from the memory clock and bus width (0 if unknown)
    bool can_map_host = false;      // kernels can read page-locked host RAM (streamed weights)
};

struct CudaProbe {
    std::vector<CudaDeviceInfo> devices;
    std::string problem;     // why there is no device: no driver, driver too old, ...
    int driver_version = 0;  // e.g. 13000; 0 without a driver
    int runtime_version = 0;
};

// Never crashes and never throws: without a driver or a device, `problem` says so.
CudaProbe probe_cuda_devices();

// Whether the CUDA kernels read weights of `type` as they are; the others are stored in
// VRAM as F32, dequantized once at load.
bool cuda_reads_weight_type(DType type);

// The oldest GPUs this build has kernels for (CMAKE_CUDA_ARCHITECTURES 80;86;89;90; the
// PTX of 90 runs on newer ones).
inline constexpr int kCudaMinComputeMajor = 8;

struct CudaBackendOptions {
    int device = 0;
    // Weight bytes kept in VRAM (see the file comment); UINT64_MAX: every weight.
    uint64_t weight_vram_budget_bytes = UINT64_MAX;
};

class CudaBackend final : public Backend {
public:
    // unsupported / out_of_memory with a one-line reason when the device cannot be used
    // (no driver, no such device, compute capability below 8.0, no kernel image, ...).
    static Result<std::unique_ptr<CudaBackend>> create(const CudaBackendOptions & options = {});
    ~CudaBackend() override;
    CudaBackend(const CudaBackend &) = delete;
    CudaBackend & operator=(const CudaBackend &) = delete;

    BackendKind kind() const override { return BackendKind::cuda; }
    std::string name() const override;  // "cuda:0 (NVIDIA H200, compute 9.0)"
    const CudaDeviceInfo & device_info() const;
    // Weight bytes prepare_weight put in VRAM and in page-locked host RAM (streamed).
    uint64_t resident_weight_bytes() const;
    uint64_t streamed_weight_bytes() const;

    Result<DeviceBuffer> alloc(size_t n_bytes) override;
    Result<DeviceBuffer> alloc_host(size_t n_bytes) override;
    BackendMemory device_memory() const override;
    Result<WeightView> prepare_weight(const WeightView & host) override;
    void copy_to_device(void * dst, const void * src_host, size_t n_bytes) override;
    void copy_to_host(void * dst_host, const void * src, size_t n_bytes) override;
    void copy_on_device(void * dst, const void * src, size_t n_bytes) override;
    void synchronize() override;

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
    struct Impl;
    explicit CudaBackend(std::unique_ptr<Impl> impl);
    void copy(void * dst, const void * src, size_t n_bytes);
    void gemm(const WeightView & w, const float * x, int64_t n_tokens, float * y);

    std::unique_ptr<Impl> impl_;
};

}  // namespace lr
