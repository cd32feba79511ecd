#include "kv_task_evaluation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <tuple>

#include "engine/runtime/chat_prompt.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/reply_generator.h"
#include "engine/runtime/summarizer.h"

namespace lr {
namespace {

// Tokens kept free for the difference between counting the document alone and in its prompt.
constexpr uint32_t kMargin = 8;
// Generated per question at most: " <4 digits>\n" is 6 bytes, so at most 6 tokens.
constexpr int32_t kAnswerTokens = 8;

// The oracle: the same settings with no policy and 16-bit codecs.
KvSettings full_cache(const KvSettings & policy) {
    KvSettings full = policy;
    full.policy = KvPolicy::none;
    full.k_bits = full.v_bits = 16;
    full.host_bits = full.disk_bits = 0;
    return full;
}

uint64_t held_bytes(const Session & session) {
    uint64_t bytes = 0;
    for (const KvTierStats & t : session.kv_stats().tiers) bytes += t.present ? t.used_bytes : 0;
    return bytes;
}

Result<std::unique_ptr<Session>> fresh_session(std::shared_ptr<const Model> model, uint32_t n_ctx, const KvSettings & kv) {
    SessionConfig config{.n_ctx = n_ctx, .chunk_tokens = 256, .kv = kv};
    config.kv.prefix_cache = false;  // each run reads its prompt itself
    return Session::create(std::move(model), config);
}

Status cancelled_if(StopReason reason) { return reason == StopReason::cancelled ? error(StatusCode::cancelled, "stopped") : Status{}; }

std::string trimmed(std::string_view s) {
    const size_t a = s.find_first_not_of(" \t\r\n");
    const size_t b = s.find_last_not_of(" \t\r\n");
    return a == std::string_view::npos ? std::string() : std::string(s.substr(a, b - a + 1));
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// ---- summary -------------------------------------------------------------------------

bool has_chat_template(const Model & model) {
    const chat::ChatTemplate & t = model.chat_template();
    return !t.is_builtin() || t.family() != chat::ChatFamily::plain;
}

std::vector<int32_t> summary_prompt(const Model & model, bool chat, std::string_view document) {
    if (!chat) return model.tokenizer().encode(std::string(document) + "\n\nSummary:", true, false);
    const std::vector<chat::ChatMessage> messages = {{"system", document_context({}, document)}, {"user", SummarizeParams{}.instruction}};
    return render_chat_tokens(model, messages, true);
}

Result<SummaryRun> run_summary(std::shared_ptr<const Model> model, std::span<const int32_t> prompt, bool chat, uint32_t n_ctx,
                               const KvSettings & kv, const SummaryTaskParams & params, std::stop_token stop) {
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, fresh_session(model, n_ctx, kv));
    LR_RETURN_IF_ERROR(session->append(prompt, {}, stop));
    const GenerateParams gen{.max_tokens = int32_t(params.answer_tokens),
                             .sampler = {.temperature = 0, .repeat_penalty = params.repeat_penalty}};
    // A chat model's thinking is not part of its summary.
    LR_ASSIGN_OR_RETURN(GenerateResult g, chat ? generate_reply(*session, gen, {}, {}, stop) : generate(*session, gen, {}, stop));
    LR_RETURN_IF_ERROR(cancelled_if(g.reason));
    return SummaryRun{.text = trimmed(g.text), .n_tokens = uint32_t(g.tokens.size()), .reason = g.reason, .kv_bytes = held_bytes(*session)};
}

// ---- retrieval -----------------------------------------------------------------------

// A pronounceable key of three syllables and a four-digit value.
std::pair<std::string, std::string> random_fact(std::mt19937_64 & rng) {
    static constexpr std::string_view kConsonants = "bdfgklmnprstvz", kVowels = "aeiou";
    std::string key;
    for (int i = 0; i < 3; ++i) {
        key += kConsonants[rng() % kConsonants.size()];
        key += kVowels[rng() % kVowels.size()];
    }
    return {key, std::to_string(1000 + rng() % 9000)};
}

// The byte nearest `target` (within [0, end]) where a word starts: the start, the end, or a
// non-space after a space.
size_t word_start_near(std::string_view text, size_t target, size_t end) {
    auto is_start = [&](size_t p) { return p == 0 || p == end || (is_space(text[p - 1]) && !is_space(text[p])); };
    for (size_t d = 0; d <= end; ++d) {
        if (target >= d && is_start(target - d)) return target - d;
        if (target + d <= end && is_start(target + d)) return target + d;
    }
    return 0;
}

struct FillerSource {
    std::string text;    // the filler, repeated as needed
    EncodedText tokens;  // without BOS
};

// The haystack of the first n_filler filler tokens with the facts planted.
Haystack build_haystack(const Tokenizer & tokenizer, const FillerSource & source, uint32_t n_filler,
                        const std::vector<PlantedFact> & facts) {
    const std::vector<TextSpan> & spans = source.tokens.spans;
    const size_t end = n_filler < spans.size() ? spans[n_filler].begin : source.text.size();
    const std::string_view filler = std::string_view(source.text).substr(0, end);
    Haystack h;
    h.filler_tokens = n_filler;
    h.facts = facts;
    // Where each fact goes, in filler bytes; then the text assembled in filler order.
    std::vector<size_t> at(facts.size());
    for (size_t i = 0; i < facts.size(); ++i) {
        const auto target_token = size_t(std::lround(facts[i].depth * n_filler));
        const size_t target = target_token < n_filler ? spans[target_token].begin : end;
        at[i] = word_start_near(filler, target, end);
        const auto tokens_before = std::count_if(spans.begin(), spans.begin() + n_filler,
                                                 [&](const TextSpan & s) { return s.begin < at[i]; });
        h.facts[i].filler_before = n_filler > 0 ? double(tokens_before) / n_filler : 0;
    }
    std::vector<size_t> order(facts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
    size_t copied = 0;
    for (size_t i : order) {
        h.text.append(filler.substr(copied, at[i] - copied));
        copied = at[i];
        if (!h.text.empty() && h.text.back() != '\n') h.text += '\n';
        h.facts[i].byte = h.text.size();
        h.text.append(facts[i].key).append(" = ").append(facts[i].value).append("\n");
    }
    h.text.append(filler.substr(copied));
    const EncodedText encoded = tokenizer.encode_with_offsets(h.text, true, false);
    h.tokens = encoded.tokens;
    for (PlantedFact & f : h.facts) {
        // The first token that spells a byte of the fact's line.
        const auto it = std::find_if(encoded.spans.begin(), encoded.spans.end(),
                                     [&](const TextSpan & s) { return s.end > f.byte && s.size() > 0; });
        f.token = uint32_t(it - encoded.spans.begin());
    }
    return h;
}

struct Answer {
    std::string text;
    uint64_t kv_bytes = 0;
};

Result<Answer> ask(std::shared_ptr<const Model> model, std::span<const int32_t> prompt, size_t read_first, const KvSettings & kv,
                   std::stop_token stop) {
    LR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, fresh_session(model, uint32_t(prompt.size()) + kAnswerTokens, kv));
    // The haystack first, as a document is read before the question comes.
    LR_RETURN_IF_ERROR(session->append(prompt.first(read_first), {}, stop));
    LR_RETURN_IF_ERROR(session->append(prompt.subspan(read_first), {}, stop));
    const GenerateParams gen{.max_tokens = kAnswerTokens, .sampler = {.temperature = 0}};
    LR_ASSIGN_OR_RETURN(GenerateResult g,
                        generate(
                            *session, gen, [](int32_t, std::string_view piece) { return piece.find('\n') == std::string_view::npos; },
                            stop));
    LR_RETURN_IF_ERROR(cancelled_if(g.reason));
    return Answer{.text = retrieval_answer(g.text), .kv_bytes = held_bytes(*session)};
}

std::string percent(uint32_t n, uint32_t of) { return std::to_string(of ? int(std::lround(100.0 * n / of)) : 0) + "%"; }

}  // namespace

Result<SummaryTaskEvaluation> evaluate_summary_task(std::shared_ptr<const Model> model, std::string_view document,
                                                    const KvSettings & policy, const SummaryTaskParams & params, std::stop_token stop) {
    LR_RETURN_IF_ERROR(validate(policy));
    const uint32_t n_ctx_train = model->hparams().n_ctx_train;
    const uint32_t n_ctx = params.n_ctx ? params.n_ctx : n_ctx_train;
    if (n_ctx > n_ctx_train) {
        return error(StatusCode::invalid_argument, "a context of " + std::to_string(n_ctx) +
                                                       " tokens exceeds the model's trained context of " + std::to_string(n_ctx_train));
    }
    if (params.answer_tokens < 1 || params.answer_tokens > 65536) {
        return error(StatusCode::invalid_argument, "the summary length must be 1 to 65536 tokens");
    }
    if (rouge_words(document).empty()) return error(StatusCode::invalid_argument, "the document has no words to summarize");
    const bool has_reference = !params.reference.empty();
    if (has_reference && rouge_words(params.reference).empty()) {
        return error(StatusCode::invalid_argument, "the reference summary has no words");
    }

    SummaryTaskEvaluation e;
    e.chat_template = has_chat_template(*model);
    const Tokenizer & tok = model->tokenizer();
    auto count = [&](std::string_view t) { return uint32_t(tok.encode(t, false, false).size()); };
    e.document_tokens = count(document);
    const uint32_t overhead = uint32_t(summary_prompt(*model, e.chat_template, "").size()) + kMargin;
    if (uint64_t(overhead) + params.answer_tokens + 16 > n_ctx) {
        return error(StatusCode::invalid_argument,
                     "a context of " + std::to_string(n_ctx) + " tokens cannot hold a document and a summary of " +
                         std::to_string(params.answer_tokens) + " tokens; raise the context (-c) or lower the summary length");
    }
    // The document's beginning when it does not fit: whole paragraphs or sentences.
    std::string_view used = document;
    if (uint64_t(summary_prompt(*model, e.chat_template, document).size()) + params.answer_tokens > n_ctx) {
        used = split_text(document, n_ctx - params.answer_tokens - overhead, count).front();
    }
    e.document_tokens_used = count(used);
    const std::vector<int32_t> prompt = summary_prompt(*model, e.chat_template, used);
    e.prompt_tokens = uint32_t(prompt.size());

    // The sessions hold what the prompt and the answer need, not all of -c (a model's
    // trained context may be far more than its KV fits).
    const uint32_t n_session = e.prompt_tokens + params.answer_tokens;
    LR_ASSIGN_OR_RETURN(e.full, run_summary(model, prompt, e.chat_template, n_session, full_cache(policy), params, stop));
    LR_ASSIGN_OR_RETURN(e.policy, run_summary(model, prompt, e.chat_template, n_session, policy, params, stop));
    e.policy_vs_full = rouge(e.policy.text, e.full.text);
    if (has_reference) {
        e.full_vs_reference = rouge(e.full.text, params.reference);
        e.policy_vs_reference = rouge(e.policy.text, params.reference);
    }
    // A file without a template of its own gets its architecture's format: a test or
    // random-weight file, or a base model, none of them taught to follow an instruction.
    const bool own_template = !model->chat_template().is_builtin();
    e.agreement_only = !(has_reference && own_template);
    if (!e.chat_template) {
        e.note =
            "this model has no chat template: it continues the text rather than summarizing it, so ROUGE measures agreement with the "
            "full cache, not summary quality";
    } else if (!own_template) {
        e.note =
            "this model file carries no chat template of its own (its architecture's format was used): a test, random-weight or base "
            "model, so ROUGE measures agreement with the full cache, not summary quality";
    } else if (!has_reference) {
        e.note =
            "ROUGE against the full cache measures agreement between two generations, not summary quality (give a reference summary "
            "for that)";
    } else {
        e.note =
            "ROUGE against the reference measures quality as far as the model can summarize: the full cache's own score is the "
            "baseline (a random-weight model scores only what words it shares by chance)";
    }
    return e;
}

std::string retrieval_answer(std::string_view continuation) { return trimmed(continuation.substr(0, continuation.find('\n'))); }

bool answer_reproduces(std::string_view answer, std::string_view value) {
    if (value.empty() || answer.substr(0, value.size()) != value) return false;
    if (answer.size() == value.size()) return true;
    const auto next = static_cast<unsigned char>(answer[value.size()]);
    return !(std::isalnum(next) || next >= 0x80);  // a longer word or number is another answer
}

Result<Haystack> plant_facts(const Tokenizer & tokenizer, std::string_view filler, uint32_t length, std::span<const double> depths,
                             uint64_t seed) {
    for (double d : depths) {
        if (!(d >= 0 && d <= 1))
            return error(StatusCode::invalid_argument, "a depth must be 0 to 100% (got " + std::to_string(100 * d) + "%)");
    }
    if (depths.empty()) return error(StatusCode::invalid_argument, "no depth to plant a fact at");
    if (trimmed(filler).empty()) return error(StatusCode::invalid_argument, "the filler text has no words");

    std::mt19937_64 rng(seed);
    std::vector<PlantedFact> facts;
    uint32_t fact_tokens = 0;
    for (double d : depths) {
        PlantedFact f{.depth = d};
        do {
            std::tie(f.key, f.value) = random_fact(rng);
        } while (std::any_of(facts.begin(), facts.end(), [&](const PlantedFact & g) { return g.key == f.key; }));
        fact_tokens += uint32_t(tokenizer.encode("\n" + f.key + " = " + f.value + "\n", false, false).size());
        facts.push_back(std::move(f));
    }
    if (uint64_t(fact_tokens) + 16 > length) {
        return error(StatusCode::invalid_argument, "a haystack of " + std::to_string(length) + " tokens cannot hold " +
                                                       std::to_string(depths.size()) + " facts and filler (the facts take about " +
                                                       std::to_string(fact_tokens) + ")");
    }

    FillerSource source{.text = std::string(filler)};
    const std::string filler_block(filler);
    while ((source.tokens = tokenizer.encode_with_offsets(source.text, false, false)).tokens.size() < size_t(length) + 16) {
        source.text.append("\n\n").append(filler_block);
    }
    // The filler's share is found by a few corrections: tokens may merge where the facts join it.
    int64_t n_filler = int64_t(length) - 1 - fact_tokens;
    std::optional<Haystack> best;
    for (int attempt = 0; attempt < 16 && n_filler > 0; ++attempt) {
        Haystack h = build_haystack(tokenizer, source, uint32_t(n_filler), facts);
        const int64_t n = int64_t(h.tokens.size());
        if (n <= int64_t(length) && (!best || n > int64_t(best->tokens.size()))) best = h;
        if (n <= int64_t(length) && n + 8 >= int64_t(length)) break;
        n_filler += int64_t(length) - n;
    }
    if (!best) return error(StatusCode::internal, "could not build a haystack of " + std::to_string(length) + " tokens");
    return *std::move(best);
}

std::vector<int32_t> retrieval_prompt(const Tokenizer & tokenizer, const Haystack & haystack, size_t i) {
    std::string text = haystack.text;
    if (!text.empty() && text.back() != '\n') text += '\n';
    text.append(haystack.facts[i].key).append(" =");
    return tokenizer.encode(text, true, false);
}

Result<RetrievalTaskEvaluation> evaluate_retrieval_task(std::shared_ptr<const Model> model, std::string_view filler,
                                                        const KvSettings & policy, const RetrievalTaskParams & params,
                                                        const std::function<void(size_t, size_t)> & progress, std::stop_token stop) {
    LR_RETURN_IF_ERROR(validate(policy));
    if (params.lengths.empty()) return error(StatusCode::invalid_argument, "no haystack length given");
    if (params.trials == 0) return error(StatusCode::invalid_argument, "the trials must be at least 1");
    const uint32_t n_ctx_train = model->hparams().n_ctx_train;
    for (uint32_t length : params.lengths) {
        if (uint64_t(length) + kRetrievalExtraTokens > n_ctx_train) {
            return error(StatusCode::invalid_argument,
                         "a haystack of " + std::to_string(length) + " tokens with its question and answer (" +
                             std::to_string(kRetrievalExtraTokens) + " more) exceeds the model's trained context of " +
                             std::to_string(n_ctx_train) + " tokens; the longest length it allows is " +
                             std::to_string(n_ctx_train > kRetrievalExtraTokens ? n_ctx_train - kRetrievalExtraTokens : 0));
        }
    }
    const Tokenizer & tok = model->tokenizer();
    const KvSettings full = full_cache(policy);
    RetrievalTaskEvaluation e;
    const size_t n_depths = params.depths.size();
    for (uint32_t length : params.lengths) {
        for (double depth : params.depths) e.cells.push_back({.length = length, .depth = depth});
    }
    const size_t total = params.lengths.size() * params.trials * n_depths;
    size_t done = 0;
    for (size_t il = 0; il < params.lengths.size(); ++il) {
        for (uint32_t trial = 0; trial < params.trials; ++trial) {
            const uint64_t seed = params.seed + trial + 1000003ull * params.lengths[il];
            LR_ASSIGN_OR_RETURN(Haystack haystack, plant_facts(tok, filler, params.lengths[il], params.depths, seed));
            for (size_t id = 0; id < n_depths; ++id) {
                const std::vector<int32_t> prompt = retrieval_prompt(tok, haystack, id);
                // The haystack's tokens, as far as the question's join leaves them unchanged.
                const size_t common = size_t(
                    std::mismatch(prompt.begin(), prompt.end(), haystack.tokens.begin(), haystack.tokens.end()).first - prompt.begin());
                const size_t read_first = std::clamp<size_t>(common, 1, prompt.size() - 1);
                LR_ASSIGN_OR_RETURN(Answer a_full, ask(model, prompt, read_first, full, stop));
                LR_ASSIGN_OR_RETURN(Answer a, ask(model, prompt, read_first, policy, stop));
                const std::string & value = haystack.facts[id].value;
                e.questions.push_back({.length = params.lengths[il],
                                       .depth = params.depths[id],
                                       .key = haystack.facts[id].key,
                                       .value = value,
                                       .answer_full = a_full.text,
                                       .answer = a.text});
                RetrievalCell & cell = e.cells[il * n_depths + id];
                ++cell.n_asked;
                cell.recalled_full += answer_reproduces(a_full.text, value);
                cell.recalled += answer_reproduces(a.text, value);
                cell.agreed += a.text == a_full.text;
                e.kv_bytes += a.kv_bytes;
                e.kv_bytes_full += a_full.kv_bytes;
                if (progress) progress(++done, total);
            }
        }
    }
    for (const RetrievalCell & c : e.cells) {
        e.n_asked += c.n_asked;
        e.recalled_full += c.recalled_full;
        e.recalled += c.recalled;
        e.agreed += c.agreed;
    }
    e.kv_bytes /= e.n_asked;
    e.kv_bytes_full /= e.n_asked;
    e.agreement_only = 2 * e.recalled_full < e.n_asked;
    if (e.agreement_only) {
        e.note = "the full cache recalls " + percent(e.recalled_full, e.n_asked) +
                 " of the facts: this model cannot retrieve them, so these figures measure agreement with the full cache, not the "
                 "model's quality";
    } else {
        e.note = "the full cache recalls " + percent(e.recalled_full, e.n_asked) + " of the facts: recall measures what the policy loses";
    }
    return e;
}

}  // namespace lr
