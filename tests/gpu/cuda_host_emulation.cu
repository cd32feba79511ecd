// Host instances of the kernels' per-element code (see cuda_host_emulation.h).

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "cuda_host_emulation.h"
#include "engine/backend/cpu/activations.h"
#include "engine/backend/cuda/attention.cuh"
#include "engine/backend/cuda/causal_conv.cuh"
#include "engine/backend/cuda/delta_rule.cuh"
#include "engine/backend/cuda/dequant.cuh"
#include "engine/backend/cuda/gates.cuh"
#include "engine/backend/cuda/geglu.cuh"
#include "engine/backend/cuda/kv_codec.cuh"
#include "engine/backend/cuda/l2_norm.cuh"
#include "engine/backend/cuda/matvec.cuh"
#include "engine/backend/cuda/moe.cuh"
#include "engine/backend/cuda/rope.cuh"

namespace lr::test {

using namespace lr::cuda;

namespace {

template <DType T>
void one(const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, float * out) {
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t c = 0; c < n_cols; ++c) out[r * n_cols + c] = dequant_one<T>(w + size_t(r) * row_bytes, c);
    }
}

template <DType T>
bool steps(const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, bool aligned16, float * out) {
    std::vector<int> writes(static_cast<size_t>(n_cols));
    bool ok = true;
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t * row = w + size_t(r) * row_bytes;
        std::fill(writes.begin(), writes.end(), 0);
        const int64_t n_steps = n_cols / 256;
        for (int64_t step = 0; step < n_steps; ++step) {
            for (int lane = 0; lane < 32; ++lane) {
                float v[8];
                int a0 = -1, a1 = -1;
                dequant_step<T>(row, step, lane, aligned16, v, a0, a1);
                for (int k = 0; k < 4; ++k) {
                    for (const auto & [at, value] : {std::pair{a0 + k, v[k]}, std::pair{a1 + k, v[4 + k]}}) {
                        if (at < 0 || at >= 256) {
                            ok = false;
                            continue;
                        }
                        const int64_t c = step * 256 + at;
                        ++writes[size_t(c)];
                        out[r * n_cols + c] = value;
                    }
                }
            }
        }
        for (int64_t c = n_steps * 256; c < n_cols; ++c) {
            out[r * n_cols + c] = dequant_one<T>(row, c);
            ++writes[size_t(c)];
        }
        for (int count : writes) ok = ok && count == 1;
    }
    return ok;
}

template <DType T>
void matvec(const mv::Params & p) {
    const int64_t n_warps = (p.n_rows + mv::kRowsPerWarp - 1) / mv::kRowsPerWarp;
    for (int64_t warp = 0; warp < n_warps; ++warp) {
        const int64_t row0 = mv::first_row(warp);
        float acc[32][mv::kRowsPerWarp][mv::kMaxTokens];
        for (int lane = 0; lane < 32; ++lane) mv::lane_sums<T>(p, row0, lane, acc[lane]);
        for (int t = 0; t < p.n_tokens; ++t) {
            for (int r = 0; r < mv::rows_of(p, row0); ++r) {
                // __shfl_xor_sync butterfly: every lane adds its partner's value, level by level.
                float v[32];
                for (int l = 0; l < 32; ++l) v[l] = acc[l][r][t];
                for (int offset = 16; offset > 0; offset /= 2) {
                    float next[32];
                    for (int l = 0; l < 32; ++l) next[l] = v[l] + v[l ^ offset];
                    std::copy(next, next + 32, v);
                }
                p.y[t * p.y_stride + row0 + r] = v[0];
            }
        }
    }
}

// The halving tree of attention.cu's block_reduce.
template <class T, class Op>
T tree_reduce(std::vector<T> part, Op op) {
    for (size_t half = part.size() / 2; half > 0; half /= 2) {
        for (size_t t = 0; t < half; ++t) part[t] = op(part[t], part[t + half]);
    }
    return part[0];
}

}  // namespace

