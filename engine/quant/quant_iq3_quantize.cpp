// The IQ3_XXS and IQ3_S quantizers without an importance matrix (ggml's
// quantize_row_iq3_xxs_ref and quantize_row_iq3_s_ref): each group of 4 magnitudes must be
// an entry of the IQ3 grid, so a trial scale maps the group to levels, and a group that
// falls off the grid takes the best of its nearest grid neighbours (precomputed, as ggml's
// iq3xs_init_impl does). Bit-exact with ggml: its operand order, its search order, and its
// quirks (noted where they matter).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "engine/common/assert.h"
#include "engine/common/fp16.h"
#include "engine/quant/quant_grids.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant::detail {
namespace {

constexpr int kMaxQ = 8;        // levels 0..7 stand for the odd magnitudes 1, 3, ..., 15
constexpr int kMapSize = 4096;  // every 4 x 3-bit level combination

// One IQ3 grid as the quantizer searches it. Entry k: levels level(k, i) of its 4 elements.
// map[u] for a level combination u (3 bits per element): the grid index when u is on the
// grid, else -(offset + 1) with neighbours[offset] = n, followed by the n grid indices
// nearest to u (all entries at the nwant smallest squared distances, in (distance, index)
// order).
class Iq3Grid {
public:
    Iq3Grid(GridKind kind, int grid_size, int nwant) : index_(grid_index_list(kind)), grid_size_(grid_size) {
        map_.assign(kMapSize, -1);
        for (int k = 0; k < grid_size; ++k) map_[index_[k]] = k;
        std::vector<std::pair<int, int>> dist2(static_cast<size_t>(grid_size));
        for (int u = 0; u < kMapSize; ++u) {
            if (map_[size_t(u)] >= 0) continue;
            for (int j = 0; j < grid_size; ++j) {
                int d2 = 0;
                for (int i = 0; i < 4; ++i) {
                    const int diff = 2 * (level(j, i) - ((u >> (3 * i)) & 7));  // in units of the odd magnitudes
                    d2 += diff * diff;
                }
                dist2[size_t(j)] = {d2, j};
            }
            std::sort(dist2.begin(), dist2.end());
            map_[size_t(u)] = -(int(neighbours_.size()) + 1);
            const size_t start = neighbours_.size();
            neighbours_.push_back(0);
            int d2 = dist2[0].first;
            int nhave = 1;
            for (const auto & [dist, j] : dist2) {
                if (dist > d2) {
                    if (nhave == nwant) break;
                    d2 = dist;
                    ++nhave;
                }
                neighbours_.push_back(uint16_t(j));
            }
            neighbours_[start] = uint16_t(neighbours_.size() - start - 1);
        }
    }

    int level(int k, int i) const { return (index_[k] >> (3 * i)) & 7; }
    // The grid index of level combination u, or -1 when it is off the grid.
    int find(int u) const { return map_[size_t(u)] >= 0 ? map_[size_t(u)] : -1; }

