#include "engine/backend/cpu/queries_q8.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/kv_block_layout.h"
#include "engine/common/assert.h"
#include "engine/common/fp16.h"

namespace lr::cpu {

void QueriesQ8::quantize(const float * q, uint32_t n, uint32_t dims) {
    n_q = n;
    d = dims;
    group = kv_codec_group(d);
    LR_ASSERT(d % group == 0 && group % 4 == 0);
    lanes = (n_q + 7) / 8 * 8;
    const uint32_t n_groups = d / group;
    values.assign(size_t(d) * lanes, 0);
    scales.assign(size_t(n_groups) * lanes, 0.0f);
    sums.assign(size_t(n_groups) * lanes, 0);
    for (uint32_t i = 0; i < n_q; ++i) {
        const float * x = q + size_t(i) * d;
        for (uint32_t grp = 0; grp < n_groups; ++grp) {
            const uint32_t at = grp * group;
            float amax = 0.0f;
            for (uint32_t c = at; c < at + group; ++c) amax = std::max(amax, std::fabs(x[c]));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            int32_t sum = 0;
            for (uint32_t c = at; c < at + group; ++c) {
                const auto v = static_cast<int8_t>(std::nearbyint(x[c] * id));
                values[(size_t(c / 4) * lanes + i) * 4 + c % 4] = v;
                sum += v;
            }
            scales[size_t(grp) * lanes + i] = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
            sums[size_t(grp) * lanes + i] = sum;
        }
    }
}

}  // namespace lr::cpu
