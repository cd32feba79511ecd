#pragma once
// The compute interface the model is written against. Every pointer argument lives in
// the backend's memory (host RAM for the CPU backend, VRAM for CUDA), except the small
// host arrays named *_host. Row-major: a matrix [n_rows][n_cols] has rows contiguous.
// Ops are asynchronous on devices that queue work; synchronize() waits for them.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "engine/backend/paged_kv_view.h"
#include "engine/common/dtype.h"
#include "engine/common/status.h"

namespace lr {

// A weight matrix [n_rows][n_cols] of `type` (GGUF ne0 = n_cols, ne1 = n_rows), or a
// 1-D F32 vector (n_rows = 1).
struct WeightView {
    DType type = DType::F32;
    int64_t n_cols = 0;
    int64_t n_rows = 0;
    const void * data = nullptr;
    size_t row_bytes() const { return lr::row_bytes(type, static_cast<size_t>(n_cols)); }
};

// Backend memory, freed when it goes out of scope.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(void * data, size_t n_bytes, std::function<void(void *)> free_fn)
        : data_(data), n_bytes_(n_bytes), free_(std::move(free_fn)) {}
    DeviceBuffer(DeviceBuffer && o) noexcept { swap(o); }
    DeviceBuffer & operator=(DeviceBuffer && o) noexcept {
        DeviceBuffer tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer & operator=(const DeviceBuffer &) = delete;
    ~DeviceBuffer() {
        if (data_ && free_) free_(data_);
    }

    void * data() const { return data_; }
    template <class T>
    T * as() const {
        return static_cast<T *>(data_);
    }
    size_t n_bytes() const { return n_bytes_; }

private:
    void swap(DeviceBuffer & o) noexcept {
        std::swap(data_, o.data_);
        std::swap(n_bytes_, o.n_bytes_);
        std::swap(free_, o.free_);
    }
    void * data_ = nullptr;
    size_t n_bytes_ = 0;
    std::function<void(void *)> free_;
};

enum class RopeMode { normal, neox };  // normal: pairs (2i, 2i+1) [llama]; neox: (i, i + n_rot/2) [qwen2]

// ggml's rope_ext: pair i of a head at position p turns by theta_extrap = p * base^(-2i/n_rot) /
// freq_factors[i]; theta_interp = freq_scale * theta_extrap. Without YaRN (ext_factor 0)
// the angle is theta_interp; with it, theta_interp * (1 - r) + theta_extrap * r, where r =
// ext_factor * ramp(i) blends from extrapolation (r 1, below corr_low) to interpolation (r 0,
// above corr_high), and the magnitude gains 1 + 0.1 ln(1 / freq_scale). cos and sin are
// multiplied by attn_factor (times that gain): rotated dimensions come out scaled.
struct RopeParams {
    RopeMode mode = RopeMode::normal;
    int32_t n_rot = 0;  // rotated dimensions per head (<= head_dim)
    int32_t head_dim = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;                  // 1/factor for linear scaling and YaRN
    const float * freq_factors = nullptr;     // [n_rot/2] divisors (llama3 rope_freqs, phi3 LongRoPE), backend memory, or nullptr
    float ext_factor = 0.0f;                  // YaRN's extrapolation mix (0: off)
    float attn_factor = 1.0f;                 // magnitude of cos and sin
    float corr_low = 0.0f, corr_high = 0.0f;  // YaRN's correction dims (rope_yarn_corr_dims)
};

struct AttentionParams {
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    float scale = 1.0f;  // applied to q.k
    // Sliding window: > 0, a query at position p sees only the keys at p' with p - p' < window
    // (the window counts the query itself); 0: every earlier key.
    int32_t window = 0;
    const float * sinks = nullptr;  // [n_head] learned logits joining each softmax denominator (gpt-oss), backend memory
};

// The FFN of each routed expert, before its output is weighted: SwiGLU, or gpt-oss's
// clamped form: g = min(gate, 7), u = clamp(up, -7, 7), out = (u + 1) * g * sigmoid(1.702 g)
// (ggml's swiglu_oai with alpha 1.702 and limit 7).
enum class ExpertActivation { swiglu, swiglu_oai };

// One layer's routed experts, stacked expert-major as GGUF stores them (ne = [cols, rows,
// n_expert]): expert e's rows of a matrix are rows [e * rows, (e + 1) * rows) of its view.
// A bias with data == nullptr is absent.
struct ExpertWeights {
    int32_t n_expert = 0;
    ExpertActivation act = ExpertActivation::swiglu;
    WeightView gate;       // [n_expert * n_ff][n_embd]
    WeightView up;         // [n_expert * n_ff][n_embd]
    WeightView down;       // [n_expert * n_embd][n_ff]
    WeightView gate_bias;  // [n_expert][n_ff] F32, or absent
    WeightView up_bias;    // [n_expert][n_ff] F32, or absent
    WeightView down_bias;  // [n_expert][n_embd] F32, or absent
    int64_t n_ff() const { return gate.n_rows / n_expert; }
    int64_t n_embd() const { return gate.n_cols; }
    // Expert e's rows of one of the stacks above.
    WeightView rows_of(const WeightView & stack, int32_t e) const {
        const int64_t rows = stack.n_rows / n_expert;
        return {stack.type, stack.n_cols, rows, static_cast<const uint8_t *>(stack.data) + size_t(e) * size_t(rows) * stack.row_bytes()};
    }
    // Expert e's row of a bias, or nullptr when it is absent.
    static const float * bias_of(const WeightView & bias, int32_t e) {
        return bias.data ? static_cast<const float *>(bias.data) + int64_t(e) * bias.n_cols : nullptr;
    }
};

// The router's choice for a ubatch: token t uses experts ids_host[t][0..n_used) with
// weights weights_host[t][...] (host memory, as the router computed them).
struct ExpertRoutes {
    int32_t n_used = 0;
    const int32_t * ids_host = nullptr;    // [n_tokens][n_used]
    const float * weights_host = nullptr;  // [n_tokens][n_used]
};

// The gated delta rule of Gated DeltaNet layers (qwen35), llama.cpp's build_delta_net. Per v
// head h, reading q/k head h % n_k_heads (tiled, not grouped), with S_h the head's
// [head_k_dim][head_v_dim] state, token by token:
//   S_h *= exp(g[t][h]);  d = (v[t][h] - S_h^T k[t]) * beta[t][h];  S_h += k[t] d^T;
//   out[t][h] = S_h^T q[t] / sqrt(head_k_dim)
// chunk_tokens 0 computes exactly that (llama.cpp's recurrent form: decode, and its fused
// CPU op); chunk_tokens C > 0 computes llama.cpp's chunked form (prefill, C = 64): per chunk
// of C tokens the decays as cumulative sums of g, the intra-chunk interactions through
// (I + strictly lower beta k k^T decay)^-1 by forward substitution, and one state update per
// chunk. Both give the same numbers up to float rounding (tests/backend/test_delta_rule).
struct DeltaRuleParams {
    int32_t n_k_heads = 0;
    int32_t n_v_heads = 0;  // a multiple of n_k_heads
    int32_t head_k_dim = 0;
    int32_t head_v_dim = 0;
    int32_t chunk_tokens = 0;  // 0: recurrent; else the chunked form with chunks of this many tokens
};

// Ops that only some architectures need; a backend that lacks some refuses such a model
// when it loads (missing_ops).
enum class BackendOpSet { gated_delta_net };

enum class BackendKind { cpu, cuda };

// Free and total bytes of the memory alloc() hands out; zeros for backends that allocate
// from host RAM (the planner reads /proc/meminfo for those).
struct BackendMemory {
    uint64_t free_bytes = 0;
    uint64_t total_bytes = 0;
};
// Device memory the ops keep for themselves (activations, GEMM and attention scratch):
// budgets planned from free device memory (weights, the KV device tier) leave it.
inline constexpr uint64_t kDeviceOpsReserveBytes = uint64_t(768) << 20;

class Backend {
public:
    virtual ~Backend() = default;

