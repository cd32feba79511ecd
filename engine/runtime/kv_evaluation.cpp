#include "kv_evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/runtime/perplexity.h"

namespace lr {
namespace {

struct WindowRun {
    std::vector<std::vector<float>> logits;  // after each scored-half token
    double decode_ms = 0;
    uint64_t kv_bytes = 0;
    uint64_t rows_read = 0;  // KV rows (slot x KV head) attention read while decoding
};

Result<WindowRun> run_window(std::shared_ptr<const Model> model, std::span<const int32_t> window, const KvSettings & kv,
                             uint32_t chunk_tokens, std::stop_token stop) {
    SessionConfig config{.n_ctx = uint32_t(window.size()), .chunk_tokens = chunk_tokens, .kv = kv};
    config.kv.prefix_cache = false;
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, config));
    const size_t half = window.size() / 2;
    LR_RETURN_IF_ERROR(session->append(window.first(half), {}, stop));
    WindowRun r;
    r.logits.emplace_back(session->logits().begin(), session->logits().end());
    const uint64_t reads_before = session->kv_stats().rows_read;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t j = half; j + 1 < window.size(); ++j) {
        LR_RETURN_IF_ERROR(session->append(window.subspan(j, 1), {}, stop));
        r.logits.emplace_back(session->logits().begin(), session->logits().end());
    }
    r.decode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.rows_read = session->kv_stats().rows_read - reads_before;
    for (const KvTierStats & t : session->kv_stats().tiers) r.kv_bytes += t.present ? t.used_bytes : 0;
    return r;
}

}  // namespace

Result<KvEvaluation> evaluate_kv_policy(std::shared_ptr<const Model> model, std::span<const int32_t> tokens, uint32_t n_ctx,
                                        const KvSettings & policy, size_t max_windows, const std::function<void(size_t, size_t)> & progress,
                                        std::stop_token stop, uint32_t chunk_tokens) {
    LR_RETURN_IF_ERROR(validate(policy));
    if (n_ctx < 8) return error(StatusCode::invalid_argument, "eval-kv needs windows of at least 8 tokens");
    size_t n_windows = tokens.size() / n_ctx;
    if (n_windows == 0) {
        return error(StatusCode::invalid_argument,
                     "the text has " + std::to_string(tokens.size()) + " tokens; a window needs " + std::to_string(n_ctx));
    }
    if (max_windows > 0) n_windows = std::min(n_windows, max_windows);
    KvSettings full = policy;
    full.policy = KvPolicy::none;
    full.k_bits = full.v_bits = 16;
    full.host_bits = full.disk_bits = 0;
    const int32_t bos = model->tokenizer().bos();

    KvEvaluation e;
    double nll_full = 0, nll = 0, kld = 0, ms = 0, ms_full = 0;
    size_t agree = 0;
    uint64_t reads = 0, reads_full = 0;
    std::vector<int32_t> window(n_ctx);
    for (size_t w = 0; w < n_windows; ++w) {
        std::copy_n(tokens.begin() + std::ptrdiff_t(w * n_ctx), n_ctx, window.begin());
        if (bos >= 0) window[0] = bos;
        LR_ASSIGN_OR_RETURN(WindowRun ref, run_window(model, window, full, chunk_tokens, stop));
        LR_ASSIGN_OR_RETURN(WindowRun run, run_window(model, window, policy, chunk_tokens, stop));
        const size_t half = n_ctx / 2;
        for (size_t i = 0; i < ref.logits.size(); ++i) {
            const int32_t next = window[half + i];
            nll_full -= log_probability(ref.logits[i], next);
            nll -= log_probability(run.logits[i], next);
            const std::vector<double> p = probabilities(ref.logits[i]), q = probabilities(run.logits[i]);
            kld += kl_divergence(p, q);
            agree += std::max_element(p.begin(), p.end()) - p.begin() == std::max_element(q.begin(), q.end()) - q.begin();
            ++e.n_scored;
        }
        e.kv_bytes += run.kv_bytes;
        e.kv_bytes_full += ref.kv_bytes;
        reads += run.rows_read;
        reads_full += ref.rows_read;
        ms += run.decode_ms;
        ms_full += ref.decode_ms;
        if (progress) progress(w + 1, n_windows);
    }
    const double n = double(e.n_scored);
    e.n_windows = n_windows;
    e.ppl_full = std::exp(nll_full / n);
    e.ppl = std::exp(nll / n);
    e.kld = kld / n;
    e.top1_agree = double(agree) / n;
    e.kv_bytes /= n_windows;
    e.kv_bytes_full /= n_windows;
    e.read_ratio = reads_full > 0 ? double(reads) / double(reads_full) : 1.0;
    const double decoded = double(n_windows) * double(n_ctx - n_ctx / 2 - 1);
    e.tok_s = decoded / (ms / 1000.0);
    e.tok_s_full = decoded / (ms_full / 1000.0);
    return e;
}

}  // namespace lr