void emulate_matvec(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float * x, int64_t n_tokens,
                    float * y) {
    LR_ASSERT(n_tokens >= 1 && n_tokens <= kMatvecMaxTokens);
    const mv::Params p{.w = w,
                       .row_bytes = row_bytes,
                       .n_rows = n_rows,
                       .n_cols = n_cols,
                       .x = x,
                       .n_tokens = int(n_tokens),
                       .y = y,
                       .y_stride = n_rows,
                       .w_aligned16 = false,
                       .x_vec4 = false};
#define LR_MATVEC_CASE(T) matvec<T>(p)
    LR_CUDA_DISPATCH_TYPE(type, LR_MATVEC_CASE)
#undef LR_MATVEC_CASE
}

void emulate_attention(const float * q, int64_t n_tokens, const int32_t * pos, const PagedKvView & view, const AttentionParams & params,
                       float * out, int n_sm) {
    using namespace attn;
    std::vector<KvDevBlock> table;
    AttentionShape shape{.n_tokens = n_tokens,
                         .n_head = params.n_head,
                         .n_head_kv = params.n_head_kv,
                         .n_blocks = view.n_blocks(),
                         .dims = {.block_tokens = view.shape.block_tokens,
                                  .n_head_kv = view.shape.n_head_kv,
                                  .head_dim = view.shape.head_dim,
                                  .codec_group = kv_codec_group(view.shape.head_dim)},
                         .scale = params.scale,
                         .window = params.window,
                         .f16_k = true,
                         .f16_v = true,
                         .mass = view.attn_mass != nullptr,
                         .n_sm = n_sm,
                         .page_tokens = view.page_tokens};
    for (uint32_t b = 0; b < view.n_blocks(); ++b) {
        const KvBlockLayout L = view.layout(b);
        shape.f16_k = shape.f16_k && L.k_codec == KvCodec::f16;
        shape.f16_v = shape.f16_v && L.v_codec == KvCodec::f16;
        table.push_back({.data = view.blocks[b].data,
                         .k_codec = uint32_t(L.k_codec),
                         .v_codec = uint32_t(L.v_codec),
                         .k_row_bytes = uint32_t(L.k_row_bytes()),
                         .v_row_bytes = uint32_t(L.v_row_bytes()),
                         .v_offset = uint32_t(L.v_offset()),
                         .pos_offset = uint32_t(L.pos_offset())});
    }
    const AttentionPlan pl = plan(shape);
    std::vector<float> scores(pl.scores_bytes / sizeof(float)), partial(pl.partial_bytes / sizeof(float));
    const AttentionArgs args{.q = q,
                             .pos = pos,
                             .blocks = table.data(),
                             .mass = view.attn_mass,
                             .out = out,
                             .scores = scores.data(),
                             .partial = partial.data(),
                             .read_pages = view.read_pages.empty() ? nullptr : view.read_pages.data(),
                             .sinks = params.sinks};
    std::vector<float> smem(std::max(scores_shared_bytes(pl, shape.dims.head_dim), values_shared_bytes(pl, shape.dims.head_dim)) / 4 + 1);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += pl.tile_tokens) {
        const Tile a = make_tile(shape, pl, args, t0);
        for (uint32_t x = 0; x < query_ctas(a); ++x) {
            for (uint32_t g = 0; g < uint32_t(a.n_head_kv); ++g) {
                for (uint32_t chunk = 0; chunk < a.n_chunks; ++chunk) {
                    const Cta c{x, g, chunk};
                    const ScoresShared s = scores_shared(a, smem.data());
                    for (uint32_t tid = 0; tid < kThreads; ++tid) scores_load_queries(a, c, s, tid);
                    for (uint32_t b = chunk_begin(a, c); b < chunk_end(a, c); ++b) {
                        for (uint32_t s0 = 0; s0 < a.bt; s0 += a.slots_per_pass) {
                            for (uint32_t tid = 0; tid < kThreads; ++tid) scores_load_keys(a, c, s, b, s0, tid);
                            for (uint32_t tid = 0; tid < kThreads; ++tid) scores_compute(a, c, s, b, s0, tid);
                        }
                    }
                }
            }
        }
        for (int64_t r = 0; r < a.n_tok * a.n_head; ++r) {
            float * row = a.scores + size_t(r) * a.n_slots;
            std::vector<float> maxes(kRowThreads);
            for (uint32_t tid = 0; tid < kRowThreads; ++tid) maxes[tid] = softmax_max_part(row, a.n_slots, tid);
            const float sink = row_sink(args.sinks, r, a.n_head);
            const float m = fmaxf(tree_reduce(maxes, [](float u, float v) { return fmaxf(u, v); }), sink);
            std::vector<double> sums(kRowThreads);
            for (uint32_t tid = 0; tid < kRowThreads; ++tid) sums[tid] = softmax_exp_part(row, a.n_slots, m, tid);
            const double sum = tree_reduce(sums, [](double u, double v) { return u + v; });
            for (uint32_t tid = 0; tid < kRowThreads; ++tid) softmax_normalize(row, a.n_slots, inverse_sum(sum + sink_exp(sink, m)), tid);
        }
        if (a.mass) {
            for (uint32_t g = 0; g < uint32_t(a.n_head_kv); ++g) {
                for (size_t slot = 0; slot < a.n_slots; ++slot) mass_add(a, g, slot);
            }
        }
        for (uint32_t x = 0; x < query_ctas(a); ++x) {
            for (uint32_t g = 0; g < uint32_t(a.n_head_kv); ++g) {
                for (uint32_t chunk = 0; chunk < a.n_chunks; ++chunk) {
                    const Cta c{x, g, chunk};
                    const ValuesShared s = values_shared(a, smem.data());
                    std::vector<ValuesAcc> acc(kThreads);
                    for (ValuesAcc & t : acc) std::fill(std::begin(t.v), std::end(t.v), 0.0f);
                    for (uint32_t b = chunk_begin(a, c); b < chunk_end(a, c); ++b) {
                        for (uint32_t s0 = 0; s0 < a.bt; s0 += a.slots_per_pass) {
                            for (uint32_t tid = 0; tid < kThreads; ++tid) values_load(a, c, s, b, s0, tid);
                            for (uint32_t tid = 0; tid < kThreads; ++tid) values_accumulate(a, c, s, s0, tid, acc[tid]);
                        }
                    }
                    for (uint32_t tid = 0; tid < kThreads; ++tid) values_store(a, c, tid, acc[tid]);
                }
            }
        }
        if (a.n_chunks > 1) {
            for (int64_t e = 0; e < a.n_tok * a.n_head * int64_t(a.d); ++e) reduce_chunks(a, e);
        }
    }
}

