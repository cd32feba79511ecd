#include "session.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "engine/api/prefill_chunk.h"

namespace lr {

ModelMemoryShape memory_shape(const ModelHParams & hp, uint64_t weight_bytes, uint64_t expert_bytes, uint64_t file_bytes) {
    // A token reads n_expert_used of each layer's n_expert experts.
    const uint64_t active_experts = hp.is_moe() ? expert_bytes / hp.n_expert * hp.n_expert_used : expert_bytes;
    const uint32_t g = hp.kv_geometry_layer();  // the full-attention layers' (kv_layer_specs: the others')
    return {.n_layer = hp.n_layer,
            .n_head = hp.n_head,
            .n_head_kv = hp.n_head_kv_of(g),
            .head_dim = hp.head_dim_of(g),
            .n_ctx_train = hp.n_ctx_train,
            .weight_bytes = weight_bytes,
            .expert_weight_bytes = expert_bytes,
            .active_weight_bytes_per_token = weight_bytes - expert_bytes + active_experts,
            .scratch_bytes_per_token = LlamaGraph::scratch_bytes_per_token(hp),
            .n_vocab = hp.n_vocab,
            .metadata_bytes = file_bytes > weight_bytes ? file_bytes - weight_bytes : 0,
            .layers = kv_layer_specs(hp)};
}

Status validate(const SessionConfig & config, const ModelHParams & hp) {
    if (config.chunk_tokens > 8192) {
        return error(StatusCode::invalid_argument,
                     "the prefill chunk must be 1 to 8192 tokens, or automatic (got " + std::to_string(config.chunk_tokens) + ")");
    }
    if (config.n_ctx > hp.n_ctx_train) {
        return error(StatusCode::invalid_argument, "context " + std::to_string(config.n_ctx) + " exceeds the " +
                                                       std::to_string(hp.n_ctx_train) +
                                                       " tokens this model was trained for; lower -c, or use the streaming cache policy");
    }
    if (config.kv.policy == KvPolicy::streaming && !keys_shift_by_rotation(hp)) {
        return error(StatusCode::unsupported, "the streaming policy moves cached keys to new positions, which Longread cannot do yet for " +
                                                  hp.arch_name + " models (YaRN, LongRoPE or per-layer rope); choose another cache policy");
    }
    return {};
}

Result<std::unique_ptr<KvCache>> create_session_cache(std::shared_ptr<const Model> model, SessionConfig & config) {
    const ModelHParams & hp = model->hparams();
    LR_RETURN_IF_ERROR(validate(config, hp));
    LR_RETURN_IF_ERROR(validate(config.kv));
    if (config.n_ctx == 0) config.n_ctx = hp.n_ctx_train;
    KvCacheConfig kv_config{.settings = config.kv, .max_tokens = config.n_ctx, .io = config.io, .max_position = hp.n_ctx_train};
    kv_config.rope = {
        .mode = hp.rope_mode, .n_rot = hp.n_rot, .head_dim = hp.head_dim, .freq_base = hp.rope_freq_base, .freq_scale = hp.rope_freq_scale};
    if (const gguf::TensorInfo * ff = model->file().find_tensor("rope_freqs.weight"); ff && ff->type == DType::F32) {
        const auto * f = reinterpret_cast<const float *>(ff->data);
        kv_config.rope.freq_factors.assign(f, f + ff->n_elements());
    }
    kv_config.dir = resolve_kv_dir(config.kv);
    MachineMemory machine = probe_machine_memory(kv_config.dir);
    machine.free_vram_bytes = model->backend().device_memory().free_bytes;
    kv_config.capacities = resolve_capacities(config.kv, machine, model->weights().n_bytes, model->backend().kind() == BackendKind::cuda);
    kv_config.model_identity = config.kv.prefix_cache ? model->identity() : 0;
    // Refuse up front what cannot fit, with what to change, rather than failing mid-way.
    const MemoryPlan plan = plan_memory(memory_shape(*model), config.n_ctx, config.chunk_tokens, config.kv, kv_config.capacities);
    if (plan.verdict == MemoryVerdict::wont_fit) return error(StatusCode::out_of_memory, plan.message);
    return KvCache::create(kv_config, model->kv_shape(), model->backend());
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, SessionConfig config) {
    std::lock_guard turn(model->backend_turn());
    LR_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, create_session_cache(model, config));
    LR_ASSIGN_OR_RETURN(LlamaGraph graph,
                        LlamaGraph::create(*model, std::min(chunk_capacity(config.chunk_tokens), config.n_ctx), config.n_ctx));
    return std::unique_ptr<Session>(new Session(std::move(model), config, std::move(kv), std::move(graph)));
}

Session::Session(std::shared_ptr<const Model> model, SessionConfig config, std::unique_ptr<KvCache> kv, LlamaGraph graph)
    : model_(std::move(model)), config_(config), kv_(std::move(kv)), graph_(std::move(graph)),
      keeps_prompt_end_(model_->kv_shape().has(KvLayerKind::recurrent)) {}

Status Session::recompute_lost(std::stop_token stop) {
    std::unique_lock turn(model_->backend_turn());
    const std::optional<uint32_t> lost = kv_->take_lost_position(kSeq);
    turn.unlock();
    if (!lost || *lost >= tokens_.size()) return {};
    std::vector<int32_t> redo(tokens_.begin() + *lost, tokens_.end());
    keep_tokens(*lost);
    return evaluate(redo, nullptr, {}, stop);
}

