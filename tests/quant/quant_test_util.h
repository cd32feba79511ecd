#pragma once
// Helpers shared by the quantization tests: deterministic data, round trips, error measures.

#include <QString>
#include <QtGlobal>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/common/dtype.h"
#include "engine/quant/quant.h"

namespace lr::test {

inline DType type_named(const QString & name) {
    const auto type = dtype_from_name(name.toStdString());
    if (!type) qFatal("unknown type %s", qPrintable(name));
    return *type;
}

// A deterministic normal generator (splitmix64 + Box-Muller), the same on every platform.
class Normal {
public:
    explicit Normal(uint64_t seed) : state_(seed) {}
    float next(float sigma) {
        const double u1 = (static_cast<double>(next_u64() >> 11) + 0.5) / 9007199254740992.0;
        const double u2 = static_cast<double>(next_u64() >> 11) / 9007199254740992.0;
        return static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }

    uint64_t next_u64() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

private:
    uint64_t state_;
};

inline std::vector<uint8_t> quantized(DType type, const std::vector<float> & x) {
    std::vector<uint8_t> q(row_bytes(type, x.size()));
    quant::quantize_row(type, x.data(), q.data(), x.size());
    return q;
}

inline std::vector<float> dequantized(DType type, const void * q, size_t n) {
    std::vector<float> y(n);
    quant::dequantize_row(type, q, y.data(), n);
    return y;
}

// sqrt(sum (y - x)^2 / sum x^2); 0 when both are all zero.
inline double relative_rmse(const float * x, const float * y, size_t n) {
    double err = 0.0;
    double ref = 0.0;
    for (size_t i = 0; i < n; ++i) {
        err += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
        ref += static_cast<double>(x[i]) * x[i];
    }
    if (ref == 0.0) return err == 0.0 ? 0.0 : INFINITY;
    return std::sqrt(err / ref);
}

// n elements of `type` as random bytes, every fp16 scale set to a positive value in
// [2^-10, 2^-6) and every MXFP4 exponent in [112, 144): any bit pattern is a valid block.
template <class Rng>
std::vector<uint8_t> random_blocks(DType type, size_t n, Rng & rng) {
    std::vector<uint8_t> row(lr::row_bytes(type, n));
    for (uint8_t & b : row) b = static_cast<uint8_t>(rng.next_u64());
    const size_t block_bytes = dtype_traits(type).block_bytes;
    for (size_t at = 0; at < row.size(); at += block_bytes) {
        uint8_t * b = row.data() + at;
        const auto d = static_cast<uint16_t>(0x1400 + rng.next_u64() % 0x1000);
        switch (type) {
            case DType::MXFP4: b[0] = static_cast<uint8_t>(112 + rng.next_u64() % 32); break;
            case DType::TQ2_0: std::memcpy(b + 64, &d, 2); break;
            case DType::IQ1_M: {
                // d lives in the top nibbles of the four scale words.
                uint16_t sc[4];
                std::memcpy(sc, b + 48, 8);
                for (int k = 0; k < 4; ++k) sc[k] = static_cast<uint16_t>((sc[k] & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12));
                std::memcpy(b + 48, sc, 8);
                break;
            }
            default: std::memcpy(b, &d, 2); break;  // d first in every other block
        }
    }
    return row;
}

}  // namespace lr::test