void emulate_rope(float * x, int64_t n_tokens, int64_t n_heads, const int32_t * pos, const RopeParams & p) {
    const RopeArgs a = rope_args(p);
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int i = 0; i < a.n_rot / 2; ++i) {
            float c, s;
            rope::pair_cos_sin(a, pos[t], i, c, s);
            rope::rotate_pair(a, x, t, n_heads, i, c, s);
        }
    }
}

void emulate_geglu(const float * gate, const float * up, int64_t n, float * out) {
    const float * table = cpu::gelu_table();
    for (int64_t i = 0; i < n; ++i) out[i] = geglu_one(gate[i], up[i], table);
}

void emulate_swiglu_oai(const float * gate, const float * up, int64_t n, float * out) {
    for (int64_t i = 0; i < n; ++i) out[i] = swiglu_oai_one(gate[i], up[i]);
}

void emulate_moe_combine(const float * y, const int32_t * slot_of, const float * weights, int32_t n_used, int64_t n_tokens, int64_t n_cols,
                         float * out) {
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t c = 0; c < n_cols; ++c) {
            out[t * n_cols + c] = combine_one(y, slot_of + t * n_used, weights + t * n_used, n_used, n_cols, c);
        }
    }
}

void emulate_sigmoid_mul(float * x, const float * gate, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_mul_one(x[i], gate[i]);
}

