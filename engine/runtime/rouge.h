#pragma once
// ROUGE (Lin 2004, "ROUGE: A Package for Automatic Evaluation of Summaries"): how much of a
// reference text a candidate text reproduces, by n-grams (ROUGE-1, ROUGE-2) and by the
// longest common subsequence (ROUGE-L), as precision, recall and F1 (beta = 1).
//
//   ROUGE-N  matches = sum over n-grams g of min(count in candidate, count in reference);
//            recall = matches / reference n-grams, precision = matches / candidate n-grams.
//   ROUGE-L  the whole text as one sequence (Google's rouge-score "rougeL", not the
//            sentence-split "rougeLsum"): recall = LCS / reference words, precision =
//            LCS / candidate words.
//   F1       2 P R / (P + R), 0 when P + R is 0.
//
// Texts become words as Google's rouge-score does (lower case, no stemming, anything that is
// not a letter or digit separates words), extended past ASCII: see rouge_words().
// One convention differs from rouge-score, which scores 0 whenever a side has no n-grams:
// when neither side has any (two empty texts, or two one-word texts for ROUGE-2) the texts
// do not disagree and every figure is 1; when only one side has none, every figure is 0.

#include <string>
#include <string_view>
#include <vector>

namespace lr {

// The words of a UTF-8 text: maximal runs of letters, digits and combining marks (Unicode
// general categories L, N, M), lower-cased (Unicode simple case mapping). A character of a
// script written without spaces (Han ideographs, Hiragana, Katakana) is a word of its own.
// Everything else (spaces, punctuation, symbols, invalid bytes) separates words.
std::vector<std::string> rouge_words(std::string_view text);

struct RougeScore {
    double precision = 0;
    double recall = 0;
    double f1 = 0;
};

struct RougeScores {
    RougeScore rouge1;
    RougeScore rouge2;
    RougeScore rouge_l;
};

// The candidate scored against the reference.
RougeScores rouge(std::string_view candidate, std::string_view reference);

// ROUGE-N and ROUGE-L on word lists (what rouge() computes after rouge_words()).
RougeScore rouge_n(const std::vector<std::string> & candidate, const std::vector<std::string> & reference, size_t n);
RougeScore rouge_l(const std::vector<std::string> & candidate, const std::vector<std::string> & reference);

}  // namespace lr
