#include "engine/backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/backend/cpu/activations.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_handles.h"
#include "engine/backend/cuda/cuda_kernels.h"
#include "engine/backend/cuda/cuda_memory.h"
#include "engine/backend/expert_groups.h"
#include "engine/quant/quant.h"

namespace lr {

namespace {

constexpr size_t kSlabBytes = size_t(64) << 20;
constexpr size_t kUploadSegmentBytes = size_t(1) << 20;
// The GEMM path dequantizes (or, for streamed weights, copies) this much of a weight at a
// time: a 128256 x 4096 output matrix is 1 GiB in f16.
constexpr size_t kGemmChunkBytes = size_t(64) << 20;

// A copy stream of one thread, with its two events.
struct CopyLane {
    cuda::Stream stream;
    cuda::Event after_ops;  // recorded on the ops' stream: what the copy must see
    cuda::Event done;
};

}  // namespace

struct CudaBackend::Impl {
    explicit Impl(int device)
        : device_slabs(cuda::SlabAllocator::Kind::device, device, kSlabBytes),
          host_slabs(cuda::SlabAllocator::Kind::pinned_host, device, kSlabBytes) {}

    CudaBackendOptions options;
    CudaDeviceInfo info;
    cuda::Stream ops;  // every op, in order
    cuda::CublasHandle cublas;
    cuda::SlabAllocator device_slabs;
    cuda::SlabAllocator host_slabs;
    cuda::UploadRing uploads;
    cuda::Workspace ws_act, ws_weight, ws_scores, ws_partial, ws_moe, ws_delta;
    ExpertGroups expert_groups;  // moe_ffn's grouping, kept for its capacity

    // Weights.
    std::vector<DeviceBuffer> weights;        // everything prepare_weight allocated
    std::map<uintptr_t, uintptr_t> streamed;  // [begin, end) of the weights left in host RAM (mapped)
    uint64_t resident_bytes = 0, streamed_bytes = 0;
    bool streaming_started = false;

    // The thread that queues the ops (the last one that called an op).
    std::atomic<std::thread::id> ops_thread;

    // Copy lanes, one per calling thread.
    std::mutex lanes_mutex;
    std::unordered_map<std::thread::id, std::unique_ptr<CopyLane>> lanes;

    DeviceBuffer gelu_table;  // [65536] cpu::gelu_table(), for geglu

    // Whether w (or the rows of one) lies in a weight left in host RAM.
    bool is_streamed(const void * data) const {
        const auto at = reinterpret_cast<uintptr_t>(data);
        const auto it = streamed.upper_bound(at);
        return it != streamed.begin() && at < std::prev(it)->second;
    }

    // Host scratch for the tables the KV ops upload.
    std::vector<cuda::KvDevBlock> table;
    std::vector<uint32_t> slots;

