#include "llama_graph.h"

#include <algorithm>
#include <cmath>

namespace lr {

Result<LlamaGraph> LlamaGraph::create(const Model & model, uint32_t max_tokens) {
    if (max_tokens == 0) return error(StatusCode::invalid_argument, "the ubatch size must be at least 1");
    LlamaGraph g(model, max_tokens);
    const ModelHParams & hp = model.hparams();
    Backend & b = model.backend();
    const size_t n = max_tokens;
    const size_t f = sizeof(float);
    LR_ASSIGN_OR_RETURN(g.x_, b.alloc(n * hp.n_embd * f));
    LR_ASSIGN_OR_RETURN(g.xn_, b.alloc(n * std::max(hp.n_embd, hp.n_embd_q()) * f));
    LR_ASSIGN_OR_RETURN(g.q_, b.alloc(n * hp.n_embd_q() * f));
    LR_ASSIGN_OR_RETURN(g.k_, b.alloc(n * hp.n_embd_kv() * f));
    LR_ASSIGN_OR_RETURN(g.v_, b.alloc(n * hp.n_embd_kv() * f));
    LR_ASSIGN_OR_RETURN(g.attn_, b.alloc(n * hp.n_embd_q() * f));
    LR_ASSIGN_OR_RETURN(g.gate_, b.alloc(n * hp.n_ff * f));
    LR_ASSIGN_OR_RETURN(g.up_, b.alloc(n * hp.n_ff * f));
    LR_ASSIGN_OR_RETURN(g.logits_, b.alloc(n * hp.n_vocab * f));
    return g;
}

uint64_t LlamaGraph::scratch_bytes_per_token(const ModelHParams & hp) {
    // x, xn (the wider of n_embd and n_embd_q), q, k, v, attn, gate, up, logits.
    return sizeof(float) * (uint64_t(hp.n_embd) + std::max(hp.n_embd, hp.n_embd_q()) + 2 * uint64_t(hp.n_embd_q()) +
                            2 * uint64_t(hp.n_embd_kv()) + 2 * uint64_t(hp.n_ff) + hp.n_vocab);
}

Status LlamaGraph::run_layers(KvCache & kv, UbatchPlan & plan, int64_t n) {
    const ModelHParams & hp = model_->hparams();
    const ModelWeights & w = model_->weights();
    Backend & b = model_->backend();
    float * x = x_.as<float>();
    float * xn = xn_.as<float>();
    float * q = q_.as<float>();
    float * k = k_.as<float>();
    float * v = v_.as<float>();
    float * attn = attn_.as<float>();
    float * gate = gate_.as<float>();
    float * up = up_.as<float>();

    RopeParams rope{
        .mode = hp.rope_mode,
        .n_rot = int32_t(hp.n_rot),
        .head_dim = int32_t(hp.head_dim),
        .freq_base = hp.rope_freq_base,
        .freq_scale = hp.rope_freq_scale,
        .freq_factors = w.rope_freqs ? static_cast<const float *>(w.rope_freqs->data) : nullptr,
    };
    const AttentionParams attn_params{
        .n_head = int32_t(hp.n_head),
        .n_head_kv = int32_t(hp.n_head_kv),
        .head_dim = int32_t(hp.head_dim),
        .scale = 1.0f / std::sqrt(float(hp.head_dim)),
    };
    const int32_t * pos = plan.positions().data();

    b.get_rows(w.token_embd, tokens_.data(), n, x);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights & L = w.layers[il];
        // Attention block.
        b.rms_norm(x, L.attn_norm, hp.rms_eps, n, xn);
        b.matmul(L.wq, xn, n, q);
        b.matmul(L.wk, xn, n, k);
        b.matmul(L.wv, xn, n, v);
        if (L.bq) b.add_bias(q, *L.bq, n);
        if (L.bk) b.add_bias(k, *L.bk, n);
        if (L.bv) b.add_bias(v, *L.bv, n);
        b.rope(q, n, hp.n_head, pos, rope);
        b.rope(k, n, hp.n_head_kv, pos, rope);
        LR_ASSIGN_OR_RETURN(const PagedKvView view, kv.layer_view(plan, il, q + (n - 1) * hp.n_embd_q()));
        b.kv_write(view, k, v, pos, n);
        b.attention(q, n, pos, view, attn_params, attn);
        b.matmul(L.wo, attn, n, xn);
        b.add(x, xn, n * hp.n_embd);
        // Feed-forward block (SwiGLU).
        b.rms_norm(x, L.ffn_norm, hp.rms_eps, n, xn);
        b.matmul(L.ffn_gate, xn, n, gate);
        b.matmul(L.ffn_up, xn, n, up);
        b.swiglu(gate, up, n * hp.n_ff, gate);
        b.matmul(L.ffn_down, gate, n, xn);
        b.add(x, xn, n * hp.n_embd);
    }
    return {};
}

Status LlamaGraph::forward(UbatchPlan & plan, bool all_logits, KvCache & kv, std::vector<float> & logits_out) {
    const ModelHParams & hp = model_->hparams();
    const int64_t n = plan.n_tokens();
    if (n == 0) return error(StatusCode::invalid_argument, "empty ubatch");
    if (n > max_tokens_) {
        return error(StatusCode::invalid_argument,
                     "ubatch of " + std::to_string(n) + " tokens does not fit the graph (" + std::to_string(max_tokens_) + ")");
    }
    for (int32_t t : plan.tokens()) {
        if (t < 0 || uint32_t(t) >= hp.n_vocab) {
            kv.discard(plan);
            return error(StatusCode::invalid_argument,
                         "token id " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(hp.n_vocab - 1) + ")");
        }
    }
    tokens_.assign(plan.tokens().begin(), plan.tokens().end());
    if (Status s = run_layers(kv, plan, n); !s.ok()) {
        kv.discard(plan);
        return s;
    }
    kv.apply(plan);

    // Logits only for the rows asked for.
    Backend & b = model_->backend();
    const ModelWeights & w = model_->weights();
    const int64_t n_out = all_logits ? n : 1;
    const float * rows = x_.as<float>() + (n - n_out) * hp.n_embd;
    b.rms_norm(rows, w.output_norm, hp.rms_eps, n_out, xn_.as<float>());
    b.matmul(w.output, xn_.as<float>(), n_out, logits_.as<float>());
    logits_out.resize(size_t(n_out) * hp.n_vocab);
    b.copy_to_host(logits_out.data(), logits_.as<float>(), logits_out.size() * sizeof(float));
    b.synchronize();
    return {};
}

Status LlamaGraph::forward(KvCache & kv, SeqId seq, std::span<const int32_t> tokens, bool all_logits, std::vector<float> & logits_out) {
    if (tokens.empty()) return error(StatusCode::invalid_argument, "empty ubatch");
    if (tokens.size() > max_tokens_) {
        return error(StatusCode::invalid_argument,
                     "ubatch of " + std::to_string(tokens.size()) + " tokens does not fit the graph (" + std::to_string(max_tokens_) + ")");
    }
    LR_ASSIGN_OR_RETURN(UbatchPlan plan, kv.plan(seq, {.tokens = tokens, .max_tokens = uint32_t(tokens.size())}));
    return forward(plan, all_logits, kv, logits_out);
}

}  // namespace lr
