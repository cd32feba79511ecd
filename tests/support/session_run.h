#pragma once
// Running a prompt and a few steps through a Session and recording every logit row: how
// the cache tests compare a cache (tiered, on CUDA, ...) with its oracle.

#include <cstring>
#include <random>
#include <span>
#include <stop_token>
#include <vector>

#include "engine/backend/kv_block_layout.h"
#include "engine/runtime/session.h"
#include "support/reference_data.h"

namespace lr::test {

struct SessionRun {
    std::vector<std::vector<float>> logits;  // after the prompt, then after each step
    std::vector<int32_t> tokens;             // the tokens fed after the prompt
    KvStats stats;
    Status status;
};

// BOS, then n - 1 random ids above the special ones.
inline std::vector<int32_t> random_prompt(std::mt19937 & rng, size_t n, int32_t n_vocab) {
    std::vector<int32_t> t{1};
    while (t.size() < n) t.push_back(3 + int32_t(rng() % uint32_t(n_vocab - 3)));
    return t;
}

// Prefill, then `steps` tokens: `forced` ones when given (teacher forcing, so that a near
// tie cannot derail a comparison), else greedy.
inline SessionRun run_session(std::shared_ptr<const Model> model, const std::vector<int32_t> & prompt, int steps, SessionConfig config,
                              const std::vector<int32_t> & forced = {}, std::stop_token stop = {}) {
    SessionRun r;
    auto session = Session::create(model, config);
    if (!session.ok()) {
        r.status = session.status();
        return r;
    }
    r.status = (*session)->append(prompt, {}, stop);
    if (!r.status.ok()) return r;
    for (int i = 0;; ++i) {
        const auto l = (*session)->logits();
        r.logits.emplace_back(l.begin(), l.end());
        if (i == steps) break;
        const int32_t next = size_t(i) < forced.size() ? forced[size_t(i)] : argmax(l, l.size());
        r.tokens.push_back(next);
        r.status = (*session)->append(std::span(&next, 1));
        if (!r.status.ok()) return r;
    }
    (*session)->kv_cache().flush();
    r.stats = (*session)->kv_stats();
    return r;
}

// The stats' row of one layer kind (an empty row when the model has none).
inline KvLayerKindStats kind_row(const KvStats & s, KvLayerKind kind) {
    for (const KvLayerKindStats & r : s.layer_kinds) {
        if (r.kind == kind) return r;
    }
    return {.kind = kind};
}

// Every logit bit for bit.
inline bool identical(const SessionRun & a, const SessionRun & b) {
    if (a.logits.size() != b.logits.size()) return false;
    for (size_t i = 0; i < a.logits.size(); ++i) {
        if (a.logits[i].size() != b.logits[i].size() ||
            std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * sizeof(float)) != 0) {
            return false;
        }
    }
    return true;
}

// MiB of one layer's KV for n tokens in blocks of `bt` (f16).
inline double layer_mib(const Model & model, uint32_t n_tokens, uint32_t bt) {
    const KvBlockLayout layout{{bt, model.hparams().n_head_kv, model.hparams().head_dim}, KvCodec::f16, KvCodec::f16};
    return double((n_tokens + bt - 1) / bt * layout.block_bytes()) / (1 << 20);
}

}  // namespace lr::test
