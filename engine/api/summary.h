#pragma once
// What a summary request and its result carry: the method (one pass or map-reduce), its
// parameters, progress through the passes, and the summary.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/api/generation.h"

namespace lr {

enum class SummaryMethod { one_pass, map_reduce };
const char * summary_method_name(SummaryMethod method);  // "one pass", "map-reduce"

struct SummarizeParams {
    std::string title;  // the document's name in the prompts ("report.pdf"); may be empty
    std::string instruction = "Summarize the document in a few short paragraphs: its main points, in order.";
    uint32_t answer_tokens = 384;  // room for each summary; lowered to a quarter of what a small context leaves
    uint32_t max_levels = 12;      // reduce levels at most (each at least halves the summaries)
    SamplerParams sampler{.temperature = 0.3f, .repeat_penalty = 1.1f};
};

enum class SummaryStage { map, reduce, final };

struct SummaryProgress {
    SummaryMethod method = SummaryMethod::one_pass;
    SummaryStage stage = SummaryStage::final;
    uint32_t level = 0;             // 0: the document's chunks; 1...: summaries of summaries
    uint32_t index = 0;             // the chunk of this level being summarized
    uint32_t count = 1;             // chunks of this level
    uint32_t passes_done = 0;       // generations finished so far
    uint32_t passes_total = 1;      // estimated generations in all (exact for one pass)
    PrefillProgress prefill;        // the prompt of the current pass
    uint32_t tokens_generated = 0;  // in the current pass
};
using SummaryProgressFn = std::function<void(const SummaryProgress &)>;

struct SummaryResult {
    std::string text;  // the summary (partial when stopped)
    SummaryMethod method = SummaryMethod::one_pass;
    StopReason reason = StopReason::end_of_generation;  // of the last pass; cancelled when stopped anywhere
    uint32_t document_tokens = 0;
    uint32_t n_chunks = 1;                     // map level chunks (1 for one pass)
    uint32_t n_levels = 0;                     // reduce levels (0 for one pass)
    uint32_t n_passes = 0;                     // generations run
    std::vector<std::string> chunk_summaries;  // the map level's summaries, in order

    // "one pass over 1234 tokens" / "map-reduce over 5678 tokens: 7 chunks, 2 reduce levels, 11 passes".
    std::string describe() const;
};

}  // namespace lr
