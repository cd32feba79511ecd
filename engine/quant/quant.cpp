// The DType dispatch of quant.h onto the per-type reference functions.

#include "engine/quant/quant.h"

#include "engine/common/assert.h"
#include "engine/quant/quant_internal.h"

namespace lr::quant {
namespace {

void check_row(DType type, size_t n) {
    LR_ASSERT(can_dequantize(type));
    LR_ASSERT(n % dtype_traits(type).block_elems == 0);
}

template <class Block>
const Block * as(const void * p) {
    return static_cast<const Block *>(p);
}

}  // namespace

bool can_dequantize(DType type) {
    switch (type) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
        case DType::Q8_1:
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::Q8_K:
        case DType::IQ4_NL:
        case DType::IQ2_XXS:
        case DType::IQ2_XS:
        case DType::IQ2_S:
        case DType::IQ3_XXS:
        case DType::IQ3_S:
        case DType::IQ1_S:
        case DType::IQ1_M:
        case DType::IQ4_XS:
        case DType::TQ2_0:
        case DType::MXFP4: return true;
        default: return false;
    }
}

bool needs_importance_matrix(DType type) {
    switch (type) {
        case DType::IQ2_XXS:
        case DType::IQ2_XS:
        case DType::IQ2_S:
        case DType::IQ1_S:
        case DType::IQ1_M: return true;
        default: return false;
    }
}

bool can_quantize(DType type) { return can_dequantize(type) && !needs_importance_matrix(type); }

void quantize_activations(DType vec_dot_type, const float * src, void * dst, size_t n) {
    check_row(vec_dot_type, n);
    switch (vec_dot_type) {
        case DType::Q8_0: return detail::quantize_row_q8_0_x86(src, static_cast<block_q8_0 *>(dst), n);
        case DType::Q8_1: return detail::quantize_row_q8_1_x86(src, static_cast<block_q8_1 *>(dst), n);
        default: return quantize_row(vec_dot_type, src, dst, n);
    }
}

void dequantize_row(DType type, const void * src, float * dst, size_t n) {
    check_row(type, n);
    using namespace detail;
    switch (type) {
        case DType::F32: {
            const auto * x = static_cast<const float *>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = x[i];
            return;
        }
        case DType::F16: return dequantize_row_f16(static_cast<const uint16_t *>(src), dst, n);
        case DType::BF16: return dequantize_row_bf16(static_cast<const uint16_t *>(src), dst, n);
        case DType::Q4_0: return dequantize_row_q4_0(static_cast<const block_q4_0 *>(src), dst, n);
        case DType::Q4_1: return dequantize_row_q4_1(static_cast<const block_q4_1 *>(src), dst, n);
        case DType::Q5_0: return dequantize_row_q5_0(static_cast<const block_q5_0 *>(src), dst, n);
        case DType::Q5_1: return dequantize_row_q5_1(static_cast<const block_q5_1 *>(src), dst, n);
        case DType::Q8_0: return dequantize_row_q8_0(static_cast<const block_q8_0 *>(src), dst, n);
        case DType::Q8_1: return dequantize_row_q8_1(static_cast<const block_q8_1 *>(src), dst, n);
        case DType::Q2_K: return dequantize_row_q2_K(static_cast<const block_q2_K *>(src), dst, n);
        case DType::Q3_K: return dequantize_row_q3_K(static_cast<const block_q3_K *>(src), dst, n);
        case DType::Q4_K: return dequantize_row_q4_K(static_cast<const block_q4_K *>(src), dst, n);
        case DType::Q5_K: return dequantize_row_q5_K(static_cast<const block_q5_K *>(src), dst, n);
        case DType::Q6_K: return dequantize_row_q6_K(static_cast<const block_q6_K *>(src), dst, n);
        case DType::Q8_K: return dequantize_row_q8_K(static_cast<const block_q8_K *>(src), dst, n);
        case DType::IQ4_NL: return dequantize_row_iq4_nl(static_cast<const block_iq4_nl *>(src), dst, n);
        case DType::IQ2_XXS: return dequantize_row_iq2_xxs(as<block_iq2_xxs>(src), dst, n);
        case DType::IQ2_XS: return dequantize_row_iq2_xs(as<block_iq2_xs>(src), dst, n);
        case DType::IQ2_S: return dequantize_row_iq2_s(as<block_iq2_s>(src), dst, n);
        case DType::IQ3_XXS: return dequantize_row_iq3_xxs(as<block_iq3_xxs>(src), dst, n);
        case DType::IQ3_S: return dequantize_row_iq3_s(as<block_iq3_s>(src), dst, n);
        case DType::IQ1_S: return dequantize_row_iq1_s(as<block_iq1_s>(src), dst, n);
        case DType::IQ1_M: return dequantize_row_iq1_m(as<block_iq1_m>(src), dst, n);
        case DType::IQ4_XS: return dequantize_row_iq4_xs(as<block_iq4_xs>(src), dst, n);
        case DType::TQ2_0: return dequantize_row_tq2_0(as<block_tq2_0>(src), dst, n);
        case DType::MXFP4: return dequantize_row_mxfp4(as<block_mxfp4>(src), dst, n);
        default: LR_ASSERT(false && "dequantize_row: unsupported type");
    }
}

