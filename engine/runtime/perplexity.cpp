#include "perplexity.h"

#include <algorithm>
#include <cmath>

namespace lr {

double log_probability(std::span<const float> logits, int32_t token) {
    float max_logit = logits[0];
    for (float l : logits) max_logit = std::max(max_logit, l);
    double sum_exp = 0.0;
    for (float l : logits) sum_exp += std::exp(double(l - max_logit));
    return double(logits[size_t(token)] - max_logit) - std::log(sum_exp);
}

std::vector<double> probabilities(std::span<const float> logits) {
    float max_logit = logits[0];
    for (float l : logits) max_logit = std::max(max_logit, l);
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(double(logits[i] - max_logit));
    for (double & x : p) x /= sum;
    return p;
}

double kl_divergence(std::span<const double> p, std::span<const double> q) {
    double kl = 0;
    for (size_t t = 0; t < p.size(); ++t) {
        if (p[t] > 0) kl += p[t] * (std::log(p[t]) - std::log(std::max(q[t], 1e-300)));
    }
    return kl;
}

Result<PerplexityResult> compute_perplexity(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                            const SessionConfig & session_config, const std::function<void(size_t, size_t)> & progress,
                                            std::stop_token stop) {
    if (n_ctx < 4) return error(StatusCode::invalid_argument, "perplexity needs a context of at least 4 tokens");
    const size_t n_chunks = tokens.size() / n_ctx;
    if (n_chunks == 0) {
        return error(StatusCode::invalid_argument, "the text has " + std::to_string(tokens.size()) + " tokens; at least " +
                                                       std::to_string(n_ctx) + " (one window of -c) are needed");
    }
    SessionConfig config = session_config;
    config.n_ctx = n_ctx;
    config.kv.prefix_cache = false;  // windows start with a substituted BOS: nothing to reuse
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, config));
    const uint32_t n_vocab = model->hparams().n_vocab;
    const int32_t bos = model->tokenizer().bos();
    const size_t first = n_ctx / 2;

    PerplexityResult r;
    double nll = 0, nll2 = 0;
    std::vector<int32_t> window(n_ctx);
    std::vector<float> logits;
    for (size_t c = 0; c < n_chunks; ++c) {
        std::copy_n(tokens.begin() + std::ptrdiff_t(c * n_ctx), n_ctx, window.begin());
        if (bos >= 0) window[0] = bos;
        session->truncate(0);
        LR_RETURN_IF_ERROR(session->append_all_logits(window, logits, stop));
        for (size_t j = first; j + 1 < n_ctx; ++j) {
            const int32_t next = tokens[c * n_ctx + j + 1];
            const double lp = log_probability(std::span(logits).subspan(j * n_vocab, n_vocab), next);
            nll -= lp;
            nll2 += lp * lp;
            ++r.n_scored;
        }
        r.chunk_ppl.push_back(std::exp(nll / double(r.n_scored)));
        if (progress) progress(c + 1, n_chunks);
    }
    const double mean = nll / double(r.n_scored);
    double var = nll2 / double(r.n_scored) - mean * mean;
    var = var > 0 && r.n_scored > 1 ? std::sqrt(var / double(r.n_scored - 1)) : 0;
    r.ppl = std::exp(mean);
    r.ppl_error = var * r.ppl;
    r.n_chunks = n_chunks;
    return r;
}

}  // namespace lr
