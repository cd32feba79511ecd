#pragma once
// The walks shared by the AVX2 and AVX-512 quantized kernels. Decode: rows read from the
// model file one at a time, for groups of tokens. Prefill: rows [r0, r1) in panels with the
// rows in a register's lanes, each unpacked once into scratch, then tiles of tokens over
// the panel. Include only from AVX2 (or AVX-512) translation units.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/avx2/avx2_util.h"
#include "engine/backend/cpu/matmul_kernels.h"

namespace lr::cpu::avx2 {

// Up to this many tokens (decode steps of a batch of sequences) a matmul reads each row
// straight from the model file, unpacks it once in registers and dots it with every token
// while it is there: unpacking panels into scratch costs more than it saves for so few
// tokens. Each token's sums run in the order they run for it alone, so its result is the
// one it gets alone.
constexpr int64_t kRowByRowTokens = 8;

// Asks for the cache lines of [p, p + n): a weight row read next is a new stream for the
// hardware prefetcher.
inline void prefetch_bytes(const void * p, size_t n) {
    for (size_t at = 0; at < n; at += 64) _mm_prefetch(static_cast<const char *>(p) + at, _MM_HINT_T0);
}

// tile.template operator()<m>(args...) for a run-time m in [1, Tn].
template <int Tn, class Tile, class... Args>
void tile_of(int m, Tile & tile, Args... args) {
    if constexpr (Tn > 1) {
        if (m < Tn) return tile_of<Tn - 1>(m, tile, args...);
    }
    tile.template operator()<Tn>(args...);
}

// The prefill walk of the lanes = rows kernels, whose registers hold the same columns of
// Rows weight rows: rows [r0, r1) in panels of Rows (unpack(p0, n) fills the panel with rows
// p0 .. p0 + n), then the job's tokens in tiles of up to Tokens:
// tile.template operator()<Tn>(act, y, n), act[i] the activations of token t + i,
// y = &y[t][p0], n the panel's rows.
template <int64_t Rows, int Tokens, class Unpack, class Tile>
void for_each_lane_panel(const MatmulJob & job, int64_t r0, int64_t r1, Unpack unpack, Tile tile) {
    for (int64_t p0 = r0; p0 < r1; p0 += Rows) {
        const int n = int(min_i64(Rows, r1 - p0));
        unpack(p0, int64_t(n));
        const uint8_t * act[Tokens];
        for (int64_t t = 0; t < job.n_tokens; t += Tokens) {
            const int m = int(min_i64(Tokens, job.n_tokens - t));
            for (int i = 0; i < m; ++i) act[i] = job.act + size_t(t + i) * job.act_row_bytes;
            tile_of<Tokens>(m, tile, static_cast<const uint8_t * const *>(act), job.y + t * job.y_stride + p0, n);
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
            const int64_t n = min_i64(4, job.n_tokens - t);
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
