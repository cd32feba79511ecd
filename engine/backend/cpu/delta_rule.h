#pragma once
// The gated delta rule of one v head over a ubatch, in llama.cpp's two forms (backend.h,
// DeltaRuleParams): the recurrent form of its fused CPU op (token by token) and the chunked
// form of its graph (build_delta_net_chunking), each product and sum in float in llama.cpp's
// order. Portable code: the CPU backend runs it for every ISA.

#include <cstdint>

#include "engine/backend/backend.h"

namespace lr::cpu {

// Head h of the ubatch: q, k point at the ubatch's rows of its q/k head (rows of
// n_k_heads * head_k_dim floats), v, out at those of its v head (rows of n_v_heads *
// head_v_dim); g, beta at its column of the [n_tokens][n_v_heads] gates. state:
// [head_v_dim][head_k_dim], S transposed.
struct DeltaRuleHead {
    const float * q = nullptr;
    const float * k = nullptr;
    const float * v = nullptr;
    const float * g = nullptr;
    const float * beta = nullptr;
    float * state = nullptr;
    float * out = nullptr;
};

void delta_rule_recurrent(const DeltaRuleHead & h, int64_t n_tokens, const DeltaRuleParams & p);
void delta_rule_chunked(const DeltaRuleHead & h, int64_t n_tokens, const DeltaRuleParams & p);

}  // namespace lr::cpu
