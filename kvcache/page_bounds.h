#pragma once
// Quest's page bound: the largest score q.k any key within [min, max] per channel can reach,
// the positive part of q against the maxima and the negative part against the minima. For
// one page and the `group` query heads of its KV head (q_pos, q_neg: [group][d], the parts
// of the queries; min, max: [d] halves), into out[group]. It runs for every page at every
// decode step: on x86 with AVX2, FMA and F16C eight channels at a time; the portable one is
// its oracle.

#include <cstdint>

namespace lr {

void page_bounds_portable(const float * q_pos, const float * q_neg, uint32_t group, const uint16_t * min, const uint16_t * max, uint32_t d,
                          float * out);
#if defined(__x86_64__) && defined(__GNUC__)
void page_bounds_avx2(const float * q_pos, const float * q_neg, uint32_t group, const uint16_t * min, const uint16_t * max, uint32_t d,
                      float * out);
#endif

using PageBounds = decltype(&page_bounds_portable);
// The fastest this CPU runs.
PageBounds best_page_bounds();

}  // namespace lr
