// The scalar matmul kernels: quant::vec_dot and float_dot.h, one dot product per output.
// They are the oracle the SIMD kernels are tested against, and the fallback on CPUs
// without a SIMD ISA.

#include <cstring>

#include "engine/backend/cpu/float_dot.h"
#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/quant/quant.h"

namespace lr::cpu {
namespace {

template <DType W>
struct Scalar {
    static DType act_type() { return quant::vec_dot_type(W); }
    static size_t act_row_bytes(int64_t n_cols) { return (row_bytes(act_type(), size_t(n_cols)) + 63) / 64 * 64; }
    static void convert_act(const float * x, int64_t n_cols, uint8_t * dst) {
        quant::quantize_activations(act_type(), x, dst, size_t(n_cols));
    }
    static void act_to_standard(const uint8_t * act, int64_t n_cols, void * dst) {
        std::memcpy(dst, act, row_bytes(act_type(), size_t(n_cols)));
    }
    static size_t scratch_bytes(int64_t, int64_t, int64_t) { return 0; }

    static float dot(const MatmulJob & job, const uint8_t * w, const uint8_t * a, DotOrder order) {
        const size_t n = size_t(job.n_cols);
        if constexpr (W == DType::F32) {
            return dot_f32(n, reinterpret_cast<const float *>(w), reinterpret_cast<const float *>(a), order);
        } else if constexpr (W == DType::F16) {
            return dot_f16(n, reinterpret_cast<const uint16_t *>(w), reinterpret_cast<const uint16_t *>(a), order);
        } else if constexpr (W == DType::BF16) {
            return dot_bf16(n, reinterpret_cast<const uint16_t *>(w), reinterpret_cast<const uint16_t *>(a), order);
        } else {
            (void)order;
            return quant::vec_dot(W, n, w, a);
        }
    }

    static void rows(const MatmulJob & job, int64_t r0, int64_t r1, uint8_t *) {
        const DotOrder order = W == DType::BF16 ? dot_order_bf16(job.n_tokens, size_t(job.n_cols))
                                                : dot_order(job.n_tokens, size_t(job.n_cols));
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t * w = job.w + size_t(r) * job.w_row_bytes;
            for (int64_t t = 0; t < job.n_tokens; ++t) {
                job.y[t * job.y_stride + r] = dot(job, w, job.act + size_t(t) * job.act_row_bytes, order);
            }
        }
    }

    static constexpr MatmulKernel kernel{act_row_bytes, convert_act, act_to_standard, scratch_bytes, rows};
};

}  // namespace

const MatmulKernel * scalar_matmul_kernel(DType type) {
    switch (type) {
        case DType::F32: return &Scalar<DType::F32>::kernel;
        case DType::F16: return &Scalar<DType::F16>::kernel;
        case DType::BF16: return &Scalar<DType::BF16>::kernel;
        case DType::Q4_0: return &Scalar<DType::Q4_0>::kernel;
        case DType::Q4_1: return &Scalar<DType::Q4_1>::kernel;
        case DType::Q5_0: return &Scalar<DType::Q5_0>::kernel;
        case DType::Q5_1: return &Scalar<DType::Q5_1>::kernel;
        case DType::Q8_0: return &Scalar<DType::Q8_0>::kernel;
        case DType::Q2_K: return &Scalar<DType::Q2_K>::kernel;
        case DType::Q3_K: return &Scalar<DType::Q3_K>::kernel;
        case DType::Q4_K: return &Scalar<DType::Q4_K>::kernel;
        case DType::Q5_K: return &Scalar<DType::Q5_K>::kernel;
        case DType::Q6_K: return &Scalar<DType::Q6_K>::kernel;
        case DType::IQ4_NL: return &Scalar<DType::IQ4_NL>::kernel;
        case DType::IQ4_XS: return &Scalar<DType::IQ4_XS>::kernel;
        case DType::IQ3_XXS: return &Scalar<DType::IQ3_XXS>::kernel;
        case DType::IQ3_S: return &Scalar<DType::IQ3_S>::kernel;
        case DType::IQ2_XXS: return &Scalar<DType::IQ2_XXS>::kernel;
        case DType::IQ2_XS: return &Scalar<DType::IQ2_XS>::kernel;
        case DType::IQ2_S: return &Scalar<DType::IQ2_S>::kernel;
        case DType::IQ1_S: return &Scalar<DType::IQ1_S>::kernel;
        case DType::IQ1_M: return &Scalar<DType::IQ1_M>::kernel;
        case DType::TQ2_0: return &Scalar<DType::TQ2_0>::kernel;
        case DType::MXFP4: return &Scalar<DType::MXFP4>::kernel;
        default: return nullptr;
    }
}

}  // namespace lr::cpu