void quantize_row(DType type, const float * src, void * dst, size_t n) {
    check_row(type, n);
    LR_ASSERT(can_quantize(type));
    using namespace detail;
    switch (type) {
        case DType::F32: {
            auto * y = static_cast<float *>(dst);
            for (size_t i = 0; i < n; ++i) y[i] = src[i];
            return;
        }
        case DType::F16: return quantize_row_f16(src, static_cast<uint16_t *>(dst), n);
        case DType::BF16: return quantize_row_bf16(src, static_cast<uint16_t *>(dst), n);
        case DType::Q4_0: return quantize_row_q4_0_ref(src, static_cast<block_q4_0 *>(dst), n);
        case DType::Q4_1: return quantize_row_q4_1_ref(src, static_cast<block_q4_1 *>(dst), n);
        case DType::Q5_0: return quantize_row_q5_0_ref(src, static_cast<block_q5_0 *>(dst), n);
        case DType::Q5_1: return quantize_row_q5_1_ref(src, static_cast<block_q5_1 *>(dst), n);
        case DType::Q8_0: return quantize_row_q8_0_ref(src, static_cast<block_q8_0 *>(dst), n);
        case DType::Q8_1: return quantize_row_q8_1_ref(src, static_cast<block_q8_1 *>(dst), n);
        case DType::Q2_K: return quantize_row_q2_K_ref(src, static_cast<block_q2_K *>(dst), n);
        case DType::Q3_K: return quantize_row_q3_K_ref(src, static_cast<block_q3_K *>(dst), n);
        case DType::Q4_K: return quantize_row_q4_K_ref(src, static_cast<block_q4_K *>(dst), n);
        case DType::Q5_K: return quantize_row_q5_K_ref(src, static_cast<block_q5_K *>(dst), n);
        case DType::Q6_K: return quantize_row_q6_K_ref(src, static_cast<block_q6_K *>(dst), n);
        case DType::Q8_K: return quantize_row_q8_K_ref(src, static_cast<block_q8_K *>(dst), n);
        case DType::IQ4_NL: return quantize_row_iq4_nl_ref(src, static_cast<block_iq4_nl *>(dst), n);
        case DType::IQ3_XXS: return quantize_row_iq3_xxs_ref(src, static_cast<block_iq3_xxs *>(dst), n);
        case DType::IQ3_S: return quantize_row_iq3_s_ref(src, static_cast<block_iq3_s *>(dst), n);
        case DType::IQ4_XS: return quantize_row_iq4_xs_ref(src, static_cast<block_iq4_xs *>(dst), n);
        case DType::TQ2_0: return quantize_row_tq2_0_ref(src, static_cast<block_tq2_0 *>(dst), n);
        case DType::MXFP4: return quantize_row_mxfp4_ref(src, static_cast<block_mxfp4 *>(dst), n);
        default: LR_ASSERT(false && "quantize_row: unsupported type");
    }
}

DType vec_dot_type(DType type) {
    switch (type) {
        case DType::F32: return DType::F32;
        case DType::F16: return DType::F16;
        case DType::BF16: return DType::BF16;
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q8_0:
        case DType::IQ4_NL:
        case DType::MXFP4: return DType::Q8_0;
        case DType::Q4_1:
        case DType::Q5_1: return DType::Q8_1;
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::IQ2_XXS:
        case DType::IQ2_XS:
        case DType::IQ2_S:
        case DType::IQ3_XXS:
        case DType::IQ3_S:
        case DType::IQ1_S:
        case DType::IQ1_M:
        case DType::IQ4_XS:
        case DType::TQ2_0: return DType::Q8_K;
        default: LR_ASSERT(false && "vec_dot_type: no dot product for this type"); return DType::F32;
    }
}

