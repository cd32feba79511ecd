#pragma once
// The launchers of the CUDA kernels, one op per .cu file. Host code (cuda_backend.cpp)
// calls them with device pointers and a stream; each launch is checked. Kernels never
// synchronize and allocate nothing: scratch comes from the caller.
//
// The CPU backend's scalar code is the spec of every kernel (engine/backend/cpu,
// engine/quant, kv_codec_rows.cpp); each file says where it follows it exactly and where it
// only approximates it (accumulation orders, exp, the tensor-core GEMM).

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/common/dtype.h"

namespace lr::cuda {

// ---- Weights: get_rows.cu, matvec.cu, dequantize.cu --------------------------------------------

// Whether the kernels read weights of `type` directly: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL. The backend converts other types to F32 when it loads them.
bool kernels_read(DType type);

// A weight matrix as the kernels read it: rows of row_bytes in device memory or in mapped
// page-locked host memory (streamed layers, read over PCIe).
struct WeightRows {
    DType type = DType::F32;
    const uint8_t * data = nullptr;  // [n_rows] rows of row_bytes
    size_t row_bytes = 0;
    int64_t n_rows = 0;
    int64_t n_cols = 0;
};

// out[i][c] = w[ids[i]][c], bit-identical to quant::dequantize_row.
//                                          ids: [n] (device), out: [n][n_cols]
void launch_get_rows(const WeightRows & w, const int32_t * ids, int64_t n, float * out, cudaStream_t stream);

// The decode product for up to kMatvecMaxTokens tokens: y[t][r] = sum_c w[r][c] * x[t][c],
// in float, with x rounded to f16 (bf16) first for F16 (BF16) weights as the CPU does; the
// quantized types use x as it is (the CPU quantizes it to q8: a bounded difference).
//                                          x: [n_tokens][n_cols], y: [n_tokens][y_stride]
inline constexpr int64_t kMatvecMaxTokens = 8;
void launch_matvec(const WeightRows & w, const float * x, int64_t n_tokens, float * y, int64_t y_stride, cudaStream_t stream);

// Rows [r0, r1) of w as f16, for the tensor-core GEMM.     out: [r1 - r0][n_cols] (__half)
void launch_dequantize_f16(const WeightRows & w, int64_t r0, int64_t r1, void * out, cudaStream_t stream);
// out[i] = x[i] rounded to f16 (to bf16 when bf16 is set).  out: [n] (__half or __nv_bfloat16)
void launch_round_activations(const float * x, int64_t n, bool bf16, void * out, cudaStream_t stream);

// ---- Element-wise: elementwise.cu, geglu.cu, rms_norm.cu, rope.cu --------------------------

void launch_add(float * x, const float * y, int64_t n, cudaStream_t stream);                            // x += y
void launch_add_bias(float * x, const float * b, int64_t n_rows, int64_t n_cols, cudaStream_t stream);  // x[r] += b
// out[r][c] = silu(gate[r][c]) * up[r][c], with ggml_expf for the whole vectors of 16 of a row
// (Backend::swiglu).                          gate, up, out: [n_rows][n_cols]
void launch_swiglu(const float * gate, const float * up, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream);
void launch_scale(float * x, int64_t n, float s, cudaStream_t stream);  // x *= s
// x[t][c] *= scale[t]                        x: [n_tokens][n_cols], scale: [n_tokens] (device)
void launch_scale_tokens(float * x, int64_t n_tokens, int64_t n_cols, const float * scale, cudaStream_t stream);
void launch_softcap(float * x, int64_t n, float cap, cudaStream_t stream);  // x = cap tanh(x / cap)
// out[i] = gelu(gate[i]) * up[i] from the CPU's GELU table (cpu::gelu_table(), [65536] on the device).
void launch_geglu(const float * gate, const float * up, int64_t n, float * out, const float * table, cudaStream_t stream);
void launch_rms_norm(const float * x, const float * w, float eps, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream);

struct RopeArgs {
    bool neox = false;  // pairs (i, i + n_rot/2), else (2i, 2i+1)
    int32_t n_rot = 0;
    int32_t head_dim = 0;
    float freq_scale = 1.0f;
    float theta_scale = 1.0f;              // freq_base^(-2/n_rot), computed on the host as the CPU does
    const float * freq_factors = nullptr;  // [n_rot/2] (device) or nullptr
    float ext_factor = 0.0f;               // YaRN (RopeParams)
    float corr_low = 0.0f, corr_high = 0.0f;
    float mscale = 1.0f;  // cos and sin times this: attn_factor, with YaRN's gain (computed on the host as the CPU does)
};
// RopeArgs of RopeParams, with the host computations the CPU does (theta_scale, mscale).
inline RopeArgs rope_args(const RopeParams & p) {
    RopeArgs a{
        .neox = p.mode == RopeMode::neox,
        .n_rot = p.n_rot,
        .head_dim = p.head_dim,
        .freq_scale = p.freq_scale,
        .theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot)),
        .freq_factors = p.freq_factors,
        .ext_factor = p.ext_factor,
        .corr_low = p.corr_low,
        .corr_high = p.corr_high,
        .mscale = p.attn_factor,
    };
    if (p.ext_factor != 0.0f) a.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    return a;
}
//                                          x: [n_tokens][n_heads][head_dim], pos: [n_tokens] (device)
void launch_rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, const RopeArgs & a, cudaStream_t stream);

