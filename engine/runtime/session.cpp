#include "session.h"

#include <algorithm>

namespace lr {

Status validate(const SessionConfig & config, const ModelHParams & hp) {
    if (config.chunk_tokens == 0 || config.chunk_tokens > 8192) {
        return error(StatusCode::invalid_argument, "the prefill chunk must be 1 to 8192 tokens (got " + std::to_string(config.chunk_tokens) + ")");
    }
    if (config.n_ctx > hp.n_ctx_train) {
        return error(StatusCode::invalid_argument, "context " + std::to_string(config.n_ctx) + " exceeds the " +
                     std::to_string(hp.n_ctx_train) + " tokens this model was trained for; lower -c, or use the streaming cache policy");
    }
    return {};
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, SessionConfig config) {
    const ModelHParams & hp = model->hparams();
    LR_RETURN_IF_ERROR(validate(config, hp));
    if (config.n_ctx == 0) config.n_ctx = hp.n_ctx_train;
    config.kv.max_tokens = config.n_ctx;
    LR_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::create(config.kv, model->kv_shape(), model->backend()));
    LR_ASSIGN_OR_RETURN(LlamaGraph graph, LlamaGraph::create(*model, std::min(config.chunk_tokens, config.n_ctx)));
    return std::unique_ptr<Session>(new Session(std::move(model), config, std::move(kv), std::move(graph)));
}

Session::Session(std::shared_ptr<const Model> model, SessionConfig config, std::unique_ptr<KvCache> kv, LlamaGraph graph)
    : model_(std::move(model)), config_(config), kv_(std::move(kv)), graph_(std::move(graph)) {}

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
    if (tokens_.size() + tokens.size() > config_.n_ctx) {
        return error(StatusCode::context_full, "the context holds " + std::to_string(config_.n_ctx) + " tokens: " +
                     std::to_string(tokens_.size()) + " are used and " + std::to_string(tokens.size()) +
                     " more do not fit; start a new chat, raise -c, or enable a cache policy");
    }
    const uint32_t n_vocab = model_->hparams().n_vocab;
    const uint32_t chunk = graph_.max_tokens();
    PrefillProgress p{.n_total = static_cast<uint32_t>(tokens.size())};
    for (size_t at = 0; at < tokens.size(); at += chunk) {
        if (stop.stop_requested()) return error(StatusCode::cancelled, "stopped");
        const size_t n = std::min<size_t>(chunk, tokens.size() - at);
        const std::span<const int32_t> part = tokens.subspan(at, n);
        positions_.resize(n);
        for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(tokens_.size() + i);
        const bool last_chunk = at + n == tokens.size();
        Status s = graph_.forward({.tokens = part, .positions = positions_, .all_logits = all_logits != nullptr}, *kv_, kSeq,
                                  chunk_logits_);
        if (!s.ok()) return s;
        tokens_.insert(tokens_.end(), part.begin(), part.end());
        if (all_logits) all_logits->insert(all_logits->end(), chunk_logits_.begin(), chunk_logits_.end());
        if (last_chunk) last_logits_.assign(chunk_logits_.end() - n_vocab, chunk_logits_.end());
        p.n_done += static_cast<uint32_t>(n);
        if (progress) progress(p);
    }
    return {};
}

Status Session::sync(std::span<const int32_t> tokens, const ProgressFn & progress, std::stop_token stop) {
    size_t common = 0;
    while (common < tokens_.size() && common < tokens.size() && tokens_[common] == tokens[common]) ++common;
    // Re-evaluate at least the last token, so that logits() belongs to `tokens`.
    if (common == tokens.size() && common > 0) --common;
    truncate(static_cast<uint32_t>(common));
    return evaluate(tokens.subspan(common), nullptr, progress, stop);
}

void Session::truncate(uint32_t n_keep) {
    if (n_keep >= tokens_.size()) return;
    tokens_.resize(n_keep);
    kv_->truncate(kSeq, n_keep);
    last_logits_.clear();
}

}  // namespace lr