    cudaStream_t stream() const { return ops.get(); }
    // The ops' stream, for an op: notes the calling thread as the ops' thread.
    cudaStream_t op_stream() {
        ops_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
        return ops.get();
    }
    cuda::WeightRows rows(const WeightView & w) const {
        return {.type = w.type,
                .data = static_cast<const uint8_t *>(w.data),
                .row_bytes = w.row_bytes(),
                .n_rows = w.n_rows,
                .n_cols = w.n_cols};
    }
    cuda::KvDevBlock dev_block(const PagedKvView & view, uint32_t b) const {
        const KvBlockLayout L = view.layout(b);
        return {.data = view.blocks[b].data,
                .k_codec = uint32_t(L.k_codec),
                .v_codec = uint32_t(L.v_codec),
                .k_row_bytes = uint32_t(L.k_row_bytes()),
                .v_row_bytes = uint32_t(L.v_row_bytes()),
                .v_offset = uint32_t(L.v_offset()),
                .pos_offset = uint32_t(L.pos_offset())};
    }
    cuda::KvDims dims(const KvBlockShape & s) const {
        return {.block_tokens = s.block_tokens,
                .n_head_kv = s.n_head_kv,
                .head_dim = s.head_dim,
                .codec_group = kv_codec_group(s.head_dim)};
    }
};

// ---- creation -----------------------------------------------------------------------------------

bool cuda_reads_weight_type(DType type) { return cuda::kernels_read(type); }

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const CudaBackendOptions & options) {
    const CudaProbe probe = probe_cuda_devices();
    if (probe.devices.empty()) return error(StatusCode::unsupported, "CUDA: " + probe.problem);
    const auto it = std::find_if(probe.devices.begin(), probe.devices.end(),
                                 [&](const CudaDeviceInfo & d) { return d.index == options.device; });
    if (it == probe.devices.end()) {
        return error(StatusCode::invalid_argument, "CUDA: there is no device " + std::to_string(options.device) + " (" +
                                                       std::to_string(probe.devices.size()) + " found)");
    }
    const CudaDeviceInfo & info = *it;
    if (info.cc_major < kCudaMinComputeMajor) {
        return error(StatusCode::unsupported, "CUDA: " + info.name + " has compute capability " + std::to_string(info.cc_major) + "." +
                                                  std::to_string(info.cc_minor) + "; this build needs 8.0 or newer");
    }
    LR_RETURN_IF_ERROR(cuda::cuda_status(cudaSetDevice(info.index), "CUDA: cannot use device " + std::to_string(info.index)));

    auto impl = std::make_unique<Impl>(info.index);
    impl->options = options;
    impl->info = info;
    LR_ASSIGN_OR_RETURN(impl->ops, cuda::Stream::create());
    {
        Result<cuda::CublasHandle> handle = cuda::CublasHandle::create();
        if (!handle.ok()) return error(handle.status().code(), "CUDA: " + handle.status().message());
        impl->cublas = std::move(handle).value();
    }
    if (const cublasStatus_t st = impl->cublas.api().set_stream(impl->cublas.get(), impl->stream()); st != CUBLAS_STATUS_SUCCESS) {
        return error(StatusCode::unsupported, std::string("CUDA: cublasSetStream: ") + cuda::cublas_status_string(st));
    }
    LR_RETURN_IF_ERROR(impl->uploads.init(impl->stream(), kUploadSegmentBytes));
    for (cuda::Workspace * ws : {&impl->ws_act, &impl->ws_weight, &impl->ws_scores, &impl->ws_partial, &impl->ws_moe, &impl->ws_delta}) {
        ws->set_stream(impl->stream());
    }

    // A first kernel: fails here, with a clear message, when the build has no code for
    // this GPU (rather than in the middle of a forward pass).
    void * flag = nullptr;
    LR_RETURN_IF_ERROR(cuda::cuda_status(cudaMalloc(&flag, sizeof(int)), "CUDA: cannot allocate VRAM"));
    int value = 0;
    cudaError_t err = cuda::launch_self_test(static_cast<int *>(flag), impl->stream());
    if (err == cudaSuccess) err = cudaMemcpyAsync(&value, flag, sizeof(int), cudaMemcpyDeviceToHost, impl->stream());
    if (err == cudaSuccess) err = cudaStreamSynchronize(impl->stream());
    (void)cudaFree(flag);
    if (err != cudaSuccess || value != 42) {
        return error(StatusCode::unsupported, "CUDA: a test kernel failed on " + info.name + " (" +
                                                  (err != cudaSuccess ? std::string(cudaGetErrorString(err)) : "wrong result") + ")");
    }
    // GELU's table (the CPU's, so geglu gives the CPU's bits).
    const size_t table_bytes = (size_t(1) << 16) * sizeof(float);
    LR_ASSIGN_OR_RETURN(impl->gelu_table, impl->device_slabs.alloc(table_bytes));
    LR_RETURN_IF_ERROR(cuda::cuda_status(cudaMemcpy(impl->gelu_table.data(), cpu::gelu_table(), table_bytes, cudaMemcpyHostToDevice),
                                         "CUDA: cannot upload the GELU table"));
    return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaBackend::~CudaBackend() {
    // Queued work may still use buffers that go with the backend.
    if (impl_ && impl_->ops.get()) (void)cudaStreamSynchronize(impl_->stream());
}

std::string CudaBackend::name() const {
    const CudaDeviceInfo & d = impl_->info;
    std::string s = "cuda:" + std::to_string(d.index) + " (" + d.name + ", compute " + std::to_string(d.cc_major) + "." +
                    std::to_string(d.cc_minor);
    if (impl_->streamed_bytes > 0) {
        s += ", " + std::to_string(impl_->streamed_bytes >> 20) + " MiB of weights streamed from RAM";
    }
    return s + ")";
}

const CudaDeviceInfo & CudaBackend::device_info() const { return impl_->info; }
uint64_t CudaBackend::resident_weight_bytes() const { return impl_->resident_bytes; }
uint64_t CudaBackend::streamed_weight_bytes() const { return impl_->streamed_bytes; }

// ---- memory ---------------------------------------------------------------------------------------

Result<DeviceBuffer> CudaBackend::alloc(size_t n_bytes) { return impl_->device_slabs.alloc(n_bytes); }

Result<DeviceBuffer> CudaBackend::alloc_host(size_t n_bytes) {
    Result<DeviceBuffer> pinned = impl_->host_slabs.alloc(n_bytes);
    if (pinned.ok()) return pinned;
    // Page-locked memory is limited (ulimit -l, container limits): plain RAM still works,
    // its copies go through the driver's staging buffers.
    return Backend::alloc_host(n_bytes);
}

BackendMemory CudaBackend::device_memory() const {
    size_t free_b = 0, total_b = 0;
    LR_CUDA_CHECK(cudaSetDevice(impl_->info.index));
    LR_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return {.free_bytes = free_b, .total_bytes = total_b};
}

Result<WeightView> CudaBackend::prepare_weight(const WeightView & host) {
    if (!quant::can_dequantize(host.type)) {
        return error(StatusCode::unsupported,
                     "weight type " + std::string(dtype_name(host.type)) + " is not supported by the CUDA backend");
    }
    WeightView src = host;
    std::vector<float> converted;
    if (!cuda::kernels_read(host.type)) {
        // The fallback for types without a kernel: F32 rows, dequantized once here.
        converted.resize(size_t(host.n_rows) * size_t(host.n_cols));
        for (int64_t r = 0; r < host.n_rows; ++r) {
            quant::dequantize_row(host.type, static_cast<const uint8_t *>(host.data) + size_t(r) * host.row_bytes(),
                                  converted.data() + size_t(r) * size_t(host.n_cols), size_t(host.n_cols));
        }
        src = {DType::F32, host.n_cols, host.n_rows, converted.data()};
    }
    const size_t n_bytes = size_t(src.n_rows) * src.row_bytes();
    const bool vector = src.n_rows == 1;
    bool resident = vector || (!impl_->streaming_started && impl_->resident_bytes + n_bytes <= impl_->options.weight_vram_budget_bytes);
    if (!impl_->info.can_map_host) resident = true;  // no zero-copy reads: every weight in VRAM
    WeightView out = src;
    if (resident) {
        void * dev = nullptr;
        LR_RETURN_IF_ERROR(
            cuda::cuda_status(cudaMalloc(&dev, std::max<size_t>(n_bytes, 1)),
                              "out of VRAM for the weights (" + std::to_string(n_bytes >> 20) + " MiB more): lower --gpu-layers"));
        impl_->weights.emplace_back(dev, n_bytes, [](void * p) { (void)cudaFree(p); });
        // From pageable memory (the file mapping): the driver stages it; wait so that the
        // source may go (the F32 conversion buffer).
        LR_CUDA_CHECK(cudaMemcpyAsync(dev, src.data, n_bytes, cudaMemcpyHostToDevice, impl_->stream()));
        LR_CUDA_CHECK(cudaStreamSynchronize(impl_->stream()));
        impl_->resident_bytes += n_bytes;
        out.data = dev;
    } else {
        impl_->streaming_started = true;
        void * pinned = nullptr;
        LR_RETURN_IF_ERROR(
            cuda::cuda_status(cudaHostAlloc(&pinned, std::max<size_t>(n_bytes, 1), cudaHostAllocMapped | cudaHostAllocPortable),
                              "cannot allocate " + std::to_string(n_bytes >> 20) +
                                  " MiB of page-locked RAM for streamed weights: raise --gpu-layers or the memlock limit"));
        impl_->weights.emplace_back(pinned, n_bytes, [](void * p) { (void)cudaFreeHost(p); });
        std::memcpy(pinned, src.data, n_bytes);
        void * mapped = nullptr;
        LR_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
        impl_->streamed[reinterpret_cast<uintptr_t>(mapped)] = reinterpret_cast<uintptr_t>(mapped) + n_bytes;
        impl_->streamed_bytes += n_bytes;
        out.data = mapped;
    }
    return out;
}

// ---- copies -----------------------------------------------------------------------------------------

void CudaBackend::copy(void * dst, const void * src, size_t n_bytes) {
    if (n_bytes == 0) return;
    LR_CUDA_CHECK(cudaSetDevice(impl_->info.index));  // the calling thread may be new to CUDA
    CopyLane * lane = nullptr;
    {
        std::lock_guard lock(impl_->lanes_mutex);
        std::unique_ptr<CopyLane> & slot = impl_->lanes[std::this_thread::get_id()];
        if (!slot) {
            auto stream = cuda::Stream::create();
            auto after = cuda::Event::create();
            auto done = cuda::Event::create();
            if (!stream.ok() || !after.ok() || !done.ok())
                cuda::fail(__FILE__, __LINE__, "copy lane", "cannot create a CUDA stream or event");
            slot = std::make_unique<CopyLane>(CopyLane{std::move(stream).value(), std::move(after).value(), std::move(done).value()});
        }
        lane = slot.get();
    }
    // Everything queued on the ops' stream so far comes first (on the GPU, not here).
    LR_CUDA_CHECK(cudaEventRecord(lane->after_ops.get(), impl_->stream()));
    LR_CUDA_CHECK(cudaStreamWaitEvent(lane->stream.get(), lane->after_ops.get(), 0));
    LR_CUDA_CHECK(cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyDefault, lane->stream.get()));
    LR_CUDA_CHECK(cudaEventRecord(lane->done.get(), lane->stream.get()));
    LR_CUDA_CHECK(cudaEventSynchronize(lane->done.get()));
}

