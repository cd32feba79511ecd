#include "summarizer.h"

#include <algorithm>

#include "engine/runtime/chat_prompt.h"
#include "engine/runtime/reply_generator.h"

namespace lr {
namespace {

constexpr const char * kMapInstruction = "Summarize this part of the document: its main points, names and numbers, in order.";
constexpr const char * kReduceInstruction = "Combine these summaries into one shorter summary that keeps the main points in order.";
// Tokens kept free for the difference between counting pieces apart and together.
constexpr uint32_t kMargin = 8;
// A context that leaves less than this for an answer cannot summarize.
constexpr uint32_t kMinAnswerTokens = 16;

using Messages = std::vector<chat::ChatMessage>;

std::string part_title(std::string_view title, size_t index, size_t count) {
    std::string t = title.empty() ? std::string("the document") : std::string(title);
    return t + " (part " + std::to_string(index + 1) + " of " + std::to_string(count) + ")";
}

Messages one_pass_messages(std::string_view title, std::string_view text, const std::string & instruction) {
    return {{"system", document_context(title, text)}, {"user", instruction}};
}

Messages map_messages(std::string_view title, size_t index, size_t count, std::string_view chunk) {
    return {{"system", document_context(part_title(title, index, count), chunk)}, {"user", kMapInstruction}};
}

std::string summary_label(size_t index) { return "Part " + std::to_string(index + 1) + ":\n"; }

Messages reduce_messages(std::string_view title, std::span<const std::string> summaries, size_t first_index,
                         const std::string & instruction) {
    // NOTE: built with append: GCC 12 warns (-Wrestrict, falsely) on "literal" + std::string&&.
    std::string body = "Summaries of consecutive parts of ";
    if (title.empty()) {
        body += "a document";
    } else {
        body.append("\"").append(title).append("\"");
    }
    body += ", in order:\n";
    for (size_t i = 0; i < summaries.size(); ++i)
        body.append("\n").append(summary_label(first_index + i)).append(summaries[i]).append("\n");
    return {{"system", body}, {"user", instruction}};
}

uint32_t count_tokens(const Model & model, std::string_view text) { return uint32_t(model.tokenizer().encode(text, false, false).size()); }

uint32_t prompt_size(const Model & model, const Messages & messages) { return uint32_t(render_chat_tokens(model, messages, true).size()); }

// Sizes every prompt shape needs besides its text; the largest one bounds the chunks.
struct Budget {
    uint32_t answer = 0;  // tokens per generation
    uint32_t chunk = 0;   // text tokens one map or reduce prompt may carry
};

Result<Budget> budget_for(const Model & model, uint32_t n_ctx, const SummarizeParams & params) {
    const std::string empty_summary;
    const uint32_t overhead = std::max({prompt_size(model, map_messages(params.title, 998, 999, "")),
                                        prompt_size(model, reduce_messages(params.title, {}, 0, params.instruction)),
                                        prompt_size(model, reduce_messages(params.title, {}, 0, kReduceInstruction)),
                                        prompt_size(model, one_pass_messages(params.title, "", params.instruction))}) +
                              kMargin;
    if (n_ctx <= overhead + 4 * kMinAnswerTokens) {
        return error(StatusCode::context_full,
                     "a context of " + std::to_string(n_ctx) + " tokens is too small to summarize: the instructions alone take " +
                         std::to_string(overhead) + "; use a context of at least " + std::to_string(overhead + 4 * kMinAnswerTokens + 1));
    }
    Budget b;
    // A quarter of what is left at most, so that a reduce prompt holds at least three
    // summaries and every level shrinks.
    b.answer = std::min(params.answer_tokens, (n_ctx - overhead) / 4);
    b.chunk = n_ctx - overhead - b.answer;
    return b;
}

// Estimated reduce passes after `n` summaries of at most `answer` tokens each.
uint32_t estimate_reduce_passes(uint32_t n, uint32_t answer, uint32_t chunk) {
    const uint32_t per_group = std::max<uint32_t>(2, chunk / (answer + kMargin));
    uint32_t total = 0;
    while (n > 1 || total == 0) {
        const uint32_t groups = (n + per_group - 1) / per_group;
        total += groups;
        if (groups <= 1) break;
        n = groups;
    }
    return total;
}

// Cuts `text` where `separator` ends, keeping the separator with the left part.
std::vector<std::string_view> cut_after(std::string_view text, std::string_view separator) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (start < text.size()) {
        const size_t at = text.find(separator, start);
        if (at == std::string_view::npos) break;
        size_t end = at + separator.size();
        // Runs of the separator stay together ("\n\n\n").
        while (text.substr(end, separator.size()) == separator) end += separator.size();
        parts.push_back(text.substr(start, end - start));
        start = end;
    }
    if (start < text.size()) parts.push_back(text.substr(start));
    return parts;
}

// Slices of at most max_bytes bytes that never split a UTF-8 character.
std::vector<std::string_view> cut_bytes(std::string_view text, size_t max_bytes) {
    std::vector<std::string_view> parts;
    max_bytes = std::max<size_t>(max_bytes, 4);
    size_t start = 0;
    while (start < text.size()) {
        size_t end = std::min(text.size(), start + max_bytes);
        while (end < text.size() && end > start + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
        parts.push_back(text.substr(start, end - start));
        start = end;
    }
    return parts;
}

struct Atom {
    std::string_view text;
    uint32_t n_tokens = 0;
};

void atomize(std::string_view text, uint32_t n_tokens, uint32_t max_tokens, size_t level,
             const std::function<uint32_t(std::string_view)> & count, std::vector<Atom> & out) {
    static constexpr std::string_view kSeparators[] = {"\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " "};
    if (n_tokens <= max_tokens) {
        out.push_back({text, n_tokens});
        return;
    }
    std::vector<std::string_view> parts;
    while (level < std::size(kSeparators)) {
        parts = cut_after(text, kSeparators[level]);
        ++level;
        if (parts.size() > 1) break;
    }
    // Byte-level tokenizers give at most one token per byte, SentencePiece's byte fallback
    // too (plus a possible space prefix).
    if (parts.size() <= 1) parts = cut_bytes(text, max_tokens > 1 ? max_tokens - 1 : 1);
    for (std::string_view part : parts) atomize(part, count(part), max_tokens, level, count, out);
}

}  // namespace

const char * summary_method_name(SummaryMethod method) { return method == SummaryMethod::one_pass ? "one pass" : "map-reduce"; }

Status validate(const SummarizeParams & params) {
    if (params.answer_tokens < kMinAnswerTokens || params.answer_tokens > 65536) {
        return error(StatusCode::invalid_argument, "the summary length must be " + std::to_string(kMinAnswerTokens) +
                                                       " to 65536 tokens (got " + std::to_string(params.answer_tokens) + ")");
    }
    if (params.max_levels == 0) return error(StatusCode::invalid_argument, "max_levels must be at least 1");
    if (params.instruction.empty()) return error(StatusCode::invalid_argument, "the summary instruction is empty");
    return validate_sampler_params(params.sampler);
}

std::string SummaryResult::describe() const {
    std::string out = std::string(summary_method_name(method)) + " over " + std::to_string(document_tokens) + " tokens";
    if (method == SummaryMethod::map_reduce) {
        out += ": " + std::to_string(n_chunks) + " chunks, " + std::to_string(n_levels) + " reduce level" + (n_levels == 1 ? "" : "s") +
               ", " + std::to_string(n_passes) + " passes";
    }
    return out;
}

std::vector<std::string_view> split_text(std::string_view text, uint32_t max_tokens,
                                         const std::function<uint32_t(std::string_view)> & count) {
    std::vector<std::string_view> chunks;
    if (text.empty()) return chunks;
    max_tokens = std::max<uint32_t>(max_tokens, 1);
    std::vector<Atom> atoms;
    atomize(text, count(text), max_tokens, 0, count, atoms);

    // Greedy packing by the atoms' counts, then checked on the joined text: tokens at the
    // joins may merge or split, so a chunk that came out over is given back atoms.
    size_t i = 0;
    while (i < atoms.size()) {
        size_t end = i;
        uint64_t sum = 0;
        while (end < atoms.size() && (end == i || sum + atoms[end].n_tokens <= max_tokens)) sum += atoms[end++].n_tokens;
        auto joined = [&](size_t e) {
            const char * first = atoms[i].text.data();
            const char * last = atoms[e - 1].text.data() + atoms[e - 1].text.size();
            return std::string_view(first, size_t(last - first));
        };
        while (end > i + 1 && count(joined(end)) > max_tokens) --end;
        chunks.push_back(joined(end));
        i = end;
    }
    return chunks;
}

Result<SummaryPlan> plan_summary(const Model & model, uint32_t n_ctx, std::string_view text, const SummarizeParams & params) {
    LR_RETURN_IF_ERROR(validate(params));
    LR_ASSIGN_OR_RETURN(Budget budget, budget_for(model, n_ctx, params));
    SummaryPlan plan;
    plan.document_tokens = count_tokens(model, text);
    plan.answer_tokens = budget.answer;
    plan.chunk_tokens = budget.chunk;
    plan.prompt_tokens = prompt_size(model, one_pass_messages(params.title, text, params.instruction));
    if (uint64_t(plan.prompt_tokens) + budget.answer <= n_ctx) {
        plan.method = SummaryMethod::one_pass;
        plan.n_chunks = 1;
    } else {
        plan.method = SummaryMethod::map_reduce;
        plan.n_chunks = uint32_t(split_text(text, budget.chunk, [&](std::string_view t) { return count_tokens(model, t); }).size());
    }
    return plan;
}

Result<SummaryResult> summarize(Session & session, std::string_view text, const SummarizeParams & params,
                                const SummaryProgressFn & progress, const TokenSink & sink, std::stop_token stop) {
    const Model & model = session.model();
    LR_RETURN_IF_ERROR(validate(params));
    LR_ASSIGN_OR_RETURN(Budget budget, budget_for(model, session.n_ctx(), params));
    auto count = [&](std::string_view t) { return count_tokens(model, t); };

    SummaryResult result;
    result.document_tokens = count(text);
    SummaryProgress report;

    // One generation: sync the prompt, generate at most budget.answer tokens.
    auto run_pass = [&](const Messages & messages, bool streamed) -> Result<GenerateResult> {
        report.prefill = {};
        report.tokens_generated = 0;
        if (progress) progress(report);
        const std::vector<int32_t> prompt = render_chat_tokens(model, messages, true);
        Status s = session.sync(
            prompt,
            [&](const PrefillProgress & p) {
                report.prefill = p;
                if (progress) progress(report);
            },
            stop);
        if (s.code() == StatusCode::cancelled) return GenerateResult{.reason = StopReason::cancelled};
        if (!s.ok()) return s;
        GenerateParams gen{.max_tokens = int32_t(budget.answer), .sampler = params.sampler};
        // A thinking model's thinking is not part of the summary.
        LR_ASSIGN_OR_RETURN(GenerateResult g, generate_reply(
                                                  session, gen, {},
                                                  [&](int32_t token, std::string_view piece) {
                                                      ++report.tokens_generated;
                                                      if (progress) progress(report);
                                                      return !streamed || !sink || sink(token, piece);
                                                  },
                                                  stop));
        ++result.n_passes;
        ++report.passes_done;
        return g;
    };
    auto trimmed = [](std::string s) {
        const size_t a = s.find_first_not_of(" \n\t\r");
        const size_t b = s.find_last_not_of(" \n\t\r");
        return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };

    const uint32_t one_pass_tokens = prompt_size(model, one_pass_messages(params.title, text, params.instruction));
    if (uint64_t(one_pass_tokens) + budget.answer <= session.n_ctx()) {
        result.method = SummaryMethod::one_pass;
        report = {.method = SummaryMethod::one_pass, .stage = SummaryStage::final};
        LR_ASSIGN_OR_RETURN(GenerateResult g, run_pass(one_pass_messages(params.title, text, params.instruction), true));
        result.text = g.text;
        result.reason = g.reason;
        return result;
    }

    result.method = SummaryMethod::map_reduce;
    const std::vector<std::string_view> chunks = split_text(text, budget.chunk, count);
    result.n_chunks = uint32_t(chunks.size());
    report = {.method = SummaryMethod::map_reduce,
              .stage = SummaryStage::map,
              .count = result.n_chunks,
              .passes_total = result.n_chunks + estimate_reduce_passes(result.n_chunks, budget.answer, budget.chunk)};

    std::vector<std::string> summaries;
    for (size_t i = 0; i < chunks.size(); ++i) {
        report.index = uint32_t(i);
        LR_ASSIGN_OR_RETURN(GenerateResult g, run_pass(map_messages(params.title, i, chunks.size(), chunks[i]), false));
        if (g.reason == StopReason::cancelled) {
            result.reason = StopReason::cancelled;
            result.chunk_summaries = summaries;
            return result;
        }
        summaries.push_back(trimmed(g.text));
    }
    result.chunk_summaries = summaries;

    for (uint32_t level = 1; level <= params.max_levels; ++level) {
        // Consecutive summaries grouped so that each group's prompt fits.
        std::vector<std::pair<size_t, size_t>> groups;  // [first, last)
        size_t first = 0;
        uint64_t sum = 0;
        for (size_t i = 0; i < summaries.size(); ++i) {
            const uint32_t n = count(summary_label(i) + summaries[i]) + 2;
            if (i > first && sum + n > budget.chunk) {
                groups.emplace_back(first, i);
                first = i;
                sum = 0;
            }
            sum += n;
        }
        groups.emplace_back(first, summaries.size());
        result.n_levels = level;
        report.level = level;
        report.count = uint32_t(groups.size());
        report.passes_total = report.passes_done + estimate_reduce_passes(uint32_t(summaries.size()), budget.answer, budget.chunk);

        if (groups.size() == 1) {
            report.stage = SummaryStage::final;
            report.index = 0;
            report.passes_total = report.passes_done + 1;
            LR_ASSIGN_OR_RETURN(GenerateResult g, run_pass(reduce_messages(params.title, summaries, 0, params.instruction), true));
            result.text = g.text;
            result.reason = g.reason;
            return result;
        }
        if (groups.size() >= summaries.size()) {
            return error(StatusCode::internal, "summaries do not shrink: each is too long for the context; lower the summary length");
        }
        report.stage = SummaryStage::reduce;
        std::vector<std::string> next;
        for (size_t g = 0; g < groups.size(); ++g) {
            report.index = uint32_t(g);
            const auto [a, b] = groups[g];
            const std::span<const std::string> part(summaries.data() + a, b - a);
            LR_ASSIGN_OR_RETURN(GenerateResult r, run_pass(reduce_messages(params.title, part, a, kReduceInstruction), false));
            if (r.reason == StopReason::cancelled) {
                result.reason = StopReason::cancelled;
                return result;
            }
            next.push_back(trimmed(r.text));
        }
        summaries = std::move(next);
    }
    return error(StatusCode::internal, "the summary needed more than " + std::to_string(params.max_levels) + " reduce levels");
}

}  // namespace lr
