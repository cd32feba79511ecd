#pragma once
// The prefill chunk: how many tokens of a prompt one ubatch takes. Larger chunks read the
// weights fewer times per token (faster); smaller ones let Stop and the progress bar act
// sooner. SessionOptions::chunk_tokens is a fixed size, or kAutoChunk: each prompt is read
// in chunks of max(64, length / 16) tokens (the starting design's rule), at most what the
// machine reads in a quarter of a second at the rate measured on the chunks before (so a
// fast machine takes long prompts in big chunks and a slow one keeps Stop responsive), and
// at most 512 (measured in docs/BENCHMARKS.md).

#include <cstdint>

namespace lr {

inline constexpr uint32_t kAutoChunk = 0;  // chunk_tokens: from each prompt's length and the rate

struct AutoChunkBounds {
    uint32_t min_tokens = 0;
    uint32_t max_tokens = 0;
    double seconds = 0;  // the time one chunk should take at most (above the floor)
};
AutoChunkBounds auto_chunk_bounds();

// The chunk a prompt of n_prompt tokens is read in under `chunk_tokens` (a fixed size, or
// kAutoChunk). tokens_per_second: the rate measured on the chunks read before (0: none
// yet, the floor).
uint32_t prefill_chunk(uint32_t chunk_tokens, uint32_t n_prompt, double tokens_per_second = 0);
// The most tokens one chunk takes under `chunk_tokens`: what a graph's scratch is sized for.
uint32_t chunk_capacity(uint32_t chunk_tokens);

}  // namespace lr