void CudaBackend::copy_to_device(void * dst, const void * src_host, size_t n_bytes) {
    if (n_bytes == 0) return;
    // From the ops' own thread and pageable memory (the KV cache writing a new block, the
    // attention mass's zeros): queued behind the ops, which orders it after them, and the
    // driver stages pageable memory before returning, so src may be reused at once. The
    // GPU keeps running. Page-locked sources (the host tier) could change before a queued
    // DMA reads them: those, and other threads, take the waiting path.
    if (std::this_thread::get_id() == impl_->ops_thread.load(std::memory_order_relaxed)) {
        cudaPointerAttributes attr{};
        if (cudaPointerGetAttributes(&attr, src_host) == cudaSuccess && attr.type == cudaMemoryTypeUnregistered) {
            LR_CUDA_CHECK(cudaMemcpyAsync(dst, src_host, n_bytes, cudaMemcpyHostToDevice, impl_->stream()));
            return;
        }
        (void)cudaGetLastError();
    }
    copy(dst, src_host, n_bytes);
}
void CudaBackend::copy_to_host(void * dst_host, const void * src, size_t n_bytes) { copy(dst_host, src, n_bytes); }

void CudaBackend::copy_on_device(void * dst, const void * src, size_t n_bytes) {
    if (n_bytes == 0) return;
    LR_CUDA_CHECK(cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyDeviceToDevice, impl_->stream()));
}

