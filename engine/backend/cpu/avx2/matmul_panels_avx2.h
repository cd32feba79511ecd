#pragma once
// The prefill walk shared by the AVX2 quantized kernels: rows [r0, r1) in panels of
// `panel_rows` rows, each unpacked once into scratch (unpack(r, out): row r into its
// panel_row_bytes at out), then handed on in tiles of R rows (the last tile of a panel
// may have 1): tiles.template operator()<N>(r, panel), panel[i] the unpacked row r + i.
// Include only from AVX2 translation units.

#include <cstddef>
#include <cstdint>

namespace lr::cpu::avx2 {

// Up to this many tokens (decode steps of a batch of sequences) a matmul takes the
// one-token kernel for each token, each row read from memory once and dotted with every
// token while it is in L1: unpacking panels costs more than it saves for so few tokens,
// and each token's result is the one it gets alone.
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
        if (r < p1) {
            const uint8_t * panel[1] = {scratch + size_t(r - p0) * panel_row_bytes};
            tiles.template operator()<1>(r, panel);
        }
    }
}

}  // namespace lr::cpu::avx2
