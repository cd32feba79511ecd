#pragma once
// Summaries of documents of any length on one Session, the same code for the desktop app
// and `longread-cli summarize`.
//
//   one pass    the document and the instruction fit the context with room for the answer:
//               one prompt, one generation (streamed to the sink).
//   map-reduce  they do not: the text is cut at paragraph, sentence or word boundaries into
//               chunks that fit; each chunk is summarized (map), then consecutive summaries
//               are summarized together (reduce), level after level, until one prompt holds
//               them all; that last pass answers the instruction and is streamed.
//
// Nothing is truncated: every token of the document is read by some pass. The result says
// which method was used. Long calls take a stop token, checked per chunk and per token.

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/summary.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"

namespace lr {

// Checks the parameters; the message names the setting.
Status validate(const SummarizeParams & params);

// What summarize() will do with a text on a context of n_ctx tokens, without generating.
struct SummaryPlan {
    SummaryMethod method = SummaryMethod::one_pass;
    uint32_t document_tokens = 0;  // the text alone
    uint32_t prompt_tokens = 0;    // the one-pass prompt (document, instruction, template)
    uint32_t answer_tokens = 0;    // generated per pass at most
    uint32_t chunk_tokens = 0;     // map-reduce: the most document tokens one chunk may hold
    uint32_t n_chunks = 1;         // map-reduce: chunks of the first (map) level
};

// context_full when the context cannot hold even the instruction and a minimal chunk.
Result<SummaryPlan> plan_summary(const Model & model, uint32_t n_ctx, std::string_view text, const SummarizeParams & params);

// Summarizes `text` on `session` (whatever it holds is replaced, keeping a common prefix).
// `sink` receives the final pass's tokens as they come. Errors: context_full when the context
// is too small to summarize at all, or the engine's errors; stopping is reason cancelled.
Result<SummaryResult> summarize(Session & session, std::string_view text, const SummarizeParams & params,
                                const SummaryProgressFn & progress = {}, const TokenSink & sink = {}, std::stop_token stop = {});

// The text cut into pieces of at most max_tokens tokens each (by `count`), at paragraph
// breaks, else sentence ends, else spaces, else UTF-8 character boundaries. Concatenated,
// the pieces give the text back exactly. Exposed for tests.
std::vector<std::string_view> split_text(std::string_view text, uint32_t max_tokens,
                                         const std::function<uint32_t(std::string_view)> & count);

}  // namespace lr