void CudaBackend::synchronize() { LR_CUDA_CHECK(cudaStreamSynchronize(impl_->stream())); }

// ---- weights ----------------------------------------------------------------------------------------

void CudaBackend::get_rows(const WeightView & w, const int32_t * ids_host, int64_t n, float * out) {
    for (int64_t i = 0; i < n; ++i) LR_ASSERT(ids_host[i] >= 0 && ids_host[i] < w.n_rows);
    const int32_t * ids = impl_->uploads.upload(ids_host, size_t(n));
    cuda::launch_get_rows(impl_->rows(w), ids, n, out, impl_->op_stream());
}

void CudaBackend::matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) {
    if (n_tokens <= cuda::kMatvecMaxTokens) {
        cuda::launch_matvec(impl_->rows(w), x, n_tokens, y, w.n_rows, impl_->op_stream());
    } else {
        gemm(w, x, n_tokens, y);
    }
}

// Prefill: y^T = W x^T with cuBLAS (column-major: W is a col-major [n_cols][n_rows] matrix,
// so op(A) = A^T; x^T is col-major [n_cols][n_tokens]; y^T col-major [n_rows][n_tokens]).
// F32 weights: SGEMM on x as it is. F16/BF16 weights: x rounded to their type (as the CPU
// does), tensor cores with f32 accumulation. Quantized weights: dequantized to f16 a chunk of
// rows at a time, x rounded to f16. Streamed float weights are copied to VRAM a chunk at a
// time first; streamed quantized weights are read over PCIe by the dequantizer.
void CudaBackend::gemm(const WeightView & w, const float * x, int64_t n_tokens, float * y) {
    Impl & m = *impl_;
    const cudaStream_t s = m.op_stream();
    const cublasHandle_t h = m.cublas.get();
    const cuda::CublasApi & blas = m.cublas.api();
    const bool streamed = m.is_streamed(w.data);
    const bool is_f32 = w.type == DType::F32, is_bf16 = w.type == DType::BF16, is_f16 = w.type == DType::F16;
    const bool float_weights = is_f32 || is_f16 || is_bf16;
    const int k = int(w.n_cols), n = int(n_tokens), ldc = int(w.n_rows);
    const float alpha = 1.0f, beta = 0.0f;
    const auto * wbytes = static_cast<const uint8_t *>(w.data);

    const void * xa = x;
    if (!is_f32) {
        void * rounded = m.ws_act.get(size_t(n_tokens) * size_t(w.n_cols) * 2);
        cuda::launch_round_activations(x, n_tokens * w.n_cols, is_bf16, rounded, s);
        xa = rounded;
    }
    const size_t elem_bytes = is_f32 ? 4 : 2;
    const int64_t rows_per_chunk = std::max<int64_t>(1, int64_t(kGemmChunkBytes / (size_t(w.n_cols) * elem_bytes)));
    for (int64_t r0 = 0; r0 < w.n_rows; r0 += rows_per_chunk) {
        const int64_t r1 = std::min(w.n_rows, r0 + rows_per_chunk);
        const int rows = int(r1 - r0);
        const void * a = nullptr;
        if (float_weights && !streamed) {
            a = wbytes + size_t(r0) * w.row_bytes();
        } else if (float_weights) {
            void * staged = m.ws_weight.get(size_t(rows) * w.row_bytes());
            LR_CUDA_CHECK(cudaMemcpyAsync(staged, wbytes + size_t(r0) * w.row_bytes(), size_t(rows) * w.row_bytes(), cudaMemcpyDefault, s));
            a = staged;
        } else {
            void * dequantized = m.ws_weight.get(size_t(rows) * size_t(w.n_cols) * 2);
            cuda::launch_dequantize_f16(m.rows(w), r0, r1, dequantized, s);
            a = dequantized;
        }
        if (is_f32) {
            LR_CUBLAS_CHECK(blas.sgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &alpha, static_cast<const float *>(a), k,
                                       static_cast<const float *>(xa), k, &beta, y + r0, ldc));
        } else {
            const cudaDataType t = is_bf16 ? CUDA_R_16BF : CUDA_R_16F;
            LR_CUBLAS_CHECK(blas.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &alpha, a, t, k, xa, t, k, &beta, y + r0, CUDA_R_32F, ldc,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
    }
}

// ---- element-wise -------------------------------------------------------------------------------------

void CudaBackend::add_bias(float * x, const WeightView & b, int64_t n_rows) {
    LR_ASSERT(b.type == DType::F32);
    cuda::launch_add_bias(x, static_cast<const float *>(b.data), n_rows, b.n_cols, impl_->op_stream());
}

void CudaBackend::rms_norm(const float * x, const WeightView & w, float eps, int64_t n_rows, float * out) {
    LR_ASSERT(w.type == DType::F32);
    cuda::launch_rms_norm(x, static_cast<const float *>(w.data), eps, n_rows, w.n_cols, out, impl_->op_stream());
}

void CudaBackend::add(float * x, const float * y, int64_t n) { cuda::launch_add(x, y, n, impl_->op_stream()); }

void CudaBackend::swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out) {
    cuda::launch_swiglu(gate, up, n_rows, n_cols, out, impl_->op_stream());
}

