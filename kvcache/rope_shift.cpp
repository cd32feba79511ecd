#include "rope_shift.h"

#include <cmath>

namespace lr {

void rope_shift_row(float * k, int32_t delta, const RopeShiftParams & p) {
    const double theta_scale = std::pow(double(p.freq_base), -2.0 / double(p.n_rot));
    double theta = double(delta);
    for (uint32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
        const double ff = p.freq_factors.empty() ? 1.0 : double(p.freq_factors[i0 / 2]);
        const double angle = double(p.freq_scale) * theta / ff;
        const float c = float(std::cos(angle)), s = float(std::sin(angle));
        const uint32_t a = p.mode == RopeMode::normal ? i0 : i0 / 2;
        const uint32_t b = p.mode == RopeMode::normal ? i0 + 1 : i0 / 2 + p.n_rot / 2;
        const float x0 = k[a], x1 = k[b];
        k[a] = x0 * c - x1 * s;
        k[b] = x0 * s + x1 * c;
        theta *= theta_scale;
    }
}

}  // namespace lr
