#pragma once
// The forward pass of the llama family (llama, qwen2): one ubatch of one sequence
// through every layer, reading and writing K/V through the paged KV cache.

#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model.h"
#include "kvcache/kv_cache.h"

namespace lr {

struct Ubatch {
    std::span<const int32_t> tokens;   // positions come from the KV cache
    bool all_logits = false;           // logits for every token, or only the last
    bool observation = false;          // SnapKV's observation window (attention is recorded)
};

class LlamaGraph {
public:
    // Scratch for ubatches of up to max_tokens tokens.
    static Result<LlamaGraph> create(const Model & model, uint32_t max_tokens);

    uint32_t max_tokens() const { return max_tokens_; }

    // Runs the ubatch and commits its K/V to `seq` (rolled back on failure). Writes the
    // logits to logits_out: [n_tokens or 1][n_vocab]. A KV data loss (corrupt_data) leaves
    // `seq` cut back to KvCache::take_lost_position(), for the caller to recompute.
    Status forward(const Ubatch & ubatch, KvCache & kv, SeqId seq, std::vector<float> & logits_out);

private:
    LlamaGraph(const Model & model, uint32_t max_tokens) : model_(&model), max_tokens_(max_tokens) {}
    Status run_layers(KvCache & kv, SeqId seq, int64_t n);

    const Model * model_;
    uint32_t max_tokens_;
    // Activations, backend memory.
    DeviceBuffer x_;       // [n][n_embd] residual stream
    DeviceBuffer xn_;      // [n][n_embd] normed
    DeviceBuffer q_;       // [n][n_head][head_dim]
    DeviceBuffer k_;       // [n][n_head_kv][head_dim]
    DeviceBuffer v_;       // [n][n_head_kv][head_dim]
    DeviceBuffer attn_;    // [n][n_head][head_dim]
    DeviceBuffer gate_;    // [n][n_ff]
    DeviceBuffer up_;      // [n][n_ff]
    DeviceBuffer logits_;  // [n][n_vocab]
    std::vector<float> q_host_;  // [n_head][head_dim] of the last token, for query-aware caches
    std::vector<int32_t> tokens_;  // the ubatch's tokens (host)
};

}  // namespace lr