void CudaBackend::geglu(const float * gate, const float * up, int64_t n, float * out) {
    cuda::launch_geglu(gate, up, n, out, impl_->gelu_table.as<float>(), impl_->op_stream());
}

void CudaBackend::scale(float * x, int64_t n, float s) { cuda::launch_scale(x, n, s, impl_->op_stream()); }

void CudaBackend::scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale_host) {
    const float * scale = impl_->uploads.upload(scale_host, size_t(n_tokens));
    cuda::launch_scale_tokens(x, n_tokens, n_cols, scale, impl_->op_stream());
}

// ---- Gated DeltaNet ----------------------------------------------------------------------------------

void CudaBackend::sigmoid_mul(float * x, const float * gate, int64_t n) { cuda::launch_sigmoid_mul(x, gate, n, impl_->op_stream()); }

// A strided copy is cudaMemcpy2D's job: no kernel.
void CudaBackend::copy_rows(const float * src, int64_t src_stride, int64_t n_rows, int64_t n_cols, float * dst, int64_t dst_stride) {
    LR_ASSERT(n_cols <= src_stride && n_cols <= dst_stride);
    if (n_rows == 0 || n_cols == 0) return;
    constexpr size_t f = sizeof(float);
    LR_CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(dst_stride) * f, src, size_t(src_stride) * f, size_t(n_cols) * f, size_t(n_rows),
                                    cudaMemcpyDeviceToDevice, impl_->op_stream()));
}

