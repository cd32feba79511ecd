#pragma once
// Continuous batching: several sequences generate at once on one model and one KV cache.
// Each step() is one forward pass (LlamaGraph::forward_batch) over every generating
// sequence's next token and, in the room the ubatch has left, chunks of the prompts still
// being read — so the weights are read once per step for all of them, and a long prompt
// never stalls the streams. Each sequence has its own blocks, policy state, sampler and
// stop conditions; a beginning it has in common with a live sequence (a system prompt, a
// document) is shared copy-on-write, and the prefix cache restores what an earlier process
// read.
//
// Admission: a sequence reserves the KV its prompt and token limit can take at their peak
// (after its policy's budget and the codecs: the planner's figure) out of the cache's tier
// budgets, which all sequences share. One that can never fit is refused by reserve(); one
// that cannot fit beside the running ones waits (fits_now) — nothing is ever stopped
// mid-reply for want of memory.
//
// Faults: a KV block that cannot be read back (a disk or prefix-cache block gone bad) cuts
// its sequence there; the next steps read the rest again, and the others run on.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/api/sequence_stats.h"
#include "engine/model/llama_graph.h"
#include "engine/runtime/session.h"
#include "engine/runtime/token_generation.h"

namespace lr {

struct BatchSequenceRequest {
    std::vector<int32_t> prompt;  // not empty
    GenerateParams params;
    KvSettings selection;      // this sequence's policy; its codecs, blocks and tiers must be the batch's
    TokenSink sink;            // every generated token with its text, on the thread that runs step()
    LogprobSink logprob_sink;  // with params.logprobs: each token's log-probabilities, just before sink
};

class SequenceBatch {
public:
    // Up to max_sequences at once; ubatches of at most config.chunk_tokens (automatic: its
    // largest chunk) + max_sequences tokens.
    static Result<std::unique_ptr<SequenceBatch>> create(std::shared_ptr<const Model> model, SessionConfig config, uint32_t max_sequences);

    // The KV bytes `request` reserves: invalid_argument naming a bad setting; context_full when its prompt leaves no room in the
    // context (unless its policy runs past it); out_of_memory when it exceeds the budgets
    // even alone.
    Result<uint64_t> reserve(const BatchSequenceRequest & request) const;
    // Whether a sequence of that reservation fits now beside the running ones.
    bool fits_now(uint64_t reservation) const;
    // Starts a sequence that fits now (reserve() first): what the prefix cache holds of its
    // prompt is restored or shared, the rest is read by the next steps. Returns its id;
    // invalid_argument when its codecs or blocks are not the batch's.
    Result<uint64_t> add(BatchSequenceRequest request, uint64_t reservation);
    // Ends the sequence at the next step (StopReason::cancelled).
    void cancel(uint64_t id);

    struct Finished {
        uint64_t id = 0;
        uint32_t prompt_tokens = 0;
        uint32_t restored_tokens = 0;  // of them, taken from the prefix cache or a live sequence
        Result<GenerateResult> result = GenerateResult{};
    };
    // One forward pass; returns the sequences that ended in it (their memory is free again).
    // Nothing to do: no pass, nothing returned.
    std::vector<Finished> step();
    // After a repair between steps (the health monitor disabled a tier whose blocks no longer
    // read back): the sequences that lost blocks read them again in the next steps; those
    // that lost them too often end (returned).
    std::vector<Finished> recover_lost();

    size_t running() const { return sequences_.size(); }
    uint32_t max_sequences() const { return max_sequences_; }
    uint64_t reserved_bytes() const { return reserved_; }
    uint64_t capacity_bytes() const { return capacity_; }
    const SessionConfig & config() const { return config_; }
    KvCache & kv_cache() { return *kv_; }
    KvStats kv_stats() const { return kv_->stats(); }
    // Each running sequence, in the order they came (on the thread that runs step()).
    std::vector<SequenceStats> sequence_stats() const;

private:
    struct Sequence {
        uint64_t id = 0;
        SeqId seq = 0;
        // What its cache holds when all is read: the prompt, then each generated token once
        // evaluated. A KV block lost to a fault cuts the cache back; the steps read the rest
        // again, as they read the prompt.
        std::vector<int32_t> tokens;
        size_t in_cache = 0;  // tokens[0, in_cache) are in the cache
        uint32_t prompt_tokens = 0;
        uint32_t restored = 0;
        KvSettings selection;
        uint32_t recoveries = 0;
        std::optional<int32_t> next;  // the generated token to evaluate in the next step
        std::unique_ptr<TokenGeneration> generation;
        uint64_t reservation = 0;
        bool cancelled = false;
    };
    SequenceBatch(std::shared_ptr<const Model> model, SessionConfig config, std::unique_ptr<KvCache> kv, LlamaGraph graph,
                  uint32_t max_sequences);
    // Ends `s` (its generation finished with its reason, or `failure`) and frees its memory.
    Finished end(Sequence & s, std::optional<Status> failure);
    // After a step failed on corrupt data: whether `s` lost KV blocks; if so, it reads
    // again from where the cache was cut, up to kMaxRecoveries times (a fault that comes
    // back every time ends it).
    static bool ended(const Sequence & s) { return s.seq == SeqId(-1); }  // end() ran: removed after the step
    enum class Loss { none, recovered, too_many };
    Loss recover_lost_blocks(Sequence & s);
    static constexpr uint32_t kMaxRecoveries = 8;

    std::shared_ptr<const Model> model_;
    SessionConfig config_;
    std::unique_ptr<KvCache> kv_;
    LlamaGraph graph_;
    uint32_t max_sequences_;
    uint64_t capacity_ = 0;  // the tiers' budgets together
    uint64_t reserved_ = 0;
    uint64_t next_id_ = 1;
    std::vector<Sequence> sequences_;  // in the order they came
    std::vector<float> logits_;
    double step_rate_ = 0;  // tokens per second of the last step (the automatic chunk's bound)
};

}  // namespace lr
