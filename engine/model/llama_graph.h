#pragma once
// The forward pass of the llama family (llama, qwen2): one ubatch of one sequence
// through every layer, reading and writing K/V through the views of the cache's plan.

#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model.h"
#include "kvcache/kv_cache.h"

namespace lr {

class LlamaGraph {
public:
    // Scratch for ubatches of up to max_tokens tokens.
    static Result<LlamaGraph> create(const Model & model, uint32_t max_tokens);
    // The activations one ubatch token takes (the buffers below): what the planner counts.
    static uint64_t scratch_bytes_per_token(const ModelHParams & hp);

    uint32_t max_tokens() const { return max_tokens_; }

    // Runs the ubatch the cache planned and applies it (discards it on failure). Writes the
    // logits to logits_out: [n_tokens or 1][n_vocab] (all_logits: every token, else the
    // last). A KV data loss (corrupt_data) leaves the sequence cut back to
    // KvCache::take_lost_position(), for the caller to recompute.
    Status forward(UbatchPlan & plan, bool all_logits, KvCache & kv, std::vector<float> & logits_out);
    // Plans `tokens` as one ubatch of `seq` and runs it (tests, benchmarks).
    Status forward(KvCache & kv, SeqId seq, std::span<const int32_t> tokens, bool all_logits, std::vector<float> & logits_out);

private:
    LlamaGraph(const Model & model, uint32_t max_tokens) : model_(&model), max_tokens_(max_tokens) {}
    Status run_layers(KvCache & kv, UbatchPlan & plan, int64_t n);

    const Model * model_;
    uint32_t max_tokens_;
    // Activations, backend memory.
    DeviceBuffer x_;               // [n][n_embd] residual stream
    DeviceBuffer xn_;              // [n][n_embd] normed
    DeviceBuffer q_;               // [n][n_head][head_dim]
    DeviceBuffer k_;               // [n][n_head_kv][head_dim]
    DeviceBuffer v_;               // [n][n_head_kv][head_dim]
    DeviceBuffer attn_;            // [n][n_head][head_dim]
    DeviceBuffer gate_;            // [n][n_ff]
    DeviceBuffer up_;              // [n][n_ff]
    DeviceBuffer logits_;          // [n][n_vocab]
    std::vector<int32_t> tokens_;  // the ubatch's tokens (host)
};

}  // namespace lr
