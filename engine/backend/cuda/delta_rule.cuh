#pragma once
// The work of delta_rule.cu's kernels (Backend::gated_delta_rule), shared with the host
// emulation of the tests, in the order of operations of the CPU's cpu/delta_rule.cpp (each
// product and sum in float, in its order): the recurrent form one row of a head's state at a
// time (the rows are independent there), the chunked form one head per block, in phases
// separated by barriers, each phase's elements split over the block's threads. Only exp
// differs from the CPU (the device's expf, within 2 ulp).

#include <cmath>
#include <cstdint>

#include "engine/backend/cuda/device_util.cuh"

namespace lr::cuda::delta {

inline constexpr int kRowThreads = 128;    // recurrent form: rows of a head per block
inline constexpr int kChunkThreads = 256;  // chunked form: the block of a head

struct Args {
    const float * q = nullptr;     // [n_tokens][n_k_heads][head_k_dim]
    const float * k = nullptr;     // [n_tokens][n_k_heads][head_k_dim]
    const float * v = nullptr;     // [n_tokens][n_v_heads][head_v_dim]
    const float * g = nullptr;     // [n_tokens][n_v_heads] (device)
    const float * beta = nullptr;  // [n_tokens][n_v_heads] (device)
    float * state = nullptr;       // [n_v_heads][head_v_dim][head_k_dim], S transposed
    float * out = nullptr;         // [n_tokens][n_v_heads][head_v_dim]
    float * scratch = nullptr;     // chunked form: [n_v_heads][scratch_floats(...)]
    int64_t n_tokens = 0;
    int32_t n_k_heads = 0, n_v_heads = 0, dk = 0, dv = 0;
    int32_t chunk = 0;   // 0: recurrent
    float scale = 0.0f;  // q_scale(dk)
};

// 1 / sqrt(head_k_dim), computed on the host as the CPU does.
inline float q_scale(int32_t dk) { return 1.0f / std::sqrt(float(dk)); }

LR_HD float dot(const float * a, const float * b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum = add_rn(sum, mul_rn(a[i], b[i]));
    return sum;
}

// The rows of v head h: its q/k head is h % n_k_heads (tiled, as the CPU).
struct Head {
    const float *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *beta = nullptr;
    float *state = nullptr, *out = nullptr;
    int64_t qk_stride = 0, v_stride = 0, gate_stride = 0;  // floats between a token's rows
};
LR_HD Head head_of(const Args & a, int64_t h) {
    const int64_t kh = h % a.n_k_heads, dk = a.dk, dv = a.dv;
    return {.q = a.q + kh * dk,
            .k = a.k + kh * dk,
            .v = a.v + h * dv,
            .g = a.g + h,
            .beta = a.beta + h,
            .state = a.state + h * dv * dk,
            .out = a.out + h * dv,
            .qk_stride = int64_t(a.n_k_heads) * dk,
            .v_stride = int64_t(a.n_v_heads) * dv,
            .gate_stride = a.n_v_heads};
}

// ---- Recurrent form: row j of head h over every token -----------------------------------------

// The row decays, the error of its prediction for k is written back along k, q reads it.
LR_HD void recurrent_row(const Args & a, int64_t h, int64_t j) {
    const Head hd = head_of(a, h);
    const int64_t dk = a.dk;
    float * row = hd.state + j * dk;  // [head_k_dim]
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const float * k = hd.k + t * hd.qk_stride;
        const float decay = expf(hd.g[t * hd.gate_stride]);
        for (int64_t i = 0; i < dk; ++i) row[i] = mul_rn(row[i], decay);
        const float delta = mul_rn(sub_rn(hd.v[t * hd.v_stride + j], dot(row, k, dk)), hd.beta[t * hd.gate_stride]);
        for (int64_t i = 0; i < dk; ++i) row[i] = add_rn(row[i], mul_rn(k[i], delta));
        hd.out[t * hd.v_stride + j] = mul_rn(dot(row, hd.q + t * hd.qk_stride, dk), a.scale);
    }
}

// ---- Chunked form: head h, one chunk of n <= chunk tokens at a time -----------------------------
//
// llama.cpp's build_delta_net_chunking as cpu/delta_rule.cpp writes it: with G the cumulative
// sums of g in the chunk, D[r][c] = exp(G[r] - G[c]), A[r][c] = beta_r k_r.k_c D[r][c] (c < r),
// T = (I + A)^-1: U = T (beta v), W = T (beta exp(G) k), v_new = U - W S,
// out[r] = exp(G[r]) S^T q_r + sum_{c <= r} (q_r.k_c D[r][c]) v_new[c],
// S = exp(G[n-1]) S + sum_c exp(G[n-1] - G[c]) k_c v_new[c]^T.

