#pragma once
// Moving cached keys to other positions. Keys are stored after RoPE; rotations compose, so
// a key rotated for position p becomes the key for p + delta by one more rotation of
// delta. StreamingLLM's "positions assigned inside the cache" use it to renumber the kept
// window when generation runs past the trained context.

#include <cstdint>
#include <vector>

#include "engine/backend/backend.h"

namespace lr {

struct RopeShiftParams {
    RopeMode mode = RopeMode::normal;
    uint32_t n_rot = 0;
    uint32_t head_dim = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    std::vector<float> freq_factors;  // [n_rot / 2], empty when the model has none
};

// Rotates one head's key row (head_dim values) by `delta` positions.
void rope_shift_row(float * k, int32_t delta, const RopeShiftParams & p);

}  // namespace lr
