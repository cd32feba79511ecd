#pragma once
// Queries quantized for q.k against q8 K rows, as ggml quantizes Q for a Q8_0 K cache:
// per group of kv_codec_group(d) dims, a scale amax / 127 rounded to f16 and the values
// round(x * 127 / amax) as int8, so that a group's q.k is an exact integer sum times the
// two scales (the q8 codec's own formula, kv_codec_rows.cpp).
//
// Laid out for kernels that hold queries in lanes: dims 4c..4c+3 of query i are the four
// bytes at (c * lanes + i) * 4, so one 32-byte load gives eight queries' next four dims;
// scales and sums (of each group's values) are [group][lanes]. lanes is n_q rounded up to
// 8; the padding queries are zeros. The values are in [-127, 127].

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lr::cpu {

struct QueriesQ8 {
    uint32_t n_q = 0, lanes = 0, d = 0, group = 0;
    std::vector<int8_t> values;  // [d / 4][lanes][4]
    std::vector<float> scales;   // [d / group][lanes]
    std::vector<int32_t> sums;   // [d / group][lanes]

    // Quantizes q [n_q][d] (d a multiple of 8, as the q8 codec needs); keeps the memory.
    void quantize(const float * q, uint32_t n_q, uint32_t d);

    int8_t value(uint32_t i, uint32_t c) const { return values[(size_t(c / 4) * lanes + i) * 4 + c % 4]; }
    float scale(uint32_t i, uint32_t grp) const { return scales[size_t(grp) * lanes + i]; }
};

}  // namespace lr::cpu