    // For an off-grid u: the neighbour minimizing sum w (scale * q - x)^2 (q the odd
    // magnitudes, first one on ties); its levels go to L. ggml's iq3_find_best_neighbour.
    int best_neighbour(int u, const float * xval, const float * w, float scale, int8_t * L) const {
        const uint16_t * nb = neighbours_.data() + (-map_[size_t(u)] - 1);
        float best_d2 = FLT_MAX;
        int grid_index = -1;
        for (int j = 1; j <= nb[0]; ++j) {
            float d2 = 0.0f;
            for (int i = 0; i < 4; ++i) {
                const float q = static_cast<float>(2 * level(nb[j], i) + 1);
                const float diff = scale * q - xval[i];
                d2 += w[i] * diff * diff;
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                grid_index = nb[j];
            }
        }
        LR_ASSERT(grid_index >= 0);
        for (int i = 0; i < 4; ++i) L[i] = static_cast<int8_t>(level(grid_index, i));
        return grid_index;
    }

private:
    const uint16_t * index_;
    int grid_size_;
    std::vector<int> map_;              // [4096]
    std::vector<uint16_t> neighbours_;  // n, then n grid indices, per off-grid combination
};

// Built on first use and never changed: both quantizers read it from any thread.
const Iq3Grid & iq3_grid(bool s_grid) {
    static const Iq3Grid xxs(GridKind::iq3xxs, 256, 2);
    static const Iq3Grid s(GridKind::iq3s, 512, 3);
    return s_grid ? s : xxs;
}

// The level combination of 4 elements at trial inverse scale id: l = round((id x - 1) / 2).
int levels_of(const float * xval, float id, int8_t * L) {
    int u = 0;
    for (int i = 0; i < 4; ++i) {
        const int l = std::clamp(nearest_int(0.5f * (id * xval[i] - 1)), 0, kMaxQ - 1);
        L[i] = static_cast<int8_t>(l);
        u |= l << (3 * i);
    }
    return u;
}

int levels_code(const int8_t * L) { return L[0] | (L[1] << 3) | (L[2] << 6) | (L[3] << 9); }

// The fit inputs of 32 elements: weights x^2 (and their roots, for the neighbour search),
// magnitudes, and sign bits (bit i of signs[k]: element 8k + i is negative).
struct SubBlock {
    float weight[32];
    float waux[32];
    float xval[32];
    uint8_t signs[4];
    float max = 0.0f;  // the largest xval
};

// even_signs (IQ3_XXS): only 7 sign bits per 8 are stored, the 8th making the count of
// negatives even; an odd count flips the least important element (smallest w x^2), whose
// magnitude is negated instead. NOTE: -0 keeps its sign in xval, as in ggml.
SubBlock split(const float * xb, bool even_signs) {
    SubBlock sb;
    for (int i = 0; i < 32; ++i) sb.weight[i] = xb[i] * xb[i];
    for (int i = 0; i < 32; ++i) sb.waux[i] = std::sqrt(sb.weight[i]);
    for (int k = 0; k < 4; ++k) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            sb.xval[8 * k + i] = v >= 0 ? v : -v;
            if (v < 0) {
                ++nflip;
                s = static_cast<uint8_t>(s | (1 << i));
            }
        }
        if (even_signs && nflip % 2) {
            int imin = 0;
            float min = sb.weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                const float ax = sb.weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            sb.xval[8 * k + imin] = -sb.xval[8 * k + imin];
            s = static_cast<uint8_t>(s ^ (1 << imin));
        }
        sb.signs[k] = even_signs ? s & 127 : s;
    }
    sb.max = sb.xval[0];
    for (int i = 1; i < 32; ++i) sb.max = std::max(sb.max, sb.xval[i]);
    return sb;
}

// The scale of 32 magnitudes xval (groups of 4 on the grid, levels in L): a search over
// trial scales max / (15 + 0.2 is), then the groups off the grid (all of them when
// `redo_all`) snapped to grid points at the best scale and the scale refitted.
// NOTE: IQ3_XXS tries is = -15..15 and starts with every group "on the grid"; IQ3_S tries
// -9..9, starts with none on it, and snaps all groups again. Both are ggml's choices.
float fit_scale(const Iq3Grid & grid, const SubBlock & sb, int is_range, bool start_on_grid, bool redo_all, int8_t * L) {
    const float * xval = sb.xval;
    const float * weight = sb.weight;
    const float * waux = sb.waux;
    const float max = sb.max;
    float best = 0.0f;
    float scale = max / (2 * kMaxQ - 1);
    bool on_grid[8];
    std::fill(on_grid, on_grid + 8, start_on_grid);
    int8_t Laux[32];
    for (int is = -is_range; is <= is_range; ++is) {
        const float id = (2 * kMaxQ - 1 + static_cast<float>(is) * 0.2f) / max;
        const float this_scale = 1 / id;
        bool on_grid_aux[8];
        for (int k = 0; k < 8; ++k) {
            const int u = levels_of(xval + 4 * k, id, Laux + 4 * k);
            on_grid_aux[k] = grid.find(u) >= 0;
            if (!on_grid_aux[k]) grid.best_neighbour(u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
        }
        float sumqx = 0.0f;
        float sumq2 = 0.0f;
        for (int i = 0; i < 32; ++i) {
            const float w = weight[i];
            const float q = static_cast<float>(2 * Laux[i] + 1);
            sumqx += w * xval[i] * q;
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, 32);
            std::copy(on_grid_aux, on_grid_aux + 8, on_grid);
        }
    }
    const bool any_off = std::find(on_grid, on_grid + 8, false) != on_grid + 8;
    if (any_off && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; ++k) {
            if (on_grid[k] && !redo_all) continue;
            int8_t Lk[4];
            const int u = levels_of(xval + 4 * k, id, Lk);
            int grid_index = grid.find(u);
            if (grid_index < 0) grid_index = grid.best_neighbour(u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
            for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>(grid.level(grid_index, i));
        }
        float sumqx = 0.0f;
        float sumq2 = 0.0f;
        for (int i = 0; i < 32; ++i) {
            const float w = weight[i];
            const float q = static_cast<float>(2 * L[i] + 1);
            sumqx += w * xval[i] * q;
            sumq2 += w * q * q;
        }
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return scale;
}

// 4-bit sub-block scale index: scale ~ d * (2l + 1).
int scale_index(float id, float scale) { return std::clamp(nearest_int(0.5f * (id * scale - 1)), 0, 15); }

}  // namespace

