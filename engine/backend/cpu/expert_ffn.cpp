#include "engine/backend/cpu/expert_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "engine/backend/cpu/activations.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/common/assert.h"

namespace lr::cpu {
namespace {

// Element-wise passes over fewer elements than this run on the calling thread.
constexpr int64_t kInlineElements = 16 * 1024;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// ggml's swiglu_oai (alpha 1.702, limit 7), in its order of operations.
float swiglu_oai(float g, float u) {
    constexpr float kAlpha = 1.702f;
    constexpr float kLimit = 7.0f;
    const float x = std::min(g, kLimit);
    const float y = std::clamp(u, -kLimit, kLimit);
    return x / (1.0f + std::exp(kAlpha * -x)) * (y + 1.0f);
}

// One stacked matrix multiplied, expert by expert, by the slot rows of that expert.
struct GroupedProduct {
    const MatmulKernel * kernel = nullptr;
    const WeightView * w = nullptr;  // [n_expert * rows_per_expert][n_cols]
    int64_t rows_per_expert = 0;
    const uint8_t * act = nullptr;  // [n_slots] rows of act_row_bytes
    size_t act_row_bytes = 0;
    float * y = nullptr;  // [n_slots][rows_per_expert]
};

// Runs the products (all with the same rows per expert) over the active experts in chunks
// of rows; a chunk computes its rows of every product, so gate and up share a pass.
void run_grouped(ThreadPool & pool, std::span<const GroupedProduct> products, const ExpertGroups & g,
                 std::vector<AlignedBuffer> & thread_scratch) {
    const int64_t rows = products[0].rows_per_expert;
    const int32_t max_group = g.max_count();
    // About four chunks per thread over all active experts, as CpuBackend::matmul cuts.
    const int64_t n_threads = pool.n_threads();
    const int64_t align = max_group == 1 ? 16 : 32;
    const int64_t total = int64_t(g.active.size()) * rows;
    const int64_t rows_per_chunk = std::min(rows, std::max(align, round_up((total + 4 * n_threads - 1) / (4 * n_threads), align)));
    const int64_t chunks_per_expert = (rows + rows_per_chunk - 1) / rows_per_chunk;
    size_t scratch_bytes = 0;
    for (const GroupedProduct & p : products) {
        scratch_bytes = std::max(scratch_bytes, p.kernel->scratch_bytes(p.w->n_cols, rows_per_chunk, max_group));
    }
    if (scratch_bytes > 0) {
        for (AlignedBuffer & b : thread_scratch) b.reserve(scratch_bytes);
    }
    pool.run(int64_t(g.active.size()) * chunks_per_expert, [&](int64_t chunk, int ith) {
        const int32_t e = g.active[size_t(chunk / chunks_per_expert)];
        const int64_t r0 = (chunk % chunks_per_expert) * rows_per_chunk;
        const int64_t r1 = std::min(rows, r0 + rows_per_chunk);
        const int32_t first = g.first(e);
        const int32_t n = g.count(e);
        for (const GroupedProduct & p : products) {
            const cpu::MatmulJob job{
                .w = static_cast<const uint8_t *>(p.w->data) + size_t(e) * size_t(rows) * p.w->row_bytes(),
                .w_row_bytes = p.w->row_bytes(),
                .n_cols = p.w->n_cols,
                .act = p.act + size_t(first) * p.act_row_bytes,
                .act_row_bytes = p.act_row_bytes,
                .n_tokens = n,
                .y = p.y + int64_t(first) * rows,
                .y_stride = rows,
            };
            p.kernel->rows(job, r0, r1, thread_scratch[size_t(ith)].data());
        }
    });
}

// fn(begin, end) over [0, n) items of `width` elements: on the pool when there is enough work.
template <class F>
void for_rows(ThreadPool & pool, int64_t n, int64_t width, F && fn) {
    if (n * width < kInlineElements) {
        fn(int64_t(0), n);
    } else {
        pool.parallel_for(n, 1, [&](int64_t begin, int64_t end, int) { fn(begin, end); });
    }
}

// x's rows converted once per token, then copied into slot order.
const uint8_t * grouped_activations(ThreadPool & pool, const MatmulKernel & k, const float * x, int64_t n_tokens, int64_t n_cols,
                                    const ExpertGroups & g, AlignedBuffer & converted, AlignedBuffer & grouped) {
    const size_t arb = k.act_row_bytes(n_cols);
    uint8_t * act = converted.reserve(arb * size_t(n_tokens));
    for_rows(pool, n_tokens, n_cols, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) k.convert_act(x + t * n_cols, n_cols, act + size_t(t) * arb);
    });
    const size_t n_slots = g.slot_token.size();
    uint8_t * out = grouped.reserve(arb * n_slots);
    for (size_t slot = 0; slot < n_slots; ++slot) std::memcpy(out + slot * arb, act + size_t(g.slot_token[slot]) * arb, arb);
    return out;
}

}  // namespace