// ---- Gated DeltaNet: elementwise.cu, l2_norm.cu, causal_conv.cu, delta_rule.cu ----------------

// x[i] *= sigmoid(gate[i])                                    (Backend::sigmoid_mul)
void launch_sigmoid_mul(float * x, const float * gate, int64_t n, cudaStream_t stream);
// out[r] = x[r] / max(|x[r]|, eps), the CPU's bits (Backend::l2_norm).  x, out: [n_rows][n_cols]
void launch_l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out, cudaStream_t stream);
// Backend::causal_conv_silu.  x, out: [n_tokens][n_channels]; kernel: [n_channels][width];
// state: [n_channels][width - 1] (device), updated.
void launch_causal_conv_silu(const float * x, int64_t n_tokens, const float * kernel, int64_t n_channels, int64_t width, float * state,
                             float * out, cudaStream_t stream);

// Backend::gated_delta_rule, every pointer on the device.
struct DeltaRuleArgs {
    const float * q = nullptr;     // [n_tokens][n_k_heads][head_k_dim]
    const float * k = nullptr;     // [n_tokens][n_k_heads][head_k_dim]
    const float * v = nullptr;     // [n_tokens][n_v_heads][head_v_dim]
    const float * g = nullptr;     // [n_tokens][n_v_heads]
    const float * beta = nullptr;  // [n_tokens][n_v_heads]
    float * state = nullptr;       // [n_v_heads][head_v_dim][head_k_dim], updated
    float * out = nullptr;         // [n_tokens][n_v_heads][head_v_dim]
    float * scratch = nullptr;     // delta_rule_scratch_bytes(p)
    int64_t n_tokens = 0;
    DeltaRuleParams p;
};
// The scratch of the chunked form (0 for the recurrent one).
size_t delta_rule_scratch_bytes(const DeltaRuleParams & p);
void launch_delta_rule(const DeltaRuleArgs & a, cudaStream_t stream);

// ---- Routed experts: moe.cu ----------------------------------------------------------------------

// out[i][c] = x[rows[i]][c]                 rows: [n_rows] (device), out: [n_rows][n_cols]
void launch_gather_rows(const float * x, const int32_t * rows, int64_t n_rows, int64_t n_cols, float * out, cudaStream_t stream);
// out[i] = gpt-oss's clamped SwiGLU of gate[i], up[i] (moe.cuh); out may be gate.
void launch_swiglu_oai(const float * gate, const float * up, int64_t n, float * out, cudaStream_t stream);
// out[t][c] = sum_j y[slot_of[t][j]][c] * weights[t][j], in j order (Backend::moe_ffn).
//                                          y: [n_slots][n_cols], slot_of, weights: [n_tokens][n_used] (device)
void launch_moe_combine(const float * y, const int32_t * slot_of, const float * weights, int32_t n_used, int64_t n_tokens, int64_t n_cols,
                        float * out, cudaStream_t stream);

