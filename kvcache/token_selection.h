#pragma once
// Which cached positions survive, for one KV head of one layer: the heart of the lossy
// policies, as pure functions over the positions a head holds and their scores.
//
// Every policy keeps the attention sinks (the first `sinks` positions of the sequence,
// StreamingLLM) and a window of the most recent positions, and fills the rest of the
// budget with the highest-scoring positions:
//   h2o        score = attention mass accumulated over every query so far (H2O), per
//              query that has seen the position: the paper's sum favours old positions
//              for their age alone (measured in docs/BENCHMARKS.md)
//   snapkv     score = attention mass from the observation window at the end of the
//              prompt, max-pooled over neighbouring positions; the window is the recent part
//              (then h2o: h2o's score over the mass gathered from the window on)
//   streaming  no scored part: sinks + window
//   random     random scores: the baseline the others must beat
// Budgets are exact: a head never keeps more than `budget` positions, and keeps
// min(budget, held) of them.

#include <cstdint>
#include <span>
#include <vector>

namespace lr {

struct SelectionParams {
    uint32_t budget = 0;  // positions kept in all, sinks and window included
    uint32_t sinks = 0;   // positions < sinks are always kept
    uint32_t recent = 0;  // the `recent` most recent positions are kept
};

// keep[i] = whether slot i survives. positions[i] is the position slot i holds (kInvalidPos
// for an empty slot, never kept); scores[i] its score (higher survives first). Ties go to
// the more recent position.
void select_positions(std::span<const int32_t> positions, std::span<const float> scores, const SelectionParams & params,
                      std::vector<uint8_t> & keep);

// SnapKV's clustering: each score becomes the maximum of the scores of the `kernel`
// positions centred on it (kernel odd), over the slots in position order.
std::vector<float> max_pool_scores(std::span<const int32_t> positions, std::span<const float> scores, uint32_t kernel);

// H2O's score: each position's accumulated attention mass divided by the number of queries
// that have attended to it, the queries at positions max(p, first_query)..end-1 (mass is
// collected from first_query on: 0 for h2o, the observation window for snapkv then h2o).
std::vector<float> mean_attention_scores(std::span<const int32_t> positions, std::span<const float> mass, int32_t end,
                                         int32_t first_query = 0);

// Deterministic pseudo-random scores for the random baseline (seeded per layer and head).
std::vector<float> random_scores(size_t n, uint64_t seed);

}  // namespace lr
