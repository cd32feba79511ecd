#pragma once
// The work of causal_conv.cu's kernels, shared with the host emulation of the tests: the
// causal depthwise convolution of one (token, channel) followed by SiLU, and the shift of a
// channel's state (Backend::causal_conv_silu), in the CPU's order of operations.

#include <cstdint>

#include "engine/backend/cuda/device_util.cuh"
#include "engine/backend/cuda/gates.cuh"

namespace lr::cuda::conv {

struct Args {
    const float * x = nullptr;       // [n_tokens][n_channels]
    const float * kernel = nullptr;  // [n_channels][width]
    float * state = nullptr;         // [n_channels][width - 1]: the channel's last inputs, oldest first
    float * out = nullptr;           // [n_tokens][n_channels]
    int64_t n_tokens = 0;
    int64_t n_channels = 0;
    int64_t width = 0;
};

// Element i of channel c's window: its state, then the ubatch's inputs.
LR_HD float window_at(const Args & a, int64_t c, int64_t i) {
    const int64_t kept = a.width - 1;
    return i < kept ? a.state[c * kept + i] : a.x[(i - kept) * a.n_channels + c];
}

// out[t][c] = silu(sum_i window[c][t + i] * kernel[c][i]), summed from i = 0 in float. Reads
// the state as it was before the ubatch: shift_state runs after every output.
LR_HD void conv_one(const Args & a, int64_t t, int64_t c) {
    const float * wc = a.kernel + c * a.width;
    float sum = 0.0f;
    for (int64_t i = 0; i < a.width; ++i) sum = add_rn(sum, mul_rn(window_at(a, c, t + i), wc[i]));
    // The CPU's SiLU is swiglu against ones over rows of n_channels: silu(sum) * 1.
    a.out[t * a.n_channels + c] = silu_of_column(sum, c, a.n_channels);
}

// state[c] = the channel's last width - 1 inputs. In place: entry j reads entry j + n_tokens
// (or an input), which no lower entry has overwritten yet.
LR_HD void shift_state(const Args & a, int64_t c) {
    const int64_t kept = a.width - 1;
    for (int64_t j = 0; j < kept; ++j) a.state[c * kept + j] = window_at(a, c, a.n_tokens + j);
}

}  // namespace lr::cuda::conv
