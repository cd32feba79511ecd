#pragma once
// The forward pass of the transformer families (llama, qwen2, qwen3, mistral3, phi3, gemma3,
// gemma4, the mixtures of experts qwen3moe and gpt-oss, and the hybrids qwen35 and qwen35moe):
// one ubatch through every layer, reading and writing K/V through the views of the cache's
// plan. A batch of several sequences' ubatches runs as one: every matrix is read once for
// all their tokens, and only attention and the recurrent layers run per sequence. What differs between the families is in ModelFeatures
// (model_features.h), derived once from the hyper-parameters; a mixture-of-experts FFN
// routes on the host (expert_router.h) and runs the chosen experts with Backend::moe_ffn; a
// recurrent layer's mixer is a DeltaNetBlock over the state the cache holds for it.

#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/delta_net_block.h"
#include "engine/model/model.h"
#include "engine/model/per_layer_inputs.h"
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
    // The weight bytes the ubatches run so far read: every matrix and vector of the forward
    // pass once per ubatch, the embedding rows of its tokens, and of the routed experts only
    // those some token of the ubatch chose (each once). Decode's bytes per token is the
    // difference over single-token ubatches.
    uint64_t weight_bytes_read() const { return weight_bytes_read_; }

    // Runs the ubatch the cache planned and applies it (discards it on failure). Writes the
    // logits to logits_out: [n_tokens or 1][n_vocab] (all_logits: every token, else the
    // last). A KV data loss (corrupt_data) leaves the sequence cut back to
    // KvCache::take_lost_position(), for the caller to recompute.
    Status forward(UbatchPlan & plan, bool all_logits, KvCache & kv, std::vector<float> & logits_out);
    // Runs the plans of several sequences (one each; their tokens together at most
    // max_tokens) as one ubatch and applies them (discards them all on failure). Writes
    // the logits of each plan's last token: [plans.size()][n_vocab].
    Status forward_batch(std::span<UbatchPlan> plans, KvCache & kv, std::vector<float> & logits_out);
    // Plans `tokens` as ubatches of `seq` (one, unless the cache ends one at a recurrent
    // snapshot) and runs them (tests, benchmarks).
    Status forward(KvCache & kv, SeqId seq, std::span<const int32_t> tokens, bool all_logits, std::vector<float> & logits_out);

private:
    LlamaGraph(const Model & model, uint32_t max_tokens) : model_(&model), max_tokens_(max_tokens) {}
    // One sequence's tokens in the ubatch: rows [at, at + n) of the activations.
    struct Part {
        UbatchPlan * plan;
        int64_t at;
        int64_t n;
    };
    // Takes the plans' tokens and positions in order (invalid_argument for a token outside
    // the vocabulary or too many tokens); returns their count.
    Result<int64_t> gather(std::span<UbatchPlan> plans);
    // Runs the gathered ubatch and applies its plans, or discards them all.
    Status run(KvCache & kv, int64_t n);
    Status run_layers(KvCache & kv, int64_t n);
    Status attention_block(KvCache & kv, int64_t n, uint32_t il);
    Status recurrent_block(KvCache & kv, int64_t n, uint32_t il);
    // The output head over `rows` ([n_rows][n_embd], backend memory): their logits on the host.
    void output(const float * rows, int64_t n_rows, std::vector<float> & logits_out);
    void ffn_block(int64_t n, uint32_t il);
    void moe_block(int64_t n, uint32_t il);
    void shared_expert(int64_t n, const MoeWeights & m, float * out);

    const Model * model_;
    uint32_t max_tokens_;
    ModelFeatures features_;
    uint64_t fixed_bytes_per_ubatch_ = 0;     // the weights every ubatch reads whole
    uint64_t embedding_bytes_per_token_ = 0;  // and those each token reads
    uint64_t weight_bytes_read_ = 0;
    // Activations, backend memory.
    DeviceBuffer x_;                                  // [n][n_embd] residual stream
    DeviceBuffer xn_;                                 // [n][n_embd] normed
    DeviceBuffer q_;                                  // [n][n_head][head_dim]
    DeviceBuffer k_;                                  // [n][n_head_kv][head_dim]
    DeviceBuffer v_;                                  // [n][n_head_kv][head_dim]
    DeviceBuffer attn_;                               // [n][n_head][head_dim]
    DeviceBuffer q_gate_;                             // [n][n_head][2][head_dim] q and the output gate (attn_output_gate)
    DeviceBuffer attn_gate_;                          // [n][n_head][head_dim] the output gate
    DeviceBuffer gate_;                               // [n][n_ff] (mixtures of experts: n_ff_shexp)
    DeviceBuffer up_;                                 // [n][n_ff]
    DeviceBuffer logits_;                             // [n][n_vocab]
    DeviceBuffer router_logits_;                      // [n][n_expert] (mixtures of experts)
    DeviceBuffer moe_out_;                            // [n][n_embd]
    DeviceBuffer shexp_logit_;                        // [n] the shared expert's gate
    std::vector<Part> parts_;                         // the ubatch's sequences
    std::vector<int32_t> tokens_;                     // the ubatch's tokens (host)
    std::vector<int32_t> positions_;                  // and their positions
    std::vector<float> q_temp_;                       // [n] attention temperature of each token (host)
    std::vector<float> router_host_;                  // [n][n_expert]
    std::vector<int32_t> expert_ids_;                 // [n][n_expert_used]
    std::vector<float> expert_weights_;               // [n][n_expert_used]
    std::vector<float> shexp_gate_host_;              // [n]
    std::vector<uint8_t> expert_chosen_;              // [n_expert] scratch of the byte count
    std::optional<DeltaNetBlock> delta_net_;          // the recurrent layers' mixer (qwen35)
    std::optional<PerLayerInputs> per_layer_inputs_;  // gemma4
    std::vector<float> ones_host_;                    // [head_dim] the weight of V's norm (v_norm)
    WeightView ones_;                                 // ... as the backend reads it
};

}  // namespace lr