// Floats of one head's scratch.
LR_HD int64_t scratch_floats(int64_t chunk, int64_t dk, int64_t dv) { return chunk * (4 * dk + 2 * dv + 3 * chunk + 3); }

// One head's chunk: where its rows are and its scratch, carved in scratch_floats' order.
struct Chunk {
    Head hd;
    int64_t t0 = 0, n = 0;           // the chunk's first token and its size
    int64_t cs = 0, dk = 0, dv = 0;  // chunk capacity (row stride of a, kq, x), head dims
    float scale = 0.0f;
    float * qs = nullptr;     // [cs][dk] q scale, then times exp(G)
    float * kb = nullptr;     // [cs][dk] k beta, then times exp(G)
    float * kg = nullptr;     // [cs][dk] k exp(G[n-1] - G)
    float * w = nullptr;      // [cs][dk] W
    float * vb = nullptr;     // [cs][dv] v beta
    float * u = nullptr;      // [cs][dv] U, then v_new
    float * a = nullptr;      // [cs][cs] A
    float * kq = nullptr;     // [cs][cs] the decayed q.k
    float * x = nullptr;      // [cs][cs] T
    float * gcs = nullptr;    // [cs] G
    float * gexp = nullptr;   // [cs] exp(G)
    float * gdiff = nullptr;  // [cs] exp(G[n-1] - G)
};
LR_HD Chunk chunk_of(const Args & a, int64_t h, int64_t t0) {
    const int64_t cs = a.chunk, dk = a.dk, dv = a.dv;
    float * s = a.scratch + h * scratch_floats(cs, dk, dv);
    Chunk c{
        .hd = head_of(a, h), .t0 = t0, .n = a.n_tokens - t0 < cs ? a.n_tokens - t0 : cs, .cs = cs, .dk = dk, .dv = dv, .scale = a.scale};
    c.qs = s, s += cs * dk;
    c.kb = s, s += cs * dk;
    c.kg = s, s += cs * dk;
    c.w = s, s += cs * dk;
    c.vb = s, s += cs * dv;
    c.u = s, s += cs * dv;
    c.a = s, s += cs * cs;
    c.kq = s, s += cs * cs;
    c.x = s, s += cs * cs;
    c.gcs = s, s += cs;
    c.gexp = s, s += cs;
    c.gdiff = s;
    return c;
}
LR_HD const float * k_row(const Chunk & c, int64_t r) { return c.hd.k + (c.t0 + r) * c.hd.qk_stride; }
LR_HD float beta_of(const Chunk & c, int64_t r) { return c.hd.beta[(c.t0 + r) * c.hd.gate_stride]; }

// Phase 0: G (thread 0), q scaled, k and v times beta.
LR_HD void load_phase(const Chunk & c, int tid, int n_threads) {
    if (tid == 0) {
        for (int64_t r = 0; r < c.n; ++r) c.gcs[r] = add_rn(r > 0 ? c.gcs[r - 1] : 0.0f, c.hd.g[(c.t0 + r) * c.hd.gate_stride]);
    }
    for (int64_t e = tid; e < c.n * c.dk; e += n_threads) {
        const int64_t r = e / c.dk, i = e % c.dk;
        c.qs[e] = mul_rn(c.hd.q[(c.t0 + r) * c.hd.qk_stride + i], c.scale);
        c.kb[e] = mul_rn(k_row(c, r)[i], beta_of(c, r));
    }
    for (int64_t e = tid; e < c.n * c.dv; e += n_threads) {
        const int64_t r = e / c.dv, j = e % c.dv;
        c.vb[e] = mul_rn(c.hd.v[(c.t0 + r) * c.hd.v_stride + j], beta_of(c, r));
    }
}

// Phase 1: A strictly below the diagonal, kq on and below it; exp(G) and exp(G[n-1] - G).
LR_HD void products_phase(const Chunk & c, int tid, int n_threads) {
    for (int64_t e = tid; e < c.n * c.n; e += n_threads) {
        const int64_t r = e / c.n, col = e % c.n;
        const float decay = col <= r ? expf(sub_rn(c.gcs[r], c.gcs[col])) : 0.0f;
        c.a[r * c.cs + col] = col < r ? mul_rn(dot(k_row(c, col), c.kb + r * c.dk, c.dk), decay) : 0.0f;
        c.kq[r * c.cs + col] = col <= r ? mul_rn(dot(k_row(c, col), c.qs + r * c.dk, c.dk), decay) : 0.0f;
    }
    const float g_last = c.gcs[c.n - 1];
    for (int64_t r = tid; r < c.n; r += n_threads) {
        c.gexp[r] = expf(c.gcs[r]);
        c.gdiff[r] = expf(-sub_rn(c.gcs[r], g_last));
    }
}

