#pragma once
// The walks shared by the AVX2 quantized kernels. Decode: rows read from the model file one
// at a time, for groups of tokens. Prefill: rows [r0, r1) in panels of `panel_rows` rows,
// each unpacked once into scratch (unpack(r, out): row r into its panel_row_bytes at out),
// then handed on in tiles of R rows (the last rows of a panel in tiles of 1):
// tiles.template operator()<N>(r, panel), panel[i] the unpacked row r + i.
// Include only from AVX2 translation units.

#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/matmul_kernels.h"

namespace lr::cpu::avx2 {

// Up to this many tokens (decode steps of a batch of sequences) a matmul reads each row
// straight from the model file, unpacks it once in registers and dots it with every token
// while it is there: unpacking panels into scratch costs more than it saves for so few
// tokens. Each token's sums run in the order they run for it alone, so its result is the
// one it gets alone.
constexpr int64_t kRowByRowTokens = 8;

template <int R, class Unpack, class Tiles>
void for_each_panel_tile(int64_t r0, int64_t r1, int64_t panel_rows, size_t panel_row_bytes, uint8_t * scratch, Unpack unpack,
                         Tiles tiles) {
    for (int64_t p0 = r0; p0 < r1; p0 += panel_rows) {
        const int64_t p1 = p0 + panel_rows < r1 ? p0 + panel_rows : r1;
        for (int64_t r = p0; r < p1; ++r) unpack(r, scratch + size_t(r - p0) * panel_row_bytes);
        int64_t r = p0;
        for (; r + R <= p1; r += R) {
            const uint8_t * panel[R];
            for (int i = 0; i < R; ++i) panel[i] = scratch + size_t(r - p0 + i) * panel_row_bytes;
            tiles.template operator()<R>(r, panel);
        }
        for (; r < p1; ++r) {
            const uint8_t * panel[1] = {scratch + size_t(r - p0) * panel_row_bytes};
            tiles.template operator()<1>(r, panel);
        }
    }
}

// The decode walk: rows [r0, r1) one at a time, the job's tokens in groups of up to 4:
// group.template operator()<N>(r, act, y), act[i] the activations of token t + i, y = &y[t][r].
template <class Group>
void for_each_row_token_group(const MatmulJob & job, int64_t r0, int64_t r1, Group group) {
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t t = 0; t < job.n_tokens; t += 4) {
            const uint8_t * act[4];
            const int64_t n = job.n_tokens - t < 4 ? job.n_tokens - t : 4;
            for (int64_t i = 0; i < n; ++i) act[i] = job.act + size_t(t + i) * job.act_row_bytes;
            float * y = job.y + t * job.y_stride + r;
            switch (n) {
                case 4: group.template operator()<4>(r, act, y); break;
                case 3: group.template operator()<3>(r, act, y); break;
                case 2: group.template operator()<2>(r, act, y); break;
                default: group.template operator()<1>(r, act, y); break;
            }
        }
    }
}

}  // namespace lr::cpu::avx2