void CudaBackend::l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) {
    cuda::launch_l2_norm(x, n_rows, n_cols, eps, out, impl_->op_stream());
}

void CudaBackend::causal_conv_silu(const float * x, int64_t n_tokens, const WeightView & kernel, float * state, float * out) {
    LR_ASSERT(kernel.type == DType::F32 && kernel.n_cols >= 2);
    LR_ASSERT(x != out);  // a thread per output reads other tokens' inputs
    cuda::launch_causal_conv_silu(x, n_tokens, static_cast<const float *>(kernel.data), kernel.n_rows, kernel.n_cols, state, out,
                                  impl_->op_stream());
}

void CudaBackend::gated_delta_rule(const float * q, const float * k, const float * v, const float * g_host, const float * beta_host,
                                   int64_t n_tokens, const DeltaRuleParams & p, float * state, float * out) {
    LR_ASSERT(p.n_k_heads > 0 && p.n_v_heads % p.n_k_heads == 0 && p.chunk_tokens >= 0);
    Impl & m = *impl_;
    const size_t n_gates = size_t(n_tokens) * size_t(p.n_v_heads);
    const size_t scratch_bytes = cuda::delta_rule_scratch_bytes(p);
    const cuda::DeltaRuleArgs args{.q = q,
                                   .k = k,
                                   .v = v,
                                   .g = m.uploads.upload(g_host, n_gates),
                                   .beta = m.uploads.upload(beta_host, n_gates),
                                   .state = state,
                                   .out = out,
                                   .scratch = scratch_bytes > 0 ? static_cast<float *>(m.ws_delta.get(scratch_bytes)) : nullptr,
                                   .n_tokens = n_tokens,
                                   .p = p};
    cuda::launch_delta_rule(args, m.op_stream());
}