Status Session::append(std::span<const int32_t> tokens, const ProgressFn & progress, std::stop_token stop) {
    return evaluate(tokens, nullptr, progress, stop);
}

Status Session::append_all_logits(std::span<const int32_t> tokens, std::vector<float> & logits, std::stop_token stop) {
    logits.clear();
    return evaluate(tokens, &logits, {}, stop);
}

Status Session::evaluate(std::span<const int32_t> tokens, std::vector<float> * all_logits, const ProgressFn & progress,
                         std::stop_token stop) {
    if (tokens.empty()) return {};
    if (tokens.size() > kv_->room(kSeq)) {
        kv_->note_refusal();
        return error(StatusCode::context_full, "the context holds " + std::to_string(config_.n_ctx) + " tokens: " +
                                                   std::to_string(tokens_.size()) + " are used and " + std::to_string(tokens.size()) +
                                                   " more do not fit; start a new chat, raise -c, or enable a cache policy");
    }
    const uint32_t n_vocab = model_->hparams().n_vocab;
    PrefillProgress p{.n_total = static_cast<uint32_t>(tokens.size())};
    size_t at = 0;
    if (!all_logits) {
        // Whole blocks the prefix cache already holds are restored, not computed; the last
        // token is always computed so that logits() belongs to it.
        std::unique_lock turn(model_->backend_turn());
        const uint32_t restored = kv_->restore_prefix(kSeq, tokens, 1);
        turn.unlock();
        if (restored > 0) {
            tokens_.insert(tokens_.end(), tokens.begin(), tokens.begin() + restored);
            at = restored;
            p.n_done = p.n_restored = restored;
            if (progress) progress(p);
        }
    }
    using Clock = std::chrono::steady_clock;
    while (at < tokens.size()) {
        if (stop.stop_requested()) return error(StatusCode::cancelled, "stopped");
        const uint32_t chunk = std::min(graph_.max_tokens(), prefill_chunk(config_.chunk_tokens, uint32_t(tokens.size()), prefill_rate_));
        const auto t0 = Clock::now();
        // A prompt ends a turn: the cache keeps the recurrent states after it.
        const bool prompt = tokens.size() > 1;
        std::unique_lock turn(model_->backend_turn());
        LR_ASSIGN_OR_RETURN(UbatchPlan plan,
                            kv_->plan(kSeq, {.tokens = tokens.subspan(at), .max_tokens = chunk, .prompt = prompt, .ends_turn = prompt}));
        const size_t n = plan.n_tokens();
        Status s = graph_.forward(plan, all_logits != nullptr, *kv_, chunk_logits_);
        turn.unlock();
        if (s.code() == StatusCode::corrupt_data) {
            if (const std::optional<uint32_t> lost = kv_->take_lost_position(kSeq)) {
                // A KV block could not be read back: recompute what was lost, then retry.
                std::vector<int32_t> redo(tokens_.begin() + *lost, tokens_.end());
                keep_tokens(*lost);
                LR_RETURN_IF_ERROR(evaluate(redo, nullptr, {}, stop));
                continue;
            }
        }
        if (!s.ok()) return s;
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        kv_->note_prefill(uint32_t(n), ms);
        if (ms > 0) prefill_rate_ = double(n) * 1000 / ms;
        const std::span<const int32_t> part = tokens.subspan(at, n);
        tokens_.insert(tokens_.end(), part.begin(), part.end());
        if (all_logits) all_logits->insert(all_logits->end(), chunk_logits_.begin(), chunk_logits_.end());
        if (at + n == tokens.size()) {
            last_logits_.assign(chunk_logits_.end() - n_vocab, chunk_logits_.end());
            if (prompt && keeps_prompt_end_) prompt_end_ = {uint32_t(tokens_.size()), last_logits_};
        }
        at += n;
        p.n_done += static_cast<uint32_t>(n);
        if (progress) progress(p);
    }
    return {};
}

Status Session::sync(std::span<const int32_t> tokens, const ProgressFn & progress, std::stop_token stop) {
    // A failed ubatch can cost the cache more than its own tokens (a recurrent state left
    // half-advanced goes back to a snapshot): the session holds what the cache holds.
    keep_tokens(std::min<size_t>(tokens_.size(), kv_->n_tokens(kSeq)));
    size_t common = 0;
    while (common < tokens_.size() && common < tokens.size() && tokens_[common] == tokens[common]) ++common;
    // Re-evaluate at least the last token, so that logits() belongs to `tokens`, unless
    // they end where the last prompt ended (regenerate): its logits are kept.
    const bool at_prompt_end = common == tokens.size() && common == prompt_end_.n_tokens && !prompt_end_.logits.empty();
    if (common == tokens.size() && common > 0 && !at_prompt_end) --common;
    truncate(static_cast<uint32_t>(common));
    if (at_prompt_end && tokens_.size() == common) {
        last_logits_ = prompt_end_.logits;
        return {};
    }
    return evaluate(tokens.subspan(tokens_.size()), nullptr, progress, stop);
}

void Session::truncate(uint32_t n_keep) {
    if (n_keep >= tokens_.size()) return;
    // The cache may keep less than asked (a sliding window moved past the cut, streaming
    // renumbered): the session holds what the cache holds.
    std::lock_guard turn(model_->backend_turn());
    keep_tokens(kv_->truncate(kSeq, n_keep));
    last_logits_.clear();
}

void Session::keep_tokens(size_t n) {
    tokens_.resize(n);
    if (n < prompt_end_.n_tokens) prompt_end_ = {};
}

}  // namespace lr
