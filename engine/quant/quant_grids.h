#pragma once
// The lookup tables of the i-quants (ggml-common.h), shared by the scalar reference, the
// quantizers and the SIMD kernels. Entry k of an 8-element grid is 8 bytes, element i in
// byte i (little-endian uint64); the IQ3 grids hold 4 elements in a uint32 the same way.
// Magnitudes: iq2xxs/iq2xs/iq2s_grid bytes are 8, 25 or 43; iq3xxs_grid 4..62; iq3s_grid
// the odd numbers 1..15; iq1s_grid bytes are int8 -1, 0 or 1.

#include <cstdint>

namespace lr::quant {

extern const uint64_t * const iq2xxs_grid;  // [256]
extern const uint64_t * const iq2xs_grid;   // [512]
extern const uint64_t * const iq2s_grid;    // [1024]
extern const uint64_t * const iq1s_grid;    // [2048]
extern const uint32_t * const iq3xxs_grid;  // [256]
extern const uint32_t * const iq3s_grid;    // [512]

// ksigns_iq2xs[i] (i < 128): bit j set = element j of a group of 8 is negative. Bits 0..6
// are i; bit 7 makes the number of negative elements even (IQ2_XXS, IQ2_XS, IQ3_XXS store
// only 7 sign bits per 8 elements).
extern const uint8_t * const ksigns_iq2xs;  // [128]

// The grids as the quantizers search them: entry k's level l_i of element i (0..2 for the
// 8-element grids, 0..7 for IQ3) packed as l_i << (bits * i), the list sorted ascending.
enum class GridKind { iq2xxs, iq2xs, iq2s, iq1s, iq3xxs, iq3s };
const uint16_t * grid_index_list(GridKind kind);

}  // namespace lr::quant
