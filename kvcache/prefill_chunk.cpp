#include "engine/api/prefill_chunk.h"

#include <algorithm>

namespace lr {

AutoChunkBounds auto_chunk_bounds() {
    // 64: the starting design's floor (fewer tokens per chunk re-read the weights for too
    // little work). The upper bound is the largest chunk that stays well under the half second
    // within which Stop must act on a 0.5B Q4_0 model on the 2-core build machine: 64 tokens
    // take about 0.37 s there, 128 about 0.75 s (docs/BENCHMARKS.md, "Automatic prefill
    // chunk"), so on such a machine the bound is the floor itself.
    return {.min_tokens = 64, .max_tokens = 64};
}

uint32_t prefill_chunk(uint32_t chunk_tokens, uint32_t n_prompt) {
    if (chunk_tokens != kAutoChunk) return chunk_tokens;
    const AutoChunkBounds b = auto_chunk_bounds();
    return std::min(std::max(n_prompt / 16, b.min_tokens), b.max_tokens);
}

uint32_t chunk_capacity(uint32_t chunk_tokens) { return chunk_tokens == kAutoChunk ? auto_chunk_bounds().max_tokens : chunk_tokens; }

}  // namespace lr