    virtual BackendKind kind() const = 0;
    virtual std::string name() const = 0;  // e.g. "cpu (avx2, 2 threads)"

    // Memory
    virtual Result<DeviceBuffer> alloc(size_t n_bytes) = 0;
    // Host RAM the CPU reads and writes directly and the copies below move fastest: page-
    // locked with CUDA (the KV cache's host tier), plain aligned RAM by default.
    virtual Result<DeviceBuffer> alloc_host(size_t n_bytes) {
        void * p = std::aligned_alloc(64, (n_bytes / 64 + 1) * 64);
        if (!p) return error(StatusCode::out_of_memory, "cannot allocate " + std::to_string(n_bytes) + " bytes of RAM");
        return DeviceBuffer(p, n_bytes, [](void * q) { std::free(q); });
    }
    virtual BackendMemory device_memory() const { return {}; }
    // Threads that each keep their own working buffers in RAM (attention scores): the CPU
    // backend's pool; a GPU keeps them on the device.
    virtual uint32_t host_threads() const { return 0; }
    // Makes a weight read from the model file usable by this backend. The CPU backend
    // points into the mapping (no copy); devices upload.
    virtual Result<WeightView> prepare_weight(const WeightView & host) = 0;
    // copy_to_device and copy_to_host see the effect of every op queued before them and
    // return when the bytes have arrived (src_host may be reused at once); they may be
    // called from another thread than the ops (the KV cache's I/O thread). copy_on_device
    // is queued like an op.
    virtual void copy_to_device(void * dst, const void * src_host, size_t n_bytes) = 0;
    virtual void copy_to_host(void * dst_host, const void * src, size_t n_bytes) = 0;
    virtual void copy_on_device(void * dst, const void * src, size_t n_bytes) = 0;
    virtual void synchronize() = 0;

