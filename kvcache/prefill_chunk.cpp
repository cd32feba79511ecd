#include "engine/api/prefill_chunk.h"

#include <algorithm>

namespace lr {

AutoChunkBounds auto_chunk_bounds() {
    // 64: the starting design's floor (fewer tokens per chunk re-read the weights for too
    // little work). 512: llama.cpp's ubatch, past which bigger chunks gain nothing on a CPU.
    // A quarter of a second per chunk keeps Stop and the progress bar well within the half
    // second a user notices (docs/BENCHMARKS.md, "Automatic prefill chunk").
    return {.min_tokens = 64, .max_tokens = 512, .seconds = 0.25};
}

uint32_t prefill_chunk(uint32_t chunk_tokens, uint32_t n_prompt, double tokens_per_second) {
    if (chunk_tokens != kAutoChunk) return chunk_tokens;
    const AutoChunkBounds b = auto_chunk_bounds();
    // What fits the time, in steps of 32 tokens (the KV block) so the chunk does not jitter.
    const double fits = tokens_per_second * b.seconds;
    const uint32_t in_time = fits >= b.max_tokens ? b.max_tokens : uint32_t(fits) / 32 * 32;
    const uint32_t bound = std::clamp(in_time, b.min_tokens, b.max_tokens);
    return std::min(std::max(n_prompt / 16, b.min_tokens), bound);
}

uint32_t chunk_capacity(uint32_t chunk_tokens) { return chunk_tokens == kAutoChunk ? auto_chunk_bounds().max_tokens : chunk_tokens; }

}  // namespace lr