void CudaBackend::softcap(float * x, int64_t n, float cap) { cuda::launch_softcap(x, n, cap, impl_->op_stream()); }

// The tokens gathered in expert order, then per chosen expert: gate and up over its tokens
// (matvec or GEMM, as matmul chooses), biases, the activation over every slot, down, its
// bias; then the weighted sum back in token order.
void CudaBackend::moe_ffn(const ExpertWeights & w, const float * x, int64_t n_tokens, const ExpertRoutes & routes, float * out) {
    Impl & m = *impl_;
    LR_ASSERT(out != x && routes.n_used > 0 && routes.n_used <= w.n_expert);
    if (n_tokens == 0) return;
    ExpertGroups & g = m.expert_groups;
    g.assign(routes, n_tokens, w.n_expert);
    const int64_t n_slots = g.n_slots(), n_embd = w.n_embd(), n_ff = w.n_ff();
    const cudaStream_t s = m.op_stream();
    auto * xg = static_cast<float *>(m.ws_moe.get(size_t(n_slots * (2 * n_embd + 2 * n_ff)) * sizeof(float)));  // [n_slots][n_embd]
    float * gate = xg + n_slots * n_embd;                                                                       // [n_slots][n_ff]
    float * up = gate + n_slots * n_ff;                                                                         // [n_slots][n_ff]
    float * down = up + n_slots * n_ff;                                                                         // [n_slots][n_embd]
    cuda::launch_gather_rows(x, m.uploads.upload(g.slot_token.data(), size_t(n_slots)), n_slots, n_embd, xg, s);
    for (int32_t e : g.active) {
        const int64_t first = g.first(e), count = g.count(e);
        matmul(w.rows_of(w.gate, e), xg + first * n_embd, count, gate + first * n_ff);
        matmul(w.rows_of(w.up, e), xg + first * n_embd, count, up + first * n_ff);
        if (const float * b = ExpertWeights::bias_of(w.gate_bias, e)) cuda::launch_add_bias(gate + first * n_ff, b, count, n_ff, s);
        if (const float * b = ExpertWeights::bias_of(w.up_bias, e)) cuda::launch_add_bias(up + first * n_ff, b, count, n_ff, s);
    }
    if (w.act == ExpertActivation::swiglu_oai) {
        cuda::launch_swiglu_oai(gate, up, n_slots * n_ff, gate, s);
    } else {
        cuda::launch_swiglu(gate, up, n_slots, n_ff, gate, s);
    }
    for (int32_t e : g.active) {
        const int64_t first = g.first(e), count = g.count(e);
        matmul(w.rows_of(w.down, e), gate + first * n_ff, count, down + first * n_embd);
        if (const float * b = ExpertWeights::bias_of(w.down_bias, e)) cuda::launch_add_bias(down + first * n_embd, b, count, n_embd, s);
    }
    const int32_t * slot_of = m.uploads.upload(g.slot_of.data(), g.slot_of.size());
    const float * weights = m.uploads.upload(routes.weights_host, size_t(n_tokens * routes.n_used));
    cuda::launch_moe_combine(down, slot_of, weights, routes.n_used, n_tokens, n_embd, out, s);
}