    // out[i][:] = row ids_host[i] of w, as f32                         out: [n][w.n_cols]
    virtual void get_rows(const WeightView & w, const int32_t * ids_host, int64_t n, float * out) = 0;
    // y[t][r] = sum_c w[r][c] * x[t][c]                 x: [n_tokens][n_cols], y: [n_tokens][n_rows]
    virtual void matmul(const WeightView & w, const float * x, int64_t n_tokens, float * y) = 0;
    // x[t][c] += b[c]                                                  x: [n_rows][n_cols]
    virtual void add_bias(float * x, const WeightView & b, int64_t n_rows) = 0;
    // out[t][c] = x[t][c] / rms(x[t]) * w[c]; out may be x       x, out: [n_rows][n_cols]
    // (n_cols = w.n_cols: per-head norms pass n_rows = n_tokens * n_heads, n_cols = head_dim)
    virtual void rms_norm(const float * x, const WeightView & w, float eps, int64_t n_rows, float * out) = 0;
    // x[i] += y[i]
    virtual void add(float * x, const float * y, int64_t n) = 0;
    // out[r][c] = silu(gate[r][c]) * up[r][c], silu(x) = x / (1 + exp(-x)) with exp as ggml's
    // CPU computes it: ggml_expf (engine/common/ggml_expf.h) for the whole vectors of 16 of
    // each row, expf for the rest. out may be gate.      gate, up, out: [n_rows][n_cols]
    virtual void swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out) = 0;
    // out[i] = gelu(gate[i]) * up[i], GELU's tanh approximation as ggml's CPU computes it: from
    // a table over the f16 values (gate rounded to f16, the result rounded to f16), 0 at or
    // below -10 and gate at or above 10. out may be gate.
    virtual void geglu(const float * gate, const float * up, int64_t n, float * out) = 0;
    // x[i] *= s
    virtual void scale(float * x, int64_t n, float s) = 0;
    // x[t][c] *= scale_host[t]                                        x: [n_tokens][n_cols]
    virtual void scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale_host) = 0;
    // x[i] = cap * tanh(x[i] * (1 / cap)): logit soft-capping
    virtual void softcap(float * x, int64_t n, float cap) = 0;
    // The routed experts of a ubatch (llama.cpp's mul_mat_id): for each token t,
    //   out[t] = sum over j = 0, 1, ... of weights[t][j] * (down_e act(gate_e x[t] + gb_e, up_e x[t] + ub_e) + db_e)
    // with e = ids[t][j], summed in that order (llama.cpp's). Reads only the selected
    // experts' rows, each selected expert once per call.  x, out: [n_tokens][n_embd] (distinct)
    virtual void moe_ffn(const ExpertWeights & w, const float * x, int64_t n_tokens, const ExpertRoutes & routes, float * out) = 0;
    // x[i] *= sigmoid(gate[i]), sigmoid(g) = 1 / (1 + expf(-g)) (ggml_sigmoid, then ggml_mul):
    // gated attention's output gate.
    virtual void sigmoid_mul(float * x, const float * gate, int64_t n) = 0;
    // dst[r * dst_stride + c] = src[r * src_stride + c], c < n_cols (strides in floats):
    // the heads of interleaved projections, the sections of a row.
    virtual void copy_rows(const float * src, int64_t src_stride, int64_t n_rows, int64_t n_cols, float * dst, int64_t dst_stride) = 0;
    // out[r][c] = x[r][c] / max(|x[r]|, eps), the sum of squares in double (ggml_l2_norm).
    // out may be x.                                                  x, out: [n_rows][n_cols]
    virtual void l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) = 0;
    // Causal depthwise convolution, then SiLU (ggml_ssm_conv, ggml_silu): channel c's window is
    // its K - 1 earlier inputs (state[c], oldest first) followed by x[0..n)[c], and
    //   out[t][c] = silu(sum_i window[c][t + i] * kernel[c][i])   (summed from i = 0, in float)
    // with silu as swiglu's; state[c] becomes the channel's last K - 1 inputs.
    //          x, out: [n_tokens][n_channels]; kernel: [n_channels][K] F32; state: [n_channels][K - 1]
    virtual void causal_conv_silu(const float * x, int64_t n_tokens, const WeightView & kernel, float * state, float * out) = 0;
    // The gated delta rule over a ubatch (DeltaRuleParams). g_host, beta_host: [n_tokens][n_v_heads]
    // (host); q, k: [n_tokens][n_k_heads][head_k_dim]; v, out: [n_tokens][n_v_heads][head_v_dim];
    // state: [n_v_heads][head_v_dim][head_k_dim] (S_h transposed, llama.cpp's layout), updated.
    virtual void gated_delta_rule(const float * q, const float * k, const float * v, const float * g_host, const float * beta_host,
                                  int64_t n_tokens, const DeltaRuleParams & p, float * state, float * out) = 0;
    // The ops of `set` this backend does not have, named ("" when it has them all).
    virtual std::string missing_ops(BackendOpSet set) const {
        (void)set;
        return {};
    }
    // Rotates each head of each token by its position.           x: [n_tokens][n_heads][head_dim]
    virtual void rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos_host, const RopeParams & p) = 0;

    // Writes the ubatch's K, V and positions into the slots view.write_slots names,
    // encoding K and V in the view's codecs.          k, v: [n_tokens][n_head_kv][head_dim]
    virtual void kv_write(const PagedKvView & view, const float * k, const float * v, const int32_t * pos_host, int64_t n_tokens) = 0;
    // Causal attention of the ubatch's queries over the view: query t sees the slots whose
    // position is <= pos_host[t] (and, with p.window, > pos_host[t] - p.window). With
    // p.sinks, head h's softmax has one more logit, sinks[h] (not scaled, no value row: as
    // ggml_soft_max_ext's sinks), in its max and its sum. Adds the attention mass to
    // view.attn_mass when set: the weights of the keys, normalized by that whole sum.
    //                                                 q, out: [n_tokens][n_head][head_dim]
    virtual void attention(const float * q, int64_t n_tokens, const int32_t * pos_host, const PagedKvView & view, const AttentionParams & p,
                           float * out) = 0;
};

}  // namespace lr