// Phase 2: T by forward substitution, a thread per column j: (I + A) X = -A, T = X + I
// (ggml_solve_tri); and the chunk's rows scaled by exp(G) (qs, kb) and exp(G[n-1] - G) (kg).
LR_HD void solve_phase(const Chunk & c, int tid, int n_threads) {
    for (int64_t j = tid; j < c.n; j += n_threads) {
        for (int64_t r = 0; r < c.n; ++r) {
            float sum = 0.0f;
            for (int64_t m = 0; m < r; ++m) sum = add_rn(sum, mul_rn(c.a[r * c.cs + m], c.x[m * c.cs + j]));
            c.x[r * c.cs + j] = sub_rn(-c.a[r * c.cs + j], sum);
        }
        for (int64_t r = 0; r < c.n; ++r) c.x[r * c.cs + j] = add_rn(c.x[r * c.cs + j], r == j ? 1.0f : 0.0f);
    }
    for (int64_t e = tid; e < c.n * c.dk; e += n_threads) {
        const int64_t r = e / c.dk, i = e % c.dk;
        c.kb[e] = mul_rn(c.kb[e], c.gexp[r]);
        c.qs[e] = mul_rn(c.qs[e], c.gexp[r]);
        c.kg[e] = mul_rn(k_row(c, r)[i], c.gdiff[r]);
    }
}

// Phase 3: U = T (beta v), W = T (beta exp(G) k).
LR_HD void uw_phase(const Chunk & c, int tid, int n_threads) {
    for (int64_t e = tid; e < c.n * c.dv; e += n_threads) {
        const int64_t r = e / c.dv, j = e % c.dv;
        float sum = 0.0f;
        for (int64_t m = 0; m < c.n; ++m) sum = add_rn(sum, mul_rn(c.vb[m * c.dv + j], c.x[r * c.cs + m]));
        c.u[e] = sum;
    }
    for (int64_t e = tid; e < c.n * c.dk; e += n_threads) {
        const int64_t r = e / c.dk, i = e % c.dk;
        float sum = 0.0f;
        for (int64_t m = 0; m < c.n; ++m) sum = add_rn(sum, mul_rn(c.kb[m * c.dk + i], c.x[r * c.cs + m]));
        c.w[e] = sum;
    }
}

// Phase 4: v_new = U - W S (in u).
LR_HD void v_new_phase(const Chunk & c, int tid, int n_threads) {
    for (int64_t e = tid; e < c.n * c.dv; e += n_threads) {
        const int64_t r = e / c.dv, j = e % c.dv;
        c.u[e] = sub_rn(c.u[e], dot(c.w + r * c.dk, c.hd.state + j * c.dk, c.dk));
    }
}

// Phase 5: the outputs, the state's part (q exp(G) through S) and the chunk's own.
LR_HD void out_phase(const Chunk & c, int tid, int n_threads) {
    for (int64_t e = tid; e < c.n * c.dv; e += n_threads) {
        const int64_t r = e / c.dv, j = e % c.dv;
        const float inter = dot(c.hd.state + j * c.dk, c.qs + r * c.dk, c.dk);
        float intra = 0.0f;
        for (int64_t m = 0; m <= r; ++m) intra = add_rn(intra, mul_rn(c.u[m * c.dv + j], c.kq[r * c.cs + m]));
        c.hd.out[(c.t0 + r) * c.hd.v_stride + j] = add_rn(inter, intra);
    }
}

// Phase 6: S = exp(G[n-1]) S + sum_c kg_c v_new[c]^T.
LR_HD void state_phase(const Chunk & c, int tid, int n_threads) {
    const float state_decay = expf(c.gcs[c.n - 1]);
    for (int64_t e = tid; e < c.dv * c.dk; e += n_threads) {
        const int64_t j = e / c.dk, i = e % c.dk;
        float sum = 0.0f;
        for (int64_t m = 0; m < c.n; ++m) sum = add_rn(sum, mul_rn(c.kg[m * c.dk + i], c.u[m * c.dv + j]));
        c.hd.state[e] = add_rn(mul_rn(c.hd.state[e], state_decay), sum);
    }
}

// The phases in order; a barrier follows each (the next reads what the other threads wrote).
inline constexpr int kPhases = 7;
LR_HD void run_phase(int phase, const Chunk & c, int tid, int n_threads) {
    switch (phase) {
        case 0: load_phase(c, tid, n_threads); break;
        case 1: products_phase(c, tid, n_threads); break;
        case 2: solve_phase(c, tid, n_threads); break;
        case 3: uw_phase(c, tid, n_threads); break;
        case 4: v_new_phase(c, tid, n_threads); break;
        case 5: out_phase(c, tid, n_threads); break;
        default: state_phase(c, tid, n_threads); break;
    }
}

}  // namespace lr::cuda::delta
