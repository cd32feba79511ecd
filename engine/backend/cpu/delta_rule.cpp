#include "engine/backend/cpu/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lr::cpu {
namespace {

float dot(const float * a, const float * b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

// The strides of a head's rows in the ubatch's tensors.
struct Strides {
    int64_t qk, v, gate;
    explicit Strides(const DeltaRuleParams & p)
        : qk(int64_t(p.n_k_heads) * p.head_k_dim), v(int64_t(p.n_v_heads) * p.head_v_dim), gate(p.n_v_heads) {}
};

}  // namespace

// llama.cpp's fused op (ggml_compute_forward_gated_delta_net): the state decays, the error of
// its prediction for k is written back along k, and q reads it; q is scaled on the way out.
void delta_rule_recurrent(const DeltaRuleHead & h, int64_t n_tokens, const DeltaRuleParams & p) {
    const Strides st(p);
    const int64_t dk = p.head_k_dim, dv = p.head_v_dim;
    const float scale = 1.0f / std::sqrt(float(dk));
    std::vector<float> delta(static_cast<size_t>(dv));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float * q = h.q + t * st.qk;
        const float * k = h.k + t * st.qk;
        const float * v = h.v + t * st.v;
        const float beta = h.beta[t * st.gate];
        const float decay = std::exp(h.g[t * st.gate]);
        for (int64_t i = 0; i < dv * dk; ++i) h.state[i] *= decay;
        for (int64_t j = 0; j < dv; ++j) delta[size_t(j)] = (v[j] - dot(h.state + j * dk, k, dk)) * beta;
        for (int64_t j = 0; j < dv; ++j) {
            float * row = h.state + j * dk;
            for (int64_t i = 0; i < dk; ++i) row[i] += k[i] * delta[size_t(j)];
        }
        float * out = h.out + t * st.v;
        for (int64_t j = 0; j < dv; ++j) out[j] = dot(h.state + j * dk, q, dk) * scale;
    }
}

