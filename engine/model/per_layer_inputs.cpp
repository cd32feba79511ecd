#include "per_layer_inputs.h"

#include <cmath>

#include "engine/model/model_weights.h"

namespace lr {

Result<PerLayerInputs> PerLayerInputs::create(const ModelHParams & hp, Backend & backend, uint32_t max_tokens) {
    PerLayerInputs p(backend, hp);
    const size_t width = size_t(max_tokens) * hp.n_embd_per_layer * sizeof(float);
    LR_ASSIGN_OR_RETURN(p.inputs_, backend.alloc(width * hp.n_layer));
    LR_ASSIGN_OR_RETURN(p.gate_, backend.alloc(width));
    return p;
}

uint64_t PerLayerInputs::scratch_bytes_per_token(const ModelHParams & hp) {
    return sizeof(float) * (uint64_t(hp.n_layer) + 1) * hp.n_embd_per_layer;
}

void PerLayerInputs::compute(const PerLayerInputWeights & w, const int32_t * tokens_host, const float * x, int64_t n) {
    Backend & b = *backend_;
    n_ = n;
    const int64_t size = n * width_;
    float * gate = gate_.as<float>();
    rows_.resize(size_t(n));
    for (uint32_t il = 0; il < n_layer_; ++il) {
        float * input = inputs_.as<float>() + il * size;
        for (int64_t t = 0; t < n; ++t) rows_[size_t(t)] = tokens_host[t] * int32_t(n_layer_) + int32_t(il);
        b.get_rows(w.token_embd, rows_.data(), n, input);
        b.scale(input, size, std::sqrt(float(width_)));
        b.matmul(weight_rows(w.model_proj, int64_t(il) * width_, int64_t(il + 1) * width_), x, n, gate);
        b.scale(gate, size, 1.0f / std::sqrt(float(n_embd_)));
        b.rms_norm(gate, w.proj_norm, eps_, n, gate);
        b.add(input, gate, size);
        b.scale(input, size, 1.0f / std::sqrt(2.0f));
    }
}

void PerLayerInputs::add_to_layer(const PerLayerInputLayerWeights & L, uint32_t il, float * x, float * out, int64_t n) {
    Backend & b = *backend_;
    float * gate = gate_.as<float>();
    b.matmul(L.gate, x, n, gate);
    b.geglu(gate, inputs_.as<float>() + il * n_ * width_, n * width_, gate);
    b.matmul(L.proj, gate, n, out);
    b.rms_norm(out, L.post_norm, eps_, n, out);
    b.add(x, out, n * n_embd_);
}

}  // namespace lr
