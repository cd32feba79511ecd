#pragma once
// The engine as one object, for longread-cli and the desktop app alike: load a model (a
// file or the bundled one, on the CPU or a CUDA device), plan its memory on this machine,
// keep one session (rebuilt when the options that shape it change), read a conversation
// into it, reply, summarize, and say what the cache holds. Everything crosses on plain
// values (engine/api) and std::string; Qt never does.
//
// A conversation's document is tokenized once (PromptMemo): each turn tokenizes only what
// follows the document's system message, with exactly the tokens of the whole prompt.
//
// Not thread-safe: one thread drives an Engine (the app's engine thread, the CLI's main).
// Long calls take a stop token, checked once per prefill chunk or generated token; a
// stopped call returns normally (StopReason::cancelled, or Status cancelled for prefill).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "engine/api/attention_mass.h"
#include "engine/api/conversation.h"
#include "engine/api/generation.h"
#include "engine/api/memory_plan.h"
#include "engine/api/model_info.h"
#include "engine/api/session_options.h"
#include "engine/api/session_snapshot.h"
#include "engine/api/summary.h"
#include "engine/common/status.h"

namespace lr {

class Backend;
class Model;
class Session;
struct GpuOffloadPlan;

struct LoadParams {
    std::string path = kBundledModelName;  // a GGUF file, or kBundledModelName
    std::string backend = "auto";          // "auto" (CUDA when a device is usable), "cpu" or "cuda"
    int n_threads = 0;                     // CPU threads; 0: the physical cores
    std::string cpu_isa = "best";          // CPU kernels: "best" (what this CPU has), "avx512", "avx2" or "scalar"
    int64_t gpu_layers = -1;               // CUDA: layers whose weights stay in VRAM; -1: what fits
};

struct ReplyParams {
    GenerateParams generate;
    // What a context_full error suggests after "the conversation needs N tokens but the
    // context holds M: ".
    std::string when_full = "start a new chat, raise the context size, or enable a cache policy";
    // Receives the reply's thinking as it streams (Qwen3's <think>, gpt-oss's analysis
    // channel); the token sink then gets only the answer's text. Unset: thinking is not
    // streamed (the result still carries it).
    std::function<void(std::string_view)> thinking_sink;
};

// The planner's answer for the loaded model on this machine now, and what it assumed.
struct MachinePlan {
    MemoryPlan plan;
    KvTierCapacities capacities;     // the tier budgets, automatic ones resolved
    std::string kv_dir;              // where the disk tier and the prefix cache live
    bool weights_on_device = false;  // uploaded to a GPU (else mapped from the file)
};

class Engine {
public:
    Engine();
    ~Engine();
    Engine(const Engine &) = delete;
    Engine & operator=(const Engine &) = delete;

    // --- the model -----------------------------------------------------------------------
    // Replaces the model (and drops the session). Errors name the file and what is wrong;
    // cancelled when `stop` fired before loading began.
    Result<ModelInfo> load(const LoadParams & params, std::stop_token stop = {});
    bool has_model() const;
    const ModelInfo & model_info() const;  // of the loaded model; empty before
    // Why a CUDA device was not used by the last load() (also when the model then failed).
    const std::string & backend_note() const;

    // What the loaded model needs at n_ctx with these cache settings here (free RAM, disk
    // and VRAM as they are now). Needs a model (an assert).
    MachinePlan plan_memory(uint32_t n_ctx, uint32_t chunk_tokens, const KvSettings & kv) const;

    // --- the session ---------------------------------------------------------------------
    // Makes the session match `options`: kept when same_session(), else rebuilt (its KV
    // starts empty; the prefix cache may restore). not_found without a model; the session's
    // own errors (invalid_argument naming the setting, out_of_memory saying what to change).
    Status use_session(const SessionOptions & options);
    bool has_session() const;

    // The KV cache's health checks (kvcache/kv_health.h) on the session's cache, with their
    // repairs; the findings are in snapshot().kv.health. They run when a session is made,
    // then here at most every KvHealthMonitor::kIntervalMs (now: regardless). Call between ubatches:
    // between calls, or from a token sink or progress callback. Blocks a repair could not
    // read back are recomputed here, so the session keeps the same tokens and logits; an
    // error says that recomputing failed (the session then holds fewer tokens).
    Status check_health(bool now = false);

    // How much of the session's context `conversation` takes. Needs a session.
    Result<ContextMeasure> measure(const Conversation & conversation);

    // Makes the session hold `conversation` (no generation prompt), reusing the KV of the
    // common prefix. context_full (nothing evaluated) when it does not fit.
    Status prefill(const Conversation & conversation, const ProgressFn & progress = {}, std::stop_token stop = {});

    // Adds `user_text` as the next user turn, evaluates the prompt and generates the reply,
    // its thinking told apart from its answer in the format of the model's chat template
    // (ThinkingSplitter). context_full when the prompt itself does not fit.
    Result<GenerateResult> reply(const Conversation & conversation, std::string_view user_text, const ReplyParams & params,
                                 const ProgressFn & progress = {}, const TokenSink & sink = {}, std::stop_token stop = {});

    // One pass or map-reduce over `text` on the session (summarizer.h).
    Result<SummaryResult> summarize(std::string_view text, const SummarizeParams & params, const SummaryProgressFn & progress = {},
                                    const TokenSink & sink = {}, std::stop_token stop = {});

    // The cache's statistics and the context used (has_session false before a session).
    SessionSnapshot snapshot() const;

    // What the session holds of the conversation's document: per document token, its bytes
    // and the share of the cache keeping it. Known for the document of the last prefill or
    // reply; any other document is not in the context.
    DocumentRetention retention(const Conversation & conversation) const;

    // Whether the session's cache records where the model looks (KvCache::observe_attention),
    // from the next evaluated token on; kept across rebuilt sessions. Off by default.
    void observe_attention(bool on);
    // Where the model looked in the conversation's document, per full-attention layer and
    // document token (positions from 0 at its first token), as recorded while observing.
    // Empty when the document is not held, nothing was recorded, or streaming renumbered
    // positions away from tokens.
    AttentionMass attention(const Conversation & conversation) const;

    // Documents tokenized since the engine was made (each turn of a conversation reuses
    // the tokens of its document).
    size_t documents_tokenized() const;

    // --- for engine-side callers (longread-cli's model tools) ---------------------------
    std::shared_ptr<const Model> model() const;  // null before load(); keeps its backend alive
    Backend & backend() const;                   // after a load() that got that far
    const GpuOffloadPlan * gpu_plan() const;     // where the weights went, with CUDA; else null
    // The session, for calls the facade does not wrap (generate, logits): use it before
    // the next facade call, which may replace it. Null without one.
    Session * session();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lr
