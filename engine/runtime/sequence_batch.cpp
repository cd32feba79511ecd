#include "engine/runtime/sequence_batch.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "engine/api/prefill_chunk.h"

namespace lr {

Result<std::unique_ptr<SequenceBatch>> SequenceBatch::create(std::shared_ptr<const Model> model, SessionConfig config,
                                                             uint32_t max_sequences) {
    if (max_sequences == 0 || max_sequences > 256) {
        return error(StatusCode::invalid_argument, "parallel sequences must be 1 to 256 (got " + std::to_string(max_sequences) + ")");
    }
    std::lock_guard turn(model->backend_turn());
    LR_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, create_session_cache(model, config));
    // A step holds every sequence's next token and a prompt chunk.
    LR_ASSIGN_OR_RETURN(LlamaGraph graph,
                        LlamaGraph::create(*model, std::min(chunk_capacity(config.chunk_tokens), config.n_ctx) + max_sequences,
                                           config.n_ctx));
    return std::unique_ptr<SequenceBatch>(new SequenceBatch(std::move(model), config, std::move(kv), std::move(graph), max_sequences));
}

SequenceBatch::SequenceBatch(std::shared_ptr<const Model> model, SessionConfig config, std::unique_ptr<KvCache> kv, LlamaGraph graph,
                             uint32_t max_sequences)
    : model_(std::move(model)), config_(config), kv_(std::move(kv)), graph_(std::move(graph)), max_sequences_(max_sequences) {
    const KvTierCapacities & c = kv_->config().capacities;
    capacity_ = c.device_bytes + c.host_bytes + c.disk_bytes;
}

Result<uint64_t> SequenceBatch::reserve(const BatchSequenceRequest & request) const {
    if (request.prompt.empty()) return error(StatusCode::invalid_argument, "the prompt is empty");
    LR_RETURN_IF_ERROR(validate(request.params));
    LR_RETURN_IF_ERROR(validate(request.selection));
    const uint32_t n_ctx = config_.n_ctx;
    const bool runs_past_context = request.selection.policy == KvPolicy::streaming;
    if (!runs_past_context && request.prompt.size() >= n_ctx) {
        return error(StatusCode::context_full,
                     "the prompt has " + std::to_string(request.prompt.size()) + " tokens and the context holds " + std::to_string(n_ctx));
    }
    const uint64_t limit = request.params.max_tokens > 0 ? uint64_t(request.params.max_tokens) : n_ctx;
    const uint32_t tokens = uint32_t(std::min<uint64_t>(request.prompt.size() + limit, n_ctx));
    const MemoryPlan plan = plan_memory(memory_shape(*model_), tokens, config_.chunk_tokens, request.selection, kv_->config().capacities);
    if (plan.kv_bytes > capacity_) {
        return error(StatusCode::out_of_memory, "this request needs " + format_bytes(plan.kv_bytes) + " of KV cache for " +
                                                    std::to_string(tokens) + " tokens; the cache's budgets hold " +
                                                    format_bytes(capacity_) + ": ask for fewer tokens or use a cache policy");
    }
    return plan.kv_bytes;
}

bool SequenceBatch::fits_now(uint64_t reservation) const {
    return sequences_.size() < max_sequences_ && reserved_ + reservation <= capacity_;
}

Result<uint64_t> SequenceBatch::add(BatchSequenceRequest request, uint64_t reservation) {
    LR_ASSERT(fits_now(reservation));
    std::lock_guard turn(model_->backend_turn());
    SeqId seq = 0;  // the lowest one free
    while (std::any_of(sequences_.begin(), sequences_.end(), [&](const Sequence & s) { return s.seq == seq; })) ++seq;
    LR_RETURN_IF_ERROR(kv_->open_sequence(seq, request.selection));
    Sequence s;
    s.id = next_id_++;
    s.seq = seq;
    s.tokens = std::move(request.prompt);
    s.prompt_tokens = uint32_t(s.tokens.size());
    s.restored = kv_->restore_prefix(seq, s.tokens, 1);
    s.in_cache = s.restored;
    s.selection = request.selection;
    s.generation = std::make_unique<TokenGeneration>(model_->tokenizer(), request.params, s.tokens, std::move(request.sink),
                                                     std::move(request.logprob_sink));
    s.reservation = reservation;
    reserved_ += reservation;
    sequences_.push_back(std::move(s));
    return sequences_.back().id;
}

std::vector<SequenceStats> SequenceBatch::sequence_stats() const {
    std::vector<SequenceStats> out;
    for (const Sequence & s : sequences_) {
        out.push_back({.id = s.id,
                       .prompt_tokens = s.prompt_tokens,
                       .prompt_read = uint32_t(std::min<size_t>(s.in_cache, s.prompt_tokens)),
                       .generated_tokens = uint32_t(s.generation->result().tokens.size()),
                       .tokens_held = kv_->n_tokens(s.seq),
                       .tokens_kept = kv_->n_kept(s.seq),
                       .kv_bytes = kv_->sequence_bytes(s.seq),
                       .policy = describe(s.selection)});
    }
    return out;
}

void SequenceBatch::cancel(uint64_t id) {
    for (Sequence & s : sequences_) {
        if (s.id == id) s.cancelled = true;
    }
}