void quantize_row_iq3_xxs_ref(const float * x, block_iq3_xxs * y, size_t n) {
    const Iq3Grid & grid = iq3_grid(false);
    for (size_t ibl = 0; ibl < n / QK_K; ++ibl, x += QK_K) {
        uint8_t q3[3 * QK_K / 8] = {};
        uint32_t scales_and_signs[QK_K / 32] = {};
        float scales[QK_K / 32];
        float max_scale = 0.0f;
        y[ibl].d = fp32_to_fp16(0.f);
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            SubBlock sb = split(x + 32 * ib, true);
            if (sb.max < 1e-8f) {  // GROUP_MAX_EPS_IQ3_XXS: the sub-block stays all zero
                scales[ib] = 0;
                continue;
            }
            int8_t L[32] = {};
            float scale = fit_scale(grid, sb, 15, true, false, L);
            if (scale < 0) {
                scale = -scale;
                for (uint8_t & s : sb.signs) s = static_cast<uint8_t>(~s & 127);
            }
            for (int k = 0; k < 8; ++k) {
                const int grid_index = grid.find(levels_code(L + 4 * k));
                LR_ASSERT(grid_index >= 0);
                q3[8 * ib + k] = static_cast<uint8_t>(grid_index);
            }
            scales_and_signs[ib] = sb.signs[0] | (sb.signs[1] << 7) | (sb.signs[2] << 14) | (uint32_t(sb.signs[3]) << 21);
            scales[ib] = scale;
            max_scale = std::max(max_scale, scale);
        }
        if (max_scale == 0.0f) {
            std::memset(y[ibl].qs, 0, sizeof(y[ibl].qs));
            continue;
        }
        const float d = max_scale / 31;
        y[ibl].d = fp32_to_fp16(d * 1.0125f);  // ggml's fudge factor
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / 32; ++ib) scales_and_signs[ib] |= uint32_t(scale_index(id, scales[ib])) << 28;
        std::memcpy(y[ibl].qs, q3, QK_K / 4);
        std::memcpy(y[ibl].qs + QK_K / 4, scales_and_signs, sizeof(scales_and_signs));
    }
}

void quantize_row_iq3_s_ref(const float * x, block_iq3_s * y, size_t n) {
    const Iq3Grid & grid = iq3_grid(true);
    for (size_t ibl = 0; ibl < n / QK_K; ++ibl, x += QK_K) {
        block_iq3_s & b = y[ibl];
        std::memset(&b, 0, sizeof(b));
        // NOTE: ggml advances these two only past sub-blocks it quantizes, so an all-zero
        // sub-block shifts the grid bytes and signs of the later ones (qh is indexed by
        // position and does not shift). Kept, to write the same bytes.
        uint8_t * qs = b.qs;
        uint8_t * signs = b.signs;
        float scales[QK_K / 32];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            SubBlock sb = split(x + 32 * ib, false);
            if (sb.max == 0.0f) {
                scales[ib] = 0;
                continue;
            }
            int8_t L[32] = {};
            float scale = fit_scale(grid, sb, 9, false, true, L);
            if (scale < 0) {
                scale = -scale;
                for (uint8_t & s : sb.signs) s = static_cast<uint8_t>(~s);
            }
            for (int k = 0; k < 8; ++k) {
                const int grid_index = grid.find(levels_code(L + 4 * k));
                LR_ASSERT(grid_index >= 0);
                qs[k] = static_cast<uint8_t>(grid_index & 255);
                b.qh[(8 * ib + k) / 8] = static_cast<uint8_t>(b.qh[(8 * ib + k) / 8] | ((grid_index >> 8) << ((8 * ib + k) % 8)));
            }
            qs += 8;
            std::memcpy(signs, sb.signs, 4);
            signs += 4;
            scales[ib] = scale;
            max_scale = std::max(max_scale, scale);
        }
        if (max_scale == 0.0f) continue;
        const float d = max_scale / 31;
        b.d = fp32_to_fp16(d * 1.033f);  // ggml's fudge factor
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / 32; ib += 2) {
            b.scales[ib / 2] = static_cast<uint8_t>(scale_index(id, scales[ib]) | (scale_index(id, scales[ib + 1]) << 4));
        }
    }
}

}  // namespace lr::quant::detail
