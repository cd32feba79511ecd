#pragma once
// Quality beyond perplexity (`longread-cli eval-kv --task summary|retrieval`): what a cache
// policy changes in what the model writes. Each prompt runs twice on fresh sessions, with the
// full cache (policy none, 16-bit codecs: the oracle) and with the policy, decoding greedily,
// so that every difference between the two runs is the policy's.
//
//   summary    the document (its beginning, cut at a paragraph or sentence boundary, when it
//              does not fit the context with room for the answer) and a request for a
//              summary: the model's chat template with the summarizer's instruction when the
//              model has one, else the plain continuation "<document>\n\nSummary:". ROUGE
//              (rouge.h) of the policy's summary against the full cache's, and of both
//              against a reference summary when one is given.
//   retrieval  a needle-in-a-haystack sweep: for each length, filler text of that many
//              tokens with one line `key = value` planted at each depth (random keys and
//              values from a seed); each key is asked on its own, the haystack read first
//              (the policy compresses it as it would a document) and then the question
//              "\n<key> =" (a continuation prompt), and the greedy continuation's first line
//              must give the value. Per depth and length: the full cache's recall, the
//              policy's, and how often the policy answers as the full cache does.
//
// On a model that cannot do the task (stories260K, random weights) these are measures of
// agreement with the full cache, not of the model's quality; `agreement_only` and `note` say
// so (see each result).

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/rouge.h"
#include "engine/runtime/session.h"

namespace lr {

// ---- summary -------------------------------------------------------------------------

struct SummaryTaskParams {
    uint32_t n_ctx = 0;            // the sessions' context; 0: the model's trained context
    uint32_t answer_tokens = 128;  // the summary's length at most
    std::string reference;         // a reference summary; empty: none
    float repeat_penalty = 1.1f;   // the summarizer's; greedy either way (temperature 0)
};

struct SummaryRun {
    std::string text;
    uint32_t n_tokens = 0;
    StopReason reason = StopReason::max_tokens;
    uint64_t kv_bytes = 0;  // KV held when the summary ends
};

struct SummaryTaskEvaluation {
    bool chat_template = false;         // the prompt used the model's chat template
    uint32_t document_tokens = 0;       // the whole document
    uint32_t document_tokens_used = 0;  // what the prompt holds (the beginning, when cut)
    uint32_t prompt_tokens = 0;
    SummaryRun full;
    SummaryRun policy;
    RougeScores policy_vs_full;
    std::optional<RougeScores> full_vs_reference;  // with a reference only
    std::optional<RougeScores> policy_vs_reference;
    // True unless a reference is given to a model whose file carries its own chat template:
    // ROUGE against the full cache compares two generations, a model without a template
    // (stories260K) continues the text rather than summarizing it, and a file that relies on
    // its architecture's format (the random-weight test models) was never taught to.
    bool agreement_only = true;
    std::string note;  // says what the figures measure, in a sentence
};

Result<SummaryTaskEvaluation> evaluate_summary_task(std::shared_ptr<const Model> model, std::string_view document,
                                                    const KvSettings & policy, const SummaryTaskParams & params = {},
                                                    std::stop_token stop = {});

// ---- retrieval -----------------------------------------------------------------------

struct PlantedFact {
    std::string key;           // lower-case letters
    std::string value;         // digits
    double depth = 0;          // where it was asked to go: the share of the filler before it, 0..1
    size_t byte = 0;           // where its line starts in the haystack's text
    uint32_t token = 0;        // the haystack token where its line starts (after the BOS)
    double filler_before = 0;  // the share of the filler's tokens before it, measured
};

struct Haystack {
    std::string text;                // filler with one fact line per depth
    std::vector<int32_t> tokens;     // its tokens, BOS first
    uint32_t filler_tokens = 0;      // tokens of the filler alone
    std::vector<PlantedFact> facts;  // in the order of the depths given
};

// A haystack of at most `length` tokens (BOS included; the filler is sized to come within
// 8 tokens of it), filler
// taken from the start of `filler` (repeated when too short), a fact line "<key> = <value>"
// at each depth (0..1, at a word boundary), keys and values drawn from `seed`.
// invalid_argument when the length cannot hold the facts or the filler has no words.
Result<Haystack> plant_facts(const Tokenizer & tokenizer, std::string_view filler, uint32_t length, std::span<const double> depths,
                             uint64_t seed);

// The prompt that asks for fact `i`: the haystack's text, then "<key> =" on a line of its
// own, tokenized whole (BOS first). Its tokens begin with the haystack's but for the last
// few where the two join; evaluate_retrieval_task reads the common part first.
std::vector<int32_t> retrieval_prompt(const Tokenizer & tokenizer, const Haystack & haystack, size_t i);

// What a greedy continuation answered: its first line, without surrounding spaces.
std::string retrieval_answer(std::string_view continuation);
// Whether the answer gives the value: it starts with it and no letter or digit follows.
bool answer_reproduces(std::string_view answer, std::string_view value);

struct RetrievalTaskParams {
    std::vector<uint32_t> lengths = {256, 512};              // haystack tokens
    std::vector<double> depths = {0, 0.25, 0.5, 0.75, 1.0};  // 0..1
    uint32_t trials = 3;                                     // haystacks per length (seeds seed, seed + 1, ...)
    uint64_t seed = 1;
};

struct RetrievalCell {
    uint32_t length = 0;
    double depth = 0;
    uint32_t n_asked = 0;
    uint32_t recalled_full = 0;  // the full cache's answer gave the value
    uint32_t recalled = 0;       // the policy's did
    uint32_t agreed = 0;         // the policy answered exactly as the full cache
};

// One question and what both runs answered (the first line of the continuation).
struct RetrievalQuestion {
    uint32_t length = 0;
    double depth = 0;
    std::string key;
    std::string value;
    std::string answer_full;
    std::string answer;
};

struct RetrievalTaskEvaluation {
    std::vector<RetrievalCell> cells;          // length-major: cells[il * depths + id]
    std::vector<RetrievalQuestion> questions;  // in the order asked
    uint32_t n_asked = 0;
    uint32_t recalled_full = 0;
    uint32_t recalled = 0;
    uint32_t agreed = 0;
    uint64_t kv_bytes = 0;  // KV held when answering, mean over the questions
    uint64_t kv_bytes_full = 0;
    // True when the full cache recalls less than half the facts: the model cannot do the
    // task, and the policy's figures say only how often it answers as the full cache.
    bool agreement_only = false;
    std::string note;
};

// The most tokens a question and its answer add to a haystack (what the context must hold
// beyond the longest length): at most one token per byte of "\n<key> =" and of the answer.
inline constexpr uint32_t kRetrievalExtraTokens = 24;

// invalid_argument when a length (with the question and answer) exceeds the model's trained
// context, or a depth is outside 0..1. progress(questions done, questions in all).
Result<RetrievalTaskEvaluation> evaluate_retrieval_task(std::shared_ptr<const Model> model, std::string_view filler,
                                                        const KvSettings & policy, const RetrievalTaskParams & params = {},
                                                        const std::function<void(size_t, size_t)> & progress = {},
                                                        std::stop_token stop = {});

}  // namespace lr