SequenceBatch::Finished SequenceBatch::end(Sequence & s, std::optional<Status> failure) {
    Finished f{.id = s.id, .prompt_tokens = s.prompt_tokens, .restored_tokens = s.restored};
    if (failure) {
        f.result = *failure;
    } else {
        f.result = std::move(s.generation->result());
    }
    kv_->truncate(s.seq, 0);
    reserved_ -= s.reservation;
    s.reservation = 0;
    s.seq = SeqId(-1);  // ended: removed at the end of the step
    return f;
}

SequenceBatch::Loss SequenceBatch::recover_lost_blocks(Sequence & s) {
    const std::optional<uint32_t> lost = kv_->take_lost_position(s.seq);
    if (!lost) return Loss::none;
    if (++s.recoveries > kMaxRecoveries) return Loss::too_many;
    // A loss down to no tokens drops the sequence from the cache, its selection with it.
    if (kv_->n_tokens(s.seq) == 0 && !kv_->open_sequence(s.seq, s.selection).ok()) return Loss::too_many;
    if (s.next) {
        s.tokens.push_back(*s.next);
        s.next.reset();
    }
    s.in_cache = std::min<size_t>(*lost, s.in_cache);
    return Loss::recovered;
}

std::vector<SequenceBatch::Finished> SequenceBatch::recover_lost() {
    std::lock_guard turn(model_->backend_turn());
    std::vector<Finished> done;
    for (Sequence & s : sequences_) {
        if (!ended(s) && recover_lost_blocks(s) == Loss::too_many)
            done.push_back(end(s, error(StatusCode::corrupt_data, "the KV cache lost this request's blocks too often")));
    }
    std::erase_if(sequences_, ended);
    return done;
}

std::vector<SequenceBatch::Finished> SequenceBatch::step() {
    std::lock_guard turn(model_->backend_turn());
    std::vector<Finished> done;
    for (Sequence & s : sequences_) {
        if (!s.cancelled) continue;
        s.generation->finish(StopReason::cancelled);
        done.push_back(end(s, std::nullopt));
    }

    // Every generating sequence's token first, then prompt chunks in the room left.
    std::vector<UbatchPlan> plans;
    std::vector<Sequence *> owners;
    uint32_t room = graph_.max_tokens();
    auto plan = [&](Sequence & s, const UbatchRequest & request) {
        Result<UbatchPlan> p = kv_->plan(s.seq, request);
        if (!p.ok()) {
            done.push_back(end(s, p.status()));
            return;
        }
        room -= p->n_tokens();
        plans.push_back(std::move(*p));
        owners.push_back(&s);
    };
    for (Sequence & s : sequences_) {
        if (!ended(s) && s.next) plan(s, {.tokens = std::span(&*s.next, 1), .max_tokens = 1});
    }
    const uint32_t room_for_prompts = room;
    for (Sequence & s : sequences_) {
        if (ended(s) || s.next || s.in_cache == s.tokens.size() || room == 0) continue;
        plan(s, {.tokens = std::span(s.tokens).subspan(s.in_cache),
                 .max_tokens = std::min(room, prefill_chunk(config_.chunk_tokens, uint32_t(s.tokens.size()), step_rate_)),
                 .prompt = true,
                 .ends_turn = true});
    }
    if (!plans.empty()) {
        const auto t0 = std::chrono::steady_clock::now();
        Status st = graph_.forward_batch(plans, *kv_, logits_);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // Steps that read prompt tokens measure the rate (a decode-only step is memory-bound).
        if (st.ok() && seconds > 0 && room < room_for_prompts) step_rate_ = double(graph_.max_tokens() - room) / seconds;
        if (!st.ok()) {
            // Blocks lost to a fault are read again by the next steps, and the sequences that
            // lost nothing simply run again; any other failure ends them all.
            std::vector<Loss> losses(owners.size(), Loss::none);
            if (st.code() == StatusCode::corrupt_data) {
                for (size_t i = 0; i < owners.size(); ++i) losses[i] = recover_lost_blocks(*owners[i]);
            }
            const bool any_recovered = std::ranges::find(losses, Loss::recovered) != losses.end();
            for (size_t i = 0; i < owners.size(); ++i) {
                if (losses[i] == Loss::too_many || (losses[i] == Loss::none && !any_recovered)) done.push_back(end(*owners[i], st));
            }
        } else {
            const uint32_t n_vocab = model_->hparams().n_vocab;
            for (size_t i = 0; i < owners.size(); ++i) {
                Sequence & s = *owners[i];
                if (s.next) {
                    s.tokens.push_back(*s.next);
                    s.next.reset();
                    s.in_cache = s.tokens.size();
                } else {
                    s.in_cache += plans[i].n_tokens();
                    if (s.in_cache < s.tokens.size()) continue;
                }
                const std::span<const float> logits(logits_.data() + i * n_vocab, n_vocab);
                s.next = s.generation->next(logits, kv_->room(s.seq));
                if (!s.next) done.push_back(end(s, std::nullopt));
            }
        }
    }
    std::erase_if(sequences_, ended);
    return done;
}

}  // namespace lr
