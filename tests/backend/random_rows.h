#pragma once
// Deterministic random data for the backend tests (splitmix64 + Box-Muller).

#include <cmath>
#include <cstdint>
#include <vector>

namespace lr::test {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next_u64() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return (double(next_u64() >> 11) + 0.5) / 9007199254740992.0; }
    float normal(float sigma = 1.0f) {
        return float(sigma * std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()));
    }
    // Normal values with occasional outliers, exact zeros and repeated magnitudes, which
    // exercise the max search and ties of the quantizers.
    std::vector<float> activations(size_t n, float sigma = 1.0f) {
        std::vector<float> x(n);
        for (size_t i = 0; i < n; ++i) {
            const uint64_t r = next_u64() % 64;
            x[i] = r == 0 ? 0.0f : r == 1 ? 8.0f * normal(sigma) : normal(sigma);
            if (r == 2 && i > 0) x[i] = -x[i - 1];
        }
        return x;
    }

private:
    uint64_t state_;
};

}  // namespace lr::test