void CudaBackend::rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos_host, const RopeParams & p) {
    LR_ASSERT(p.n_rot % 2 == 0 && p.n_rot <= p.head_dim);
    const int32_t * pos = impl_->uploads.upload(pos_host, size_t(n_tokens));
    cuda::launch_rope(x, n_tokens, n_heads, pos, cuda::rope_args(p), impl_->op_stream());
}

// ---- paged KV -----------------------------------------------------------------------------------------

void CudaBackend::kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos_host, int64_t n_tokens) {
    Impl & m = *impl_;
    LR_ASSERT(int64_t(view.write_slots.size()) == n_tokens);
    const uint32_t bt = view.shape.block_tokens;
    m.table.clear();
    m.slots.clear();
    for (int64_t i = 0; i < n_tokens; ++i) {
        const uint32_t slot = view.write_slots[size_t(i)];
        LR_ASSERT(slot / bt < view.n_blocks());
        m.table.push_back(m.dev_block(view, slot / bt));
        m.slots.push_back(slot % bt);
    }
    const cuda::KvDevBlock * blocks = m.uploads.upload(m.table.data(), m.table.size());
    const uint32_t * slots = m.uploads.upload(m.slots.data(), m.slots.size());
    const int32_t * pos = m.uploads.upload(pos_host, size_t(n_tokens));
    cuda::launch_kv_write(blocks, slots, n_tokens, k, v, pos, m.dims(view.shape), m.op_stream());
}

void CudaBackend::attention(const float * q, int64_t n_tokens, const int32_t * pos_host, const PagedKvView & view,
                            const AttentionParams & p, float * out) {
    Impl & m = *impl_;
    LR_ASSERT(p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0 && uint32_t(p.head_dim) == view.shape.head_dim);
    cuda::AttentionShape shape{
        .n_tokens = n_tokens,
        .n_head = p.n_head,
        .n_head_kv = p.n_head_kv,
        .n_blocks = view.n_blocks(),
        .dims = m.dims(view.shape),
        .scale = p.scale,
        .window = p.window,
        .f16_k = true,
        .f16_v = true,
        .mass = view.attn_mass != nullptr,
        .n_sm = m.info.n_sm,
        .page_tokens = view.page_tokens,
    };
    m.table.clear();
    for (uint32_t b = 0; b < view.n_blocks(); ++b) {
        shape.f16_k = shape.f16_k && view.blocks[b].k_codec == KvCodec::f16;
        shape.f16_v = shape.f16_v && view.blocks[b].v_codec == KvCodec::f16;
        m.table.push_back(m.dev_block(view, b));
    }
    const cuda::AttentionPlan plan = cuda::attention_plan(shape);
    cuda::AttentionArgs args{
        .q = q,
        .pos = m.uploads.upload(pos_host, size_t(n_tokens)),
        .blocks = m.table.empty() ? nullptr : m.uploads.upload(m.table.data(), m.table.size()),
        .mass = view.attn_mass,
        .out = out,
        .scores = nullptr,
        .partial = nullptr,
        .read_pages = view.read_pages.empty() ? nullptr : m.uploads.upload(view.read_pages.data(), view.read_pages.size()),
        .sinks = p.sinks,
    };
    if (view.n_blocks() > 0) {
        args.scores = static_cast<float *>(m.ws_scores.get(plan.scores_bytes));
        if (plan.partial_bytes > 0) args.partial = static_cast<float *>(m.ws_partial.get(plan.partial_bytes));
    }
    cuda::launch_attention(shape, plan, args, m.op_stream());
}

}  // namespace lr