void expert_ffn(ThreadPool & pool, CpuIsa isa, const ExpertFfnArgs & args, ExpertScratch & s, std::vector<AlignedBuffer> & thread_scratch) {
    const ExpertWeights & w = *args.w;
    const ExpertRoutes & r = *args.routes;
    const int64_t n_tokens = args.n_tokens;
    const int64_t n_embd = w.n_embd();
    const int64_t n_ff = w.n_ff();
    LR_ASSERT(w.n_expert > 0 && r.n_used > 0 && r.n_used <= w.n_expert);
    LR_ASSERT(w.up.n_rows == w.gate.n_rows && w.up.n_cols == n_embd && w.down.n_cols == n_ff && w.down.n_rows == w.n_expert * n_embd);
    LR_ASSERT(args.out != args.x);
    if (n_tokens == 0) return;
    ExpertGroups & g = s.groups;
    g.assign(r, n_tokens, w.n_expert);
    const int64_t n_slots = g.n_slots();

    // gate and up, expert by expert.
    const MatmulKernel * k_gate = matmul_kernel(isa, w.gate.type);
    const MatmulKernel * k_up = matmul_kernel(isa, w.up.type);
    const MatmulKernel * k_down = matmul_kernel(isa, w.down.type);
    LR_ASSERT(k_gate && k_up && k_down);
    const uint8_t * act_gate = grouped_activations(pool, *k_gate, args.x, n_tokens, n_embd, g, s.act_x, s.act_grouped);
    const uint8_t * act_up = w.up.type == w.gate.type
                                 ? act_gate
                                 : grouped_activations(pool, *k_up, args.x, n_tokens, n_embd, g, s.act_x_up, s.act_grouped_up);
    auto * gate = reinterpret_cast<float *>(s.gate.reserve(size_t(n_slots * n_ff) * sizeof(float)));  // [n_slots][n_ff]
    auto * up = reinterpret_cast<float *>(s.up.reserve(size_t(n_slots * n_ff) * sizeof(float)));      // [n_slots][n_ff]
    const GroupedProduct gate_up[] = {
        {k_gate, &w.gate, n_ff, act_gate, k_gate->act_row_bytes(n_embd), gate},
        {k_up, &w.up, n_ff, act_up, k_up->act_row_bytes(n_embd), up},
    };
    run_grouped(pool, gate_up, g, thread_scratch);

    // Biases, the activation, and the result in the down kernel's format.
    const auto swiglu_row = activation_kernels(isa).swiglu;
    const size_t hidden_row_bytes = k_down->act_row_bytes(n_ff);
    uint8_t * hidden = s.act_hidden.reserve(hidden_row_bytes * size_t(n_slots));
    for_rows(pool, n_slots, n_ff, [&](int64_t begin, int64_t end) {
        for (int64_t slot = begin; slot < end; ++slot) {
            const int32_t e = g.slot_expert[size_t(slot)];
            float * gs = gate + slot * n_ff;
            float * us = up + slot * n_ff;
            if (const float * b = ExpertWeights::bias_of(w.up_bias, e)) {
                for (int64_t i = 0; i < n_ff; ++i) us[i] += b[i];
            }
            if (const float * b = ExpertWeights::bias_of(w.gate_bias, e)) {
                for (int64_t i = 0; i < n_ff; ++i) gs[i] += b[i];
            }
            if (w.act == ExpertActivation::swiglu_oai) {
                for (int64_t i = 0; i < n_ff; ++i) gs[i] = swiglu_oai(gs[i], us[i]);
            } else {
                swiglu_row(gs, us, n_ff, gs);  // a row of n_ff, as ggml's swiglu and CpuBackend::swiglu
            }
            k_down->convert_act(gs, n_ff, hidden + size_t(slot) * hidden_row_bytes);
        }
    });

    // down, expert by expert.
    auto * down = reinterpret_cast<float *>(s.down.reserve(size_t(n_slots * n_embd) * sizeof(float)));  // [n_slots][n_embd]
    const GroupedProduct down_product[] = {{k_down, &w.down, n_embd, hidden, hidden_row_bytes, down}};
    run_grouped(pool, down_product, g, thread_scratch);

    // out[t] = sum_j (down + bias) * weight, in routing order.
    for_rows(pool, n_tokens, n_embd * r.n_used, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            float * o = args.out + t * n_embd;
            for (int32_t j = 0; j < r.n_used; ++j) {
                const int64_t i = t * r.n_used + j;
                const float * y = down + int64_t(g.slot_of[size_t(i)]) * n_embd;
                const float * b = ExpertWeights::bias_of(w.down_bias, r.ids_host[i]);
                const float weight = r.weights_host[i];
                for (int64_t c = 0; c < n_embd; ++c) {
                    const float v = (b ? y[c] + b[c] : y[c]) * weight;
                    o[c] = j == 0 ? v : o[c] + v;
                }
            }
        }
    });
}

}  // namespace lr::cpu
