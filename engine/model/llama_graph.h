#pragma once
// The forward pass of the dense transformer families (llama, qwen2, qwen3, mistral3, phi3,
// gemma3): one ubatch of one sequence through every layer, reading and writing K/V through
// the views of the cache's plan. What differs between the families is in ModelFeatures
// (model_features.h), derived once from the hyper-parameters.

#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model.h"
#include "kvcache/kv_cache.h"

namespace lr {

class LlamaGraph {
public:
    // Scratch for ubatches of up to max_tokens tokens, in a session whose context holds
    // n_ctx tokens (0: the trained context); like llama.cpp's n_ctx, it chooses phi3's
    // LongRoPE factors (long when n_ctx exceeds the original context).
    static Result<LlamaGraph> create(const Model & model, uint32_t max_tokens, uint32_t n_ctx = 0);
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
    Status attention_block(KvCache & kv, UbatchPlan & plan, int64_t n, uint32_t il);
    void ffn_block(int64_t n, uint32_t il);

    const Model * model_;
    uint32_t max_tokens_;
    ModelFeatures features_;
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
    std::vector<float> q_temp_;    // [n] attention temperature of each token (host)
};

}  // namespace lr