// llama.cpp's build_delta_net_chunking, one chunk of L tokens at a time (its padding to the
// chunk size adds exact zeros only). With G the cumulative sums of g in the chunk, D[r][c] =
// exp(G[r] - G[c]), A[r][c] = beta_r k_r.k_c D[r][c] (c < r) and T = (I + A)^-1:
//   U = T (beta v),  W[r] = sum_c T[r][c] beta_c exp(G[c]) k_c,  v_new = U - W S,
//   out[r] = exp(G[r]) S^T q_r + sum_{c <= r} (q_r.k_c D[r][c]) v_new[c],
//   S = exp(G[L-1]) S + sum_c exp(G[L-1] - G[c]) k_c v_new[c]^T.
void delta_rule_chunked(const DeltaRuleHead & h, int64_t n_tokens, const DeltaRuleParams & p) {
    const Strides st(p);
    const int64_t dk = p.head_k_dim, dv = p.head_v_dim, cs = p.chunk_tokens;
    const float scale = 1.0f / std::sqrt(float(dk));
    std::vector<float> q(static_cast<size_t>(cs * dk)), kb(static_cast<size_t>(cs * dk)), vb(static_cast<size_t>(cs * dv)),
        gcs(static_cast<size_t>(cs));
    std::vector<float> a(static_cast<size_t>(cs * cs)), kq(static_cast<size_t>(cs * cs)), x(static_cast<size_t>(cs * cs));
    std::vector<float> u(static_cast<size_t>(cs * dv)), w(static_cast<size_t>(cs * dk)), kbg(static_cast<size_t>(cs * dk)),
        kg(static_cast<size_t>(cs * dk)), v_new(static_cast<size_t>(cs * dv));
    std::vector<float> g_exp(static_cast<size_t>(cs)), col(static_cast<size_t>(cs));
    for (int64_t t0 = 0; t0 < n_tokens; t0 += cs) {
        const int64_t n = std::min(cs, n_tokens - t0);
        const float * k = h.k + t0 * st.qk;
        auto k_row = [&](int64_t c) { return k + c * st.qk; };
        for (int64_t r = 0; r < n; ++r) {
            const float beta = h.beta[(t0 + r) * st.gate];
            for (int64_t i = 0; i < dk; ++i) {
                q[size_t(r * dk + i)] = h.q[(t0 + r) * st.qk + i] * scale;
                kb[size_t(r * dk + i)] = k_row(r)[i] * beta;
            }
            for (int64_t j = 0; j < dv; ++j) vb[size_t(r * dv + j)] = h.v[(t0 + r) * st.v + j] * beta;
            gcs[size_t(r)] = (r > 0 ? gcs[size_t(r - 1)] : 0.0f) + h.g[(t0 + r) * st.gate];
        }
        // The decayed products within the chunk: A strictly below the diagonal, kq on and below.
        for (int64_t r = 0; r < n; ++r) {
            for (int64_t c = 0; c < n; ++c) {
                const float decay = c <= r ? std::exp(gcs[size_t(r)] - gcs[size_t(c)]) : 0.0f;
                a[size_t(r * cs + c)] = c < r ? dot(k_row(c), &kb[size_t(r * dk)], dk) * decay : 0.0f;
                kq[size_t(r * cs + c)] = c <= r ? dot(k_row(c), &q[size_t(r * dk)], dk) * decay : 0.0f;
            }
        }
        // (I + A) X = -A by forward substitution, column by column; T = X + I (ggml_solve_tri).
        for (int64_t j = 0; j < n; ++j) {
            for (int64_t r = 0; r < n; ++r) {
                float sum = 0.0f;
                for (int64_t m = 0; m < r; ++m) sum += a[size_t(r * cs + m)] * col[size_t(m)];
                col[size_t(r)] = -a[size_t(r * cs + j)] - sum;
            }
            for (int64_t r = 0; r < n; ++r) x[size_t(r * cs + j)] = col[size_t(r)] + (r == j ? 1.0f : 0.0f);
        }
        const float g_last = gcs[size_t(n - 1)];
        for (int64_t c = 0; c < n; ++c) {
            g_exp[size_t(c)] = std::exp(gcs[size_t(c)]);
            for (int64_t i = 0; i < dk; ++i) kbg[size_t(c * dk + i)] = kb[size_t(c * dk + i)] * g_exp[size_t(c)];
            for (int64_t i = 0; i < dk; ++i) q[size_t(c * dk + i)] *= g_exp[size_t(c)];
            const float g_diff = std::exp(-(gcs[size_t(c)] - g_last));
            for (int64_t i = 0; i < dk; ++i) kg[size_t(c * dk + i)] = k_row(c)[i] * g_diff;
        }
        for (int64_t r = 0; r < n; ++r) {
            const float * t_row = &x[size_t(r * cs)];
            for (int64_t j = 0; j < dv; ++j) {
                float sum = 0.0f;
                for (int64_t c = 0; c < n; ++c) sum += vb[size_t(c * dv + j)] * t_row[c];
                u[size_t(r * dv + j)] = sum;
            }
            for (int64_t i = 0; i < dk; ++i) {
                float sum = 0.0f;
                for (int64_t c = 0; c < n; ++c) sum += kbg[size_t(c * dk + i)] * t_row[c];
                w[size_t(r * dk + i)] = sum;
            }
        }
        // The state's part: v_new = U - W S, then the outputs (q holds q exp(G) now).
        for (int64_t r = 0; r < n; ++r) {
            for (int64_t j = 0; j < dv; ++j)
                v_new[size_t(r * dv + j)] = u[size_t(r * dv + j)] - dot(&w[size_t(r * dk)], h.state + j * dk, dk);
        }
        for (int64_t r = 0; r < n; ++r) {
            float * out = h.out + (t0 + r) * st.v;
            for (int64_t j = 0; j < dv; ++j) {
                const float inter = dot(h.state + j * dk, &q[size_t(r * dk)], dk);
                float intra = 0.0f;
                for (int64_t c = 0; c <= r; ++c) intra += v_new[size_t(c * dv + j)] * kq[size_t(r * cs + c)];
                out[j] = inter + intra;
            }
        }
        const float state_decay = std::exp(g_last);
        for (int64_t j = 0; j < dv; ++j) {
            float * row = h.state + j * dk;
            for (int64_t i = 0; i < dk; ++i) {
                float sum = 0.0f;
                for (int64_t c = 0; c < n; ++c) sum += kg[size_t(c * dk + i)] * v_new[size_t(c * dv + j)];
                row[i] = row[i] * state_decay + sum;
            }
        }
    }
}

}  // namespace lr::cpu
