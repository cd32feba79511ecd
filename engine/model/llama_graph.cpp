#include "llama_graph.h"

#include <algorithm>
#include <cmath>

namespace lr {
namespace {

uint64_t view_bytes(const WeightView & v) { return v.data ? uint64_t(v.row_bytes()) * uint64_t(v.n_rows) : 0; }
uint64_t view_bytes(const std::optional<WeightView> & v) { return v ? view_bytes(*v) : 0; }

// The weights every ubatch reads whole: all but the embedding table (a row per token) and
// the routed experts (those chosen).
uint64_t fixed_weight_bytes(const ModelWeights & w) {
    uint64_t n = view_bytes(w.output_norm) + view_bytes(w.output);
    for (const LayerWeights & L : w.layers) {
        for (const WeightView * v : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) {
            n += view_bytes(*v);
        }
        for (const auto * v : {&L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm, &L.bo, &L.attn_post_norm, &L.attn_sinks, &L.ffn_post_norm}) {
            n += view_bytes(*v);
        }
        if (L.delta_net) {
            for (const WeightView * v : L.delta_net->all()) n += view_bytes(*v);
        }
        if (L.moe) {
            const MoeWeights & m = *L.moe;
            n += view_bytes(m.router);
            for (const auto * v : {&m.router_bias, &m.shexp_gate, &m.shexp_up, &m.shexp_down, &m.shexp_gate_inp}) n += view_bytes(*v);
        }
        if (L.per_layer_input)
            n += view_bytes(L.per_layer_input->gate) + view_bytes(L.per_layer_input->proj) + view_bytes(L.per_layer_input->post_norm);
    }
    if (w.per_layer_inputs) n += view_bytes(w.per_layer_inputs->model_proj) + view_bytes(w.per_layer_inputs->proj_norm);
    return n;
}

// The embedding bytes one token reads: its row of token_embd and of the per-layer inputs.
uint64_t embedding_bytes_per_token(const ModelWeights & w, uint32_t n_layer) {
    uint64_t n = w.token_embd.row_bytes();
    if (w.per_layer_inputs) n += uint64_t(w.per_layer_inputs->token_embd.row_bytes()) * n_layer;
    return n;
}

// The bytes of one routed expert: its rows of gate, up and down, and its biases.
uint64_t one_expert_bytes(const ExpertWeights & e) {
    const uint64_t n_ff = uint64_t(e.n_ff()), n_embd = uint64_t(e.n_embd());
    uint64_t n = (e.gate.row_bytes() + e.up.row_bytes()) * n_ff + e.down.row_bytes() * n_embd;
    if (e.gate_bias.data) n += n_ff * sizeof(float);
    if (e.up_bias.data) n += n_ff * sizeof(float);
    if (e.down_bias.data) n += n_embd * sizeof(float);
    return n;
}

// The width of the dense FFN buffers: the FFN, or a mixture's shared expert.
uint32_t dense_ffn_width(const ModelHParams & hp) { return hp.is_moe() ? hp.n_ff_shexp : hp.n_ff; }

}  // namespace

Result<LlamaGraph> LlamaGraph::create(const Model & model, uint32_t max_tokens, uint32_t n_ctx) {
    if (max_tokens == 0) return error(StatusCode::invalid_argument, "the ubatch size must be at least 1");
    LlamaGraph g(model, max_tokens);
    const ModelHParams & hp = model.hparams();
    const ModelWeights & w = model.weights();
    Backend & b = model.backend();
    const size_t n = max_tokens;
    const size_t f = sizeof(float);
    LR_ASSIGN_OR_RETURN(g.x_, b.alloc(n * hp.n_embd * f));
    LR_ASSIGN_OR_RETURN(g.xn_, b.alloc(n * std::max(hp.n_embd, hp.max_n_embd_q()) * f));
    LR_ASSIGN_OR_RETURN(g.q_, b.alloc(n * hp.max_n_embd_q() * f));
    LR_ASSIGN_OR_RETURN(g.k_, b.alloc(n * hp.max_n_embd_kv() * f));
    LR_ASSIGN_OR_RETURN(g.v_, b.alloc(n * hp.max_n_embd_kv() * f));
    LR_ASSIGN_OR_RETURN(g.attn_, b.alloc(n * hp.max_n_embd_q() * f));
    LR_ASSIGN_OR_RETURN(g.gate_, b.alloc(n * dense_ffn_width(hp) * f));
    LR_ASSIGN_OR_RETURN(g.up_, b.alloc(n * dense_ffn_width(hp) * f));
    LR_ASSIGN_OR_RETURN(g.logits_, b.alloc(n * hp.n_vocab * f));
    if (model_features(hp).attn_output_gate) {
        LR_ASSIGN_OR_RETURN(g.q_gate_, b.alloc(n * 2 * hp.n_embd_q() * f));
        LR_ASSIGN_OR_RETURN(g.attn_gate_, b.alloc(n * hp.n_embd_q() * f));
    }
    if (hp.full_attention_interval > 0) {
        LR_ASSIGN_OR_RETURN(DeltaNetBlock delta_net, DeltaNetBlock::create(model, max_tokens));
        g.delta_net_.emplace(std::move(delta_net));
    }
    if (hp.is_moe()) {
        LR_ASSIGN_OR_RETURN(g.router_logits_, b.alloc(n * hp.n_expert * f));
        LR_ASSIGN_OR_RETURN(g.moe_out_, b.alloc(n * hp.n_embd * f));
        LR_ASSIGN_OR_RETURN(g.shexp_logit_, b.alloc(n * f));
    }
    if (w.per_layer_inputs) {
        LR_ASSIGN_OR_RETURN(PerLayerInputs inputs, PerLayerInputs::create(hp, b, max_tokens));
        g.per_layer_inputs_.emplace(std::move(inputs));
    }
    g.fixed_bytes_per_ubatch_ = fixed_weight_bytes(w);
    g.embedding_bytes_per_token_ = embedding_bytes_per_token(w, hp.n_layer);

    g.features_ = model_features(hp);
    if (g.features_.v_norm) {
        // V's norm has no weight: ones, a multiplication that changes nothing.
        g.ones_host_.assign(std::max(hp.head_dim, hp.head_dim_swa), 1.0f);
        LR_ASSIGN_OR_RETURN(g.ones_,
                            b.prepare_weight(
                                {.type = DType::F32, .n_cols = int64_t(g.ones_host_.size()), .n_rows = 1, .data = g.ones_host_.data()}));
    }
    // Frequency factors: llama 3's rope_freqs, or phi3's LongRoPE factors, long when the
    // context exceeds the original one (llama.cpp decides by n_ctx, not by the position).
    const WeightView * factors = w.rope_freqs ? &*w.rope_freqs : nullptr;
    if (g.features_.long_short_rope) {
        const bool long_context = (n_ctx ? n_ctx : hp.n_ctx_train) > hp.n_ctx_orig;
        const std::optional<WeightView> & chosen = long_context ? w.rope_long : w.rope_short;
        if (chosen) factors = &*chosen;
    }
    const auto * ff = factors ? static_cast<const float *>(factors->data) : nullptr;
    g.features_.rope_full.freq_factors = ff;
    g.features_.rope_sliding.freq_factors = g.features_.rope_freqs_full_only ? nullptr : ff;
    return g;
}

uint64_t LlamaGraph::scratch_bytes_per_token(const ModelHParams & hp) {
    // x, xn (the wider of n_embd and n_embd_q), q, k, v, attn, gate, up (the widest layer's),
    // the per-layer inputs, and the backend's copy of the widest matmul input (converted for
    // its kernels, at most f32). Not the logits: a step returns one row of them, which the plan
    // counts (only append_all_logits fills the buffer's other rows).
    uint64_t floats = uint64_t(hp.n_embd) + std::max(hp.n_embd, hp.max_n_embd_q()) + 2 * uint64_t(hp.max_n_embd_q()) +
                      2 * uint64_t(hp.max_n_embd_kv()) + 2 * uint64_t(dense_ffn_width(hp)) +
                      std::max({hp.n_embd, hp.max_n_embd_q(), dense_ffn_width(hp)});
    if (hp.n_embd_per_layer > 0) floats += PerLayerInputs::scratch_bytes_per_token(hp) / sizeof(float);
    if (hp.is_moe()) {
        // Router logits, the mixture's output and the shared gate; and the backend's
        // expert scratch: per chosen expert gate, up, down, and the converted activations
        // (at most f32).
        floats += uint64_t(hp.n_expert) + hp.n_embd + 1;
        floats += uint64_t(hp.n_expert_used) * (2 * uint64_t(hp.n_ff_exp) + hp.n_embd + hp.n_embd + hp.n_ff_exp);
    }
    if (model_features(hp).attn_output_gate) floats += 3 * uint64_t(hp.n_embd_q());  // q with the gate, the gate
    const uint64_t recurrent = hp.full_attention_interval > 0 ? DeltaNetBlock::scratch_bytes_per_token(hp) : 0;
    return sizeof(float) * floats + recurrent;
}

// x += attention(norm(x)) of layer il. A layer without KV of its own (KV sharing) computes
// q only and attends over the view of its source layer, which ran before it. Each sequence
// of the ubatch attends over its own view.
Status LlamaGraph::attention_block(KvCache & kv, int64_t n, uint32_t il) {
    const ModelHParams & hp = model_->hparams();
    const LayerWeights & L = model_->weights().layers[il];
    const ModelFeatures & f = features_;
    Backend & b = model_->backend();
    const int32_t * pos = positions_.data();
    const bool has_kv = hp.has_kv(il);
    const uint32_t d = hp.head_dim_of(il), n_q = hp.n_embd_q_of(il), n_head_kv = hp.n_head_kv_of(il);
    float * x = x_.as<float>();        // [n][n_embd]
    float * xn = xn_.as<float>();      // [n][n_embd]
    float * q = q_.as<float>();        // [n][n_head][d]
    float * k = k_.as<float>();        // [n][n_head_kv][d]
    float * v = v_.as<float>();        // [n][n_head_kv][d]
    float * attn = attn_.as<float>();  // [n][n_head][d]

    b.rms_norm(x, L.attn_norm, hp.rms_eps, n, xn);
    if (f.attn_output_gate) {
        // attn_q gives [q_h | gate_h] per head.
        float * q_gate = q_gate_.as<float>();  // [n][n_head][2][head_dim]
        b.matmul(L.wq, xn, n, q_gate);
        b.copy_rows(q_gate, 2 * hp.head_dim, n * hp.n_head, hp.head_dim, q, hp.head_dim);
        b.copy_rows(q_gate + hp.head_dim, 2 * hp.head_dim, n * hp.n_head, hp.head_dim, attn_gate_.as<float>(), hp.head_dim);
    } else {
        b.matmul(L.wq, xn, n, q);
    }
    if (has_kv) {
        b.matmul(L.wk, xn, n, k);
        if (L.wv.data) {
            b.matmul(L.wv, xn, n, v);
        } else {
            b.copy_on_device(v, k, size_t(n) * n_head_kv * d * sizeof(float));  // V is the raw K
        }
    }
    if (L.bq) b.add_bias(q, *L.bq, n);
    if (L.bk) b.add_bias(k, *L.bk, n);
    if (L.bv) b.add_bias(v, *L.bv, n);
    if (L.q_norm) b.rms_norm(q, *L.q_norm, hp.rms_eps, n * hp.n_head, q);  // each head
    if (L.k_norm) b.rms_norm(k, *L.k_norm, hp.rms_eps, n * n_head_kv, k);
    if (has_kv && f.v_norm)
        b.rms_norm(v, {.type = DType::F32, .n_cols = int64_t(d), .n_rows = 1, .data = ones_.data}, hp.rms_eps, n * n_head_kv, v);
    const RopeParams & rope = hp.is_sliding(il) ? f.rope_sliding : f.rope_full;
    b.rope(q, n, hp.n_head, pos, rope);
    if (has_kv) b.rope(k, n, n_head_kv, pos, rope);
    if (f.q_scale != 1.0f) b.scale(q, n * n_q, f.q_scale);
    if (f.attn_temp_scale != 0.0f) b.scale_tokens(q, n, n_q, q_temp_.data());

    for (const Part & part : parts_) {
        const int64_t at = part.at, n_part = part.n;
        LR_ASSIGN_OR_RETURN(const PagedKvView view, kv.layer_view(*part.plan, il, q + (at + n_part - 1) * n_q));
        LR_ASSERT(view.shape.head_dim == d);
        const size_t kv_at = size_t(at) * n_head_kv * d;
        if (has_kv) b.kv_write(view, k + kv_at, v + kv_at, pos + at, n_part);
        const AttentionParams params{
            .n_head = int32_t(hp.n_head),
            .n_head_kv = int32_t(view.shape.n_head_kv),
            .head_dim = int32_t(d),
            .scale = f.kq_scale,
            .window = int32_t(hp.window(il)),
            .sinks = L.attn_sinks ? static_cast<const float *>(L.attn_sinks->data) : nullptr,
        };
        b.attention(q + size_t(at) * n_q, n_part, pos + at, view, params, attn + size_t(at) * n_q);
    }
    if (f.attn_output_gate) b.sigmoid_mul(attn, attn_gate_.as<float>(), n * hp.n_embd_q());
    b.matmul(L.wo, attn, n, xn);
    if (L.bo) b.add_bias(xn, *L.bo, n);
    if (L.attn_post_norm) b.rms_norm(xn, *L.attn_post_norm, hp.rms_eps, n, xn);
    b.add(x, xn, n * hp.n_embd);
    return {};
}

// x += delta_net(norm(x)) of recurrent layer il, advancing each sequence's state the cache
// holds for it.
Status LlamaGraph::recurrent_block(KvCache & kv, int64_t n, uint32_t il) {
    const ModelHParams & hp = model_->hparams();
    Backend & b = model_->backend();
    float * x = x_.as<float>();    // [n][n_embd]
    float * xn = xn_.as<float>();  // [n][n_embd]
    b.rms_norm(x, model_->weights().layers[il].attn_norm, hp.rms_eps, n, xn);
    for (const Part & part : parts_) {
        LR_ASSIGN_OR_RETURN(void * state, kv.recurrent_state(*part.plan, il));
        float * rows = xn + size_t(part.at) * hp.n_embd;
        delta_net_->run(il, rows, part.n, state, rows);
    }
    b.add(x, xn, n * hp.n_embd);
    return {};
}

// x += ffn(norm(x)) of layer il: down(act(gate) * up).
void LlamaGraph::ffn_block(int64_t n, uint32_t il) {
    const ModelHParams & hp = model_->hparams();
    const LayerWeights & L = model_->weights().layers[il];
    if (L.moe) {
        moe_block(n, il);
        return;
    }
    Backend & b = model_->backend();
    float * x = x_.as<float>();        // [n][n_embd]
    float * xn = xn_.as<float>();      // [n][n_embd]
    float * gate = gate_.as<float>();  // [n][n_ff]
    float * up = up_.as<float>();      // [n][n_ff]

    const uint32_t n_ff = hp.n_ff_of(il);
    b.rms_norm(x, L.ffn_norm, hp.rms_eps, n, xn);
    b.matmul(L.ffn_gate, xn, n, gate);
    b.matmul(L.ffn_up, xn, n, up);
    if (features_.ffn_act == FfnActivation::gelu_tanh) {
        b.geglu(gate, up, n * n_ff, gate);
    } else {
        b.swiglu(gate, up, n, n_ff, gate);
    }
    b.matmul(L.ffn_down, gate, n, xn);
    if (L.ffn_post_norm) b.rms_norm(xn, *L.ffn_post_norm, hp.rms_eps, n, xn);
    b.add(x, xn, n * hp.n_embd);
}

// x += moe(norm(x)) of layer il: the router chooses each token's experts (on the host, as
// llama.cpp's graph does), the backend runs them, and the shared expert adds its part.
void LlamaGraph::moe_block(int64_t n, uint32_t il) {
    const ModelHParams & hp = model_->hparams();
    const LayerWeights & L = model_->weights().layers[il];
    const MoeWeights & m = *L.moe;
    Backend & b = model_->backend();
    float * x = x_.as<float>();                   // [n][n_embd]
    float * xn = xn_.as<float>();                 // [n][n_embd]
    float * logits = router_logits_.as<float>();  // [n][n_expert]
    float * out = moe_out_.as<float>();           // [n][n_embd]

    b.rms_norm(x, L.ffn_norm, hp.rms_eps, n, xn);
    b.matmul(m.router, xn, n, logits);
    if (m.router_bias) b.add_bias(logits, *m.router_bias, n);
    router_host_.resize(size_t(n) * hp.n_expert);
    b.copy_to_host(router_host_.data(), logits, router_host_.size() * sizeof(float));
    expert_ids_.resize(size_t(n) * hp.n_expert_used);
    expert_weights_.resize(expert_ids_.size());
    route_experts(hp.router(), router_host_.data(), n, expert_ids_.data(), expert_weights_.data());
    const ExpertRoutes routes{.n_used = int32_t(hp.n_expert_used), .ids_host = expert_ids_.data(), .weights_host = expert_weights_.data()};
    b.moe_ffn(m.experts, xn, n, routes, out);

    expert_chosen_.assign(hp.n_expert, 0);
    uint64_t n_chosen = 0;
    for (int32_t e : expert_ids_) {
        if (expert_chosen_[size_t(e)] == 0) {
            expert_chosen_[size_t(e)] = 1;
            ++n_chosen;
        }
    }
    weight_bytes_read_ += n_chosen * one_expert_bytes(m.experts);

    if (m.shexp_gate) shared_expert(n, m, out);
    b.add(x, out, n * hp.n_embd);
}

// out += shared(xn) * sigmoid(shexp_gate_inp . xn), llama.cpp's shared expert (xn is spent).
void LlamaGraph::shared_expert(int64_t n, const MoeWeights & m, float * out) {
    const ModelHParams & hp = model_->hparams();
    Backend & b = model_->backend();
    float * xn = xn_.as<float>();              // [n][n_embd]
    float * gate = gate_.as<float>();          // [n][n_ff_shexp]
    float * up = up_.as<float>();              // [n][n_ff_shexp]
    float * logit = shexp_logit_.as<float>();  // [n]

    if (m.shexp_gate_inp) {
        b.matmul(*m.shexp_gate_inp, xn, n, logit);
        shexp_gate_host_.resize(size_t(n));
        b.copy_to_host(shexp_gate_host_.data(), logit, size_t(n) * sizeof(float));
        for (float & g : shexp_gate_host_) g = 1.0f / (1.0f + std::exp(-g));  // ggml_sigmoid
    }
    b.matmul(*m.shexp_gate, xn, n, gate);
    b.matmul(*m.shexp_up, xn, n, up);
    b.swiglu(gate, up, n, hp.n_ff_shexp, gate);
    b.matmul(*m.shexp_down, gate, n, xn);
    if (m.shexp_gate_inp) b.scale_tokens(xn, n, hp.n_embd, shexp_gate_host_.data());
    b.add(out, xn, n * hp.n_embd);
}

Status LlamaGraph::run_layers(KvCache & kv, int64_t n) {
    const ModelHParams & hp = model_->hparams();
    const ModelWeights & w = model_->weights();
    Backend & b = model_->backend();
    float * x = x_.as<float>();  // [n][n_embd]

    b.get_rows(w.token_embd, tokens_.data(), n, x);
    if (features_.embd_scale != 0.0f) b.scale(x, n * hp.n_embd, features_.embd_scale);
    if (per_layer_inputs_) per_layer_inputs_->compute(*w.per_layer_inputs, tokens_.data(), x, n);
    if (features_.attn_temp_scale != 0.0f) {
        q_temp_.resize(size_t(n));
        for (int64_t t = 0; t < n; ++t) q_temp_[size_t(t)] = attention_temperature(features_, positions_[size_t(t)]);
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (model_->weights().layers[il].delta_net) {
            LR_RETURN_IF_ERROR(recurrent_block(kv, n, il));
        } else {
            LR_RETURN_IF_ERROR(attention_block(kv, n, il));
        }
        ffn_block(n, il);
        const LayerWeights & L = w.layers[il];
        if (L.per_layer_input) per_layer_inputs_->add_to_layer(*L.per_layer_input, il, x, xn_.as<float>(), n);
        if (L.output_scale != 1.0f) b.scale(x, n * hp.n_embd, L.output_scale);
    }
    return {};
}

Result<int64_t> LlamaGraph::gather(std::span<UbatchPlan> plans) {
    const ModelHParams & hp = model_->hparams();
    parts_.clear();
    tokens_.clear();
    positions_.clear();
    for (UbatchPlan & plan : plans) {
        if (plan.n_tokens() == 0) return error(StatusCode::invalid_argument, "empty ubatch");
        for (int32_t t : plan.tokens()) {
            if (t < 0 || uint32_t(t) >= hp.n_vocab) {
                return error(StatusCode::invalid_argument,
                             "token id " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(hp.n_vocab - 1) + ")");
            }
        }
        parts_.push_back({.plan = &plan, .at = int64_t(tokens_.size()), .n = plan.n_tokens()});
        tokens_.insert(tokens_.end(), plan.tokens().begin(), plan.tokens().end());
        positions_.insert(positions_.end(), plan.positions().begin(), plan.positions().end());
    }
    const int64_t n = int64_t(tokens_.size());
    if (n > max_tokens_) {
        return error(StatusCode::invalid_argument,
                     "ubatch of " + std::to_string(n) + " tokens does not fit the graph (" + std::to_string(max_tokens_) + ")");
    }
    return n;
}

Status LlamaGraph::run(KvCache & kv, int64_t n) {
    weight_bytes_read_ += fixed_bytes_per_ubatch_ + uint64_t(n) * embedding_bytes_per_token_;
    if (Status s = run_layers(kv, n); !s.ok()) {
        for (const Part & part : parts_) kv.discard(*part.plan);
        return s;
    }
    for (const Part & part : parts_) kv.apply(*part.plan);
    return {};
}

Status LlamaGraph::forward(UbatchPlan & plan, bool all_logits, KvCache & kv, std::vector<float> & logits_out) {
    const ModelHParams & hp = model_->hparams();
    Result<int64_t> gathered = gather(std::span(&plan, 1));
    if (!gathered.ok()) {
        kv.discard(plan);
        return gathered.status();
    }
    const int64_t n = *gathered;
    LR_RETURN_IF_ERROR(run(kv, n));

    // Logits only for the rows asked for.
    const int64_t n_out = all_logits ? n : 1;
    output(x_.as<float>() + (n - n_out) * hp.n_embd, n_out, logits_out);
    return {};
}

void LlamaGraph::output(const float * rows, int64_t n_rows, std::vector<float> & logits_out) {
    const ModelHParams & hp = model_->hparams();
    Backend & b = model_->backend();
    const ModelWeights & w = model_->weights();
    b.rms_norm(rows, w.output_norm, hp.rms_eps, n_rows, xn_.as<float>());
    b.matmul(w.output, xn_.as<float>(), n_rows, logits_.as<float>());
    if (features_.final_softcap != 0.0f) b.softcap(logits_.as<float>(), n_rows * hp.n_vocab, features_.final_softcap);
    logits_out.resize(size_t(n_rows) * hp.n_vocab);
    b.copy_to_host(logits_out.data(), logits_.as<float>(), logits_out.size() * sizeof(float));
    b.synchronize();
}

Status LlamaGraph::forward_batch(std::span<UbatchPlan> plans, KvCache & kv, std::vector<float> & logits_out) {
    const ModelHParams & hp = model_->hparams();
    Result<int64_t> gathered = gather(plans);
    if (!gathered.ok()) {
        for (UbatchPlan & plan : plans) kv.discard(plan);
        return gathered.status();
    }
    LR_RETURN_IF_ERROR(run(kv, *gathered));

    // Each sequence's last row, then the output head over those rows only.
    Backend & b = model_->backend();
    float * last = xn_.as<float>();
    for (size_t i = 0; i < parts_.size(); ++i) {
        const Part & part = parts_[i];
        b.copy_on_device(last + i * hp.n_embd, x_.as<float>() + (part.at + part.n - 1) * hp.n_embd, hp.n_embd * sizeof(float));
    }
    output(last, int64_t(parts_.size()), logits_out);
    return {};
}

Status LlamaGraph::forward(KvCache & kv, SeqId seq, std::span<const int32_t> tokens, bool all_logits, std::vector<float> & logits_out) {
    if (tokens.empty()) return error(StatusCode::invalid_argument, "empty ubatch");
    if (tokens.size() > max_tokens_) {
        return error(StatusCode::invalid_argument,
                     "ubatch of " + std::to_string(tokens.size()) + " tokens does not fit the graph (" + std::to_string(max_tokens_) + ")");
    }
    // The cache may end a ubatch early (a recurrent sequence's snapshot): the rest follows.
    std::vector<float> part;
    logits_out.clear();
    for (size_t at = 0; at < tokens.size();) {
        LR_ASSIGN_OR_RETURN(UbatchPlan plan, kv.plan(seq, {.tokens = tokens.subspan(at), .max_tokens = uint32_t(tokens.size() - at)}));
        at += plan.n_tokens();
        LR_RETURN_IF_ERROR(forward(plan, all_logits, kv, part));
        if (!all_logits) logits_out.clear();
        logits_out.insert(logits_out.end(), part.begin(), part.end());
    }
    return {};
}

}  // namespace lr
