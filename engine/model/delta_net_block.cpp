#include "engine/model/delta_net_block.h"

#include <cmath>

namespace lr {

Result<DeltaNetBlock> DeltaNetBlock::create(const Model & model, uint32_t max_tokens) {
    DeltaNetBlock d(model);
    const ModelHParams & hp = model.hparams();
    Backend & b = model.backend();
    const size_t n = max_tokens, f = sizeof(float);
    const size_t channels = hp.delta_net_channels(), qk = size_t(hp.ssm_group_count) * hp.ssm_state_size, inner = hp.ssm_inner_size;
    LR_ASSIGN_OR_RETURN(d.qkv_, b.alloc(n * channels * f));
    LR_ASSIGN_OR_RETURN(d.conv_, b.alloc(n * channels * f));
    LR_ASSIGN_OR_RETURN(d.q_, b.alloc(n * qk * f));
    LR_ASSIGN_OR_RETURN(d.k_, b.alloc(n * qk * f));
    LR_ASSIGN_OR_RETURN(d.v_, b.alloc(n * inner * f));
    LR_ASSIGN_OR_RETURN(d.z_, b.alloc(n * inner * f));
    LR_ASSIGN_OR_RETURN(d.o_, b.alloc(n * inner * f));
    LR_ASSIGN_OR_RETURN(d.gates_, b.alloc(2 * n * hp.ssm_time_step_rank * f));
    d.rule_ = {.n_k_heads = int32_t(hp.ssm_group_count),
               .n_v_heads = int32_t(hp.ssm_time_step_rank),
               .head_k_dim = int32_t(hp.ssm_state_size),
               .head_v_dim = int32_t(hp.ssm_state_size)};
    d.dt_bias_.resize(hp.n_layer);
    d.decay_a_.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::optional<DeltaNetWeights> & w = model.weights().layers[il].delta_net;
        if (!w) continue;
        d.dt_bias_[il].resize(hp.ssm_time_step_rank);
        d.decay_a_[il].resize(hp.ssm_time_step_rank);
        b.copy_to_host(d.dt_bias_[il].data(), w->dt_bias.data, d.dt_bias_[il].size() * f);
        b.copy_to_host(d.decay_a_[il].data(), w->a.data, d.decay_a_[il].size() * f);
    }
    return d;
}

uint64_t DeltaNetBlock::scratch_bytes_per_token(const ModelHParams & hp) {
    // qkv, conv, q, k, v, z, o and the two gates.
    const uint64_t qk = uint64_t(hp.ssm_group_count) * hp.ssm_state_size;
    return sizeof(float) * (2 * uint64_t(hp.delta_net_channels()) + 2 * qk + 3 * uint64_t(hp.ssm_inner_size) + 2 * hp.ssm_time_step_rank);
}

void DeltaNetBlock::run(uint32_t il, const float * xn, int64_t n, void * state, float * out) {
    const ModelHParams & hp = model_->hparams();
    const DeltaNetWeights & w = *model_->weights().layers[il].delta_net;
    Backend & b = model_->backend();
    const int64_t channels = hp.delta_net_channels(), n_v = hp.ssm_time_step_rank, dv = hp.ssm_state_size;
    const int64_t qk = int64_t(hp.ssm_group_count) * hp.ssm_state_size, inner = hp.ssm_inner_size;
    float * qkv = qkv_.as<float>();      // [n][channels]
    float * conv = conv_.as<float>();    // [n][channels]
    float * q = q_.as<float>();          // [n][n_k_heads][head_k_dim]
    float * k = k_.as<float>();          // [n][n_k_heads][head_k_dim]
    float * v = v_.as<float>();          // [n][n_v_heads][head_v_dim]
    float * z = z_.as<float>();          // [n][inner]
    float * o = o_.as<float>();          // [n][inner]
    float * gates = gates_.as<float>();  // [2][n][n_v_heads]
    auto * conv_state = static_cast<float *>(state);
    float * rule_state = conv_state + int64_t(hp.ssm_conv_kernel - 1) * channels;

    b.matmul(w.qkv, xn, n, qkv);
    b.matmul(w.gate, xn, n, z);
    b.matmul(w.beta, xn, n, gates);
    b.matmul(w.alpha, xn, n, gates + n * n_v);
    gates_host_.resize(size_t(2 * n * n_v));
    b.copy_to_host(gates_host_.data(), gates, gates_host_.size() * sizeof(float));
    float * beta = gates_host_.data();
    float * g = beta + n * n_v;
    for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < n_v; ++h) {
            float & bt = beta[t * n_v + h];
            bt = 1.0f / (1.0f + std::exp(-bt));  // ggml_sigmoid
            const float x = g[t * n_v + h] + dt_bias_[il][size_t(h)];
            const float softplus = x > 20.0f ? x : std::log(1.0f + std::exp(x));  // ggml_softplus
            g[t * n_v + h] = softplus * decay_a_[il][size_t(h)];
        }
    }

    b.causal_conv_silu(qkv, n, w.conv, conv_state, conv);
    b.copy_rows(conv, channels, n, qk, q, qk);
    b.copy_rows(conv + qk, channels, n, qk, k, qk);
    b.copy_rows(conv + 2 * qk, channels, n, inner, v, inner);
    b.l2_norm(q, n * hp.ssm_group_count, hp.ssm_state_size, hp.rms_eps, q);
    b.l2_norm(k, n * hp.ssm_group_count, hp.ssm_state_size, hp.rms_eps, k);
    DeltaRuleParams rule = rule_;
    rule.chunk_tokens = n > 1 ? kChunkTokens : 0;  // llama.cpp: chunked for a prompt, recurrent for one token
    b.gated_delta_rule(q, k, v, g, beta, n, rule, rule_state, o);

    // rms_norm(o) * silu(z), each v head.
    b.rms_norm(o, w.norm, hp.rms_eps, n * n_v, o);
    b.swiglu(z, o, n * n_v, dv, z);
    b.matmul(w.out, z, n, out);
}

}  // namespace lr
