#pragma once
// A conversation's state on one model: the tokens evaluated so far and their KV cache.
// Tokens are evaluated in chunks (prefill) or one at a time (decode); every long call takes
// a stop token checked between chunks, and a cancelled call leaves the session consistent
// (the tokens of finished chunks stay, the interrupted chunk is dropped).

#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <vector>

#include "engine/api/generation.h"
#include "engine/api/memory_plan.h"
#include "engine/model/llama_graph.h"
#include "engine/model/model.h"
#include "kvcache/kv_cache.h"

namespace lr {

struct SessionConfig {
    uint32_t n_ctx = 0;           // positions the session may hold; 0: the model's trained context
    uint32_t chunk_tokens = 256;  // prefill chunk (ubatch) size; kAutoChunk: from each prompt's length
    KvSettings kv;                // the cache's knobs (tiers, prefix cache, policy, codecs)
    std::shared_ptr<FileIo> io;   // file operations of the disk tiers (tests inject faults)
};

// Checks the settings against the model; messages name the setting and its range.
Status validate(const SessionConfig & config, const ModelHParams & hp);

// What the memory planner needs to know about a model (the model picker has only a file's
// header: its hyper-parameters and weight bytes give the same numbers).
// expert_bytes: of weight_bytes, the routed experts'.
ModelMemoryShape memory_shape(const ModelHParams & hp, uint64_t weight_bytes, uint64_t expert_bytes = 0, uint64_t file_bytes = 0);
inline ModelMemoryShape memory_shape(const Model & model) {
    ModelMemoryShape shape = memory_shape(model.hparams(), model.weights().n_bytes, model.weights().n_expert_bytes,
                                          model.file().file_size());
    shape.host_threads = model.backend().host_threads();
    return shape;
}

// The KV cache of a session of `config` (whose n_ctx 0 becomes the model's trained context):
// tier budgets resolved for this machine, refused up front (out_of_memory saying what to
// change) when the plan says a sequence of n_ctx tokens cannot fit.
Result<std::unique_ptr<KvCache>> create_session_cache(std::shared_ptr<const Model> model, SessionConfig & config);

class Session {
public:
    static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model, SessionConfig config);

    const Model & model() const { return *model_; }
    const SessionConfig & config() const { return config_; }
    uint32_t n_ctx() const { return config_.n_ctx; }
    const std::vector<int32_t> & tokens() const { return tokens_; }
    // Tokens that may still be appended (UINT32_MAX when the cache policy renumbers positions
    // to run past the context).
    uint32_t room() const { return kv_->room(kSeq); }
    KvCache & kv_cache() { return *kv_; }

    // Evaluates `tokens` after the current ones. logits() then holds the last token's.
    // context_full (nothing evaluated) when they do not fit; cancelled when stopped.
    Status append(std::span<const int32_t> tokens, const ProgressFn & progress = {}, std::stop_token stop = {});

    // As append, and returns the logits of every appended token: [n][n_vocab].
    Status append_all_logits(std::span<const int32_t> tokens, std::vector<float> & logits, std::stop_token stop = {});

    // Makes the session hold exactly `tokens`: keeps the common prefix, drops the rest and
    // evaluates what is new (a chat turn re-sent with its history, an edited message).
    Status sync(std::span<const int32_t> tokens, const ProgressFn & progress = {}, std::stop_token stop = {});

    // The logits after the last evaluated token: [n_vocab]; empty before any.
    std::span<const float> logits() const { return last_logits_; }

    // Keeps the first n_keep tokens, or fewer when the cache cannot continue from there (a
    // sliding window moved past them; streaming renumbered): tokens() says how many.
    void truncate(uint32_t n_keep);

    // Recomputes what the cache lost between ubatches (a tier the health monitor disabled
    // whose blocks did not read back), so that the session holds the same tokens and logits
    // as before; nothing when nothing was lost.
    Status recompute_lost(std::stop_token stop = {});

    // What the KV cache is doing (any thread).
    KvStats kv_stats() const { return kv_->stats(); }
    // Per position, the share of (layer, head) pairs whose cache still holds it.
    std::vector<float> retention() const { return kv_->retention(kSeq); }
    // Where the model looked, while the cache observes attention (KvCache::observe_attention).
    AttentionMass attention() const { return kv_->attention(kSeq); }

private:
    Session(std::shared_ptr<const Model> model, SessionConfig config, std::unique_ptr<KvCache> kv, LlamaGraph graph);
    // The session holds its first n tokens (what the cache kept).
    void keep_tokens(size_t n);
    Status evaluate(std::span<const int32_t> tokens, std::vector<float> * all_logits, const ProgressFn & progress, std::stop_token stop);

    std::shared_ptr<const Model> model_;
    SessionConfig config_;
    std::unique_ptr<KvCache> kv_;
    LlamaGraph graph_;
    std::vector<int32_t> tokens_;
    std::vector<float> last_logits_;
    std::vector<float> chunk_logits_;
    double prefill_rate_ = 0;  // tokens per second of the last chunk read (the automatic chunk's bound)
    // Where the last prompt ended (the cache snapshots recurrent states there) and the
    // logits after it: a regenerate returns to it without recomputing a token. Only with
    // recurrent layers: the others re-evaluate the prompt's last token alone.
    bool keeps_prompt_end_;
    struct PromptEnd {
        uint32_t n_tokens = 0;
        std::vector<float> logits;
    } prompt_end_;
    static constexpr SeqId kSeq = 0;
};

}  // namespace lr