// ---- Paged KV: kv_write.cu, attention.cu -------------------------------------------------------

// One block of a view, with the offsets of its layout (KvBlockLayout, computed on the host).
struct KvDevBlock {
    uint8_t * data = nullptr;
    uint32_t k_codec = 0, v_codec = 0;  // KvCodec values
    uint32_t k_row_bytes = 0, v_row_bytes = 0;
    uint32_t v_offset = 0, pos_offset = 0;
};

struct KvDims {
    uint32_t block_tokens = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t codec_group = 0;  // kv_codec_group(head_dim): values per q8/q4 group (0: none fits)
};

// Token i goes to slot slots[i] of block blocks[i] (device arrays of n_tokens); K and V rows
// are encoded exactly as kv_encode_row does, and pos[i] is written for every head.
//                                          k, v: [n_tokens][n_head_kv][head_dim] (device)
void launch_kv_write(const KvDevBlock * blocks, const uint32_t * slots, int64_t n_tokens, const float * k, const float * v,
                     const int32_t * pos, const KvDims & dims, cudaStream_t stream);

struct AttentionShape {
    int64_t n_tokens = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    uint32_t n_blocks = 0;
    KvDims dims;
    float scale = 1.0f;
    int32_t window = 0;        // > 0: a query at p sees keys at p' > p - window (AttentionParams::window)
    bool f16_k = false;        // every block's K is f16: q is rounded to f16 (llama.cpp's f16 cache)
    bool f16_v = false;        // every block's V is f16: the softmax weights are rounded to f16
    bool mass = false;         // accumulate the attention mass
    int n_sm = 1;              // multiprocessors, to size the grid
    uint32_t page_tokens = 0;  // slots per bit of AttentionArgs::read_pages
};

// How launch_attention cuts the work, and the scratch it needs (attention_plan).
struct AttentionPlan {
    int64_t tile_tokens = 0;       // tokens per pass over the scores scratch
    uint32_t queries_per_cta = 0;  // (token, query head) pairs of one KV head per block
    uint32_t slots_per_pass = 0;   // K or V rows decoded into shared memory at a time (<= 32)
    uint32_t n_chunks = 0;         // chunks of blocks of the view (split over the sequence)
    uint32_t blocks_per_chunk = 0;
    size_t scores_bytes = 0;   // [tile_tokens][n_head][n_slots] floats
    size_t partial_bytes = 0;  // [n_chunks][tile_tokens][n_head][head_dim] floats (0 with one chunk)
};
AttentionPlan attention_plan(const AttentionShape & s);

struct AttentionArgs {
    const float * q = nullptr;              // [n_tokens][n_head][head_dim]
    const int32_t * pos = nullptr;          // [n_tokens] (device)
    const KvDevBlock * blocks = nullptr;    // [n_blocks] (device)
    float * mass = nullptr;                 // [n_blocks][n_head_kv][block_tokens] or nullptr
    float * out = nullptr;                  // [n_tokens][n_head][head_dim]
    float * scores = nullptr;               // scratch of plan.scores_bytes
    float * partial = nullptr;              // scratch of plan.partial_bytes
    const uint32_t * read_pages = nullptr;  // [n_blocks][n_head_kv] (device) or nullptr: see PagedKvView
    const float * sinks = nullptr;          // [n_head] (device) or nullptr: AttentionParams::sinks
};
void launch_attention(const AttentionShape & s, const AttentionPlan & plan, const AttentionArgs & a, cudaStream_t stream);

// A trivial kernel, launched once at start-up: fails when the build has no code for the GPU.
cudaError_t launch_self_test(int * out, cudaStream_t stream);

}  // namespace lr::cuda