void emulate_l2_norm(const float * x, int64_t n_rows, int64_t n_cols, float eps, float * out) {
    for (int64_t r = 0; r < n_rows; ++r) l2_norm_row(x, n_cols, eps, r, out);
}

void emulate_causal_conv_silu(const float * x, int64_t n_tokens, const float * kernel, int64_t n_channels, int64_t width, float * state,
                              float * out) {
    const conv::Args a{
        .x = x, .kernel = kernel, .state = state, .out = out, .n_tokens = n_tokens, .n_channels = n_channels, .width = width};
    for (int64_t i = 0; i < n_tokens * n_channels; ++i) conv::conv_one(a, i / n_channels, i % n_channels);
    for (int64_t c = 0; c < n_channels; ++c) conv::shift_state(a, c);
}

void emulate_gated_delta_rule(const float * q, const float * k, const float * v, const float * g, const float * beta, int64_t n_tokens,
                              const DeltaRuleParams & p, float * state, float * out) {
    std::vector<float> scratch(size_t(p.n_v_heads) * size_t(delta::scratch_floats(p.chunk_tokens, p.head_k_dim, p.head_v_dim)));
    const delta::Args a{.q = q,
                        .k = k,
                        .v = v,
                        .g = g,
                        .beta = beta,
                        .state = state,
                        .out = out,
                        .scratch = scratch.data(),
                        .n_tokens = n_tokens,
                        .n_k_heads = p.n_k_heads,
                        .n_v_heads = p.n_v_heads,
                        .dk = p.head_k_dim,
                        .dv = p.head_v_dim,
                        .chunk = p.chunk_tokens,
                        .scale = delta::q_scale(p.head_k_dim)};
    for (int64_t h = 0; h < p.n_v_heads; ++h) {
        if (p.chunk_tokens == 0) {
            for (int64_t j = 0; j < p.head_v_dim; ++j) delta::recurrent_row(a, h, j);
            continue;
        }
        for (int64_t t0 = 0; t0 < n_tokens; t0 += p.chunk_tokens) {
            const delta::Chunk c = delta::chunk_of(a, h, t0);
            for (int phase = 0; phase < delta::kPhases; ++phase) {
                for (int tid = 0; tid < delta::kChunkThreads; ++tid) delta::run_phase(phase, c, tid, delta::kChunkThreads);
            }
        }
    }
}

void emulate_dequant_one(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, float * out) {
#define LR_ONE_CASE(T) one<T>(w, row_bytes, n_rows, n_cols, out)
    LR_CUDA_DISPATCH_TYPE(type, LR_ONE_CASE)
#undef LR_ONE_CASE
}

bool emulate_dequant_steps(DType type, const uint8_t * w, size_t row_bytes, int64_t n_rows, int64_t n_cols, bool aligned16, float * out) {
    bool ok = false;
#define LR_STEPS_CASE(T) ok = steps<T>(w, row_bytes, n_rows, n_cols, aligned16, out)
    LR_CUDA_DISPATCH_TYPE(type, LR_STEPS_CASE)
#undef LR_STEPS_CASE
    return ok;
}

void emulate_kv_encode_row(KvCodec codec, const float * src, uint8_t * dst, uint32_t head_dim) {
    kv_encode_row_device(uint32_t(codec), src, dst, head_dim, kv_codec_group(head_dim));
}

float emulate_kv_decode(KvCodec codec, const uint8_t * row, uint32_t i, uint32_t head_dim) {
    return kv_decode_one(uint32_t(codec), row, i, kv_codec_group(head_dim));
}

}  // namespace lr::test