float vec_dot(DType type, size_t n, const void * w, const void * a) {
    check_row(type, n);
    using namespace detail;
    switch (type) {
        case DType::F32: return vec_dot_f32(n, static_cast<const float *>(w), static_cast<const float *>(a));
        case DType::F16: return vec_dot_f16(n, static_cast<const uint16_t *>(w), static_cast<const uint16_t *>(a));
        case DType::BF16: return vec_dot_bf16(n, static_cast<const uint16_t *>(w), static_cast<const uint16_t *>(a));
        case DType::Q4_0: return vec_dot_q4_0_q8_0(n, static_cast<const block_q4_0 *>(w), static_cast<const block_q8_0 *>(a));
        case DType::Q4_1: return vec_dot_q4_1_q8_1(n, static_cast<const block_q4_1 *>(w), static_cast<const block_q8_1 *>(a));
        case DType::Q5_0: return vec_dot_q5_0_q8_0(n, static_cast<const block_q5_0 *>(w), static_cast<const block_q8_0 *>(a));
        case DType::Q5_1: return vec_dot_q5_1_q8_1(n, static_cast<const block_q5_1 *>(w), static_cast<const block_q8_1 *>(a));
        case DType::Q8_0: return vec_dot_q8_0_q8_0(n, static_cast<const block_q8_0 *>(w), static_cast<const block_q8_0 *>(a));
        case DType::IQ4_NL: return vec_dot_iq4_nl_q8_0(n, static_cast<const block_iq4_nl *>(w), static_cast<const block_q8_0 *>(a));
        case DType::Q2_K: return vec_dot_q2_K_q8_K(n, static_cast<const block_q2_K *>(w), static_cast<const block_q8_K *>(a));
        case DType::Q3_K: return vec_dot_q3_K_q8_K(n, static_cast<const block_q3_K *>(w), static_cast<const block_q8_K *>(a));
        case DType::Q4_K: return vec_dot_q4_K_q8_K(n, static_cast<const block_q4_K *>(w), static_cast<const block_q8_K *>(a));
        case DType::Q5_K: return vec_dot_q5_K_q8_K(n, static_cast<const block_q5_K *>(w), static_cast<const block_q8_K *>(a));
        case DType::Q6_K: return vec_dot_q6_K_q8_K(n, static_cast<const block_q6_K *>(w), static_cast<const block_q8_K *>(a));
        case DType::IQ2_XXS: return vec_dot_iq2_xxs_q8_K(n, as<block_iq2_xxs>(w), as<block_q8_K>(a));
        case DType::IQ2_XS: return vec_dot_iq2_xs_q8_K(n, as<block_iq2_xs>(w), as<block_q8_K>(a));
        case DType::IQ2_S: return vec_dot_iq2_s_q8_K(n, as<block_iq2_s>(w), as<block_q8_K>(a));
        case DType::IQ3_XXS: return vec_dot_iq3_xxs_q8_K(n, as<block_iq3_xxs>(w), as<block_q8_K>(a));
        case DType::IQ3_S: return vec_dot_iq3_s_q8_K(n, as<block_iq3_s>(w), as<block_q8_K>(a));
        case DType::IQ1_S: return vec_dot_iq1_s_q8_K(n, as<block_iq1_s>(w), as<block_q8_K>(a));
        case DType::IQ1_M: return vec_dot_iq1_m_q8_K(n, as<block_iq1_m>(w), as<block_q8_K>(a));
        case DType::IQ4_XS: return vec_dot_iq4_xs_q8_K(n, as<block_iq4_xs>(w), as<block_q8_K>(a));
        case DType::TQ2_0: return vec_dot_tq2_0_q8_K(n, as<block_tq2_0>(w), as<block_q8_K>(a));
        case DType::MXFP4: return vec_dot_mxfp4_q8_0(n, as<block_mxfp4>(w), as<block_q8_0>(a));
        default: LR_ASSERT(false && "vec_dot: no dot product for this type"); return 0.0f;
    }
}

}  // namespace lr::quant
