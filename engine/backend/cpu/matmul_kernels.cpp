// Which matmul kernel runs a weight type on an ISA.

#include "engine/backend/cpu/matmul_kernels.h"

namespace lr::cpu {

// The AVX2 families (avx2/matmul_*_avx2.cpp).
const MatmulKernel * avx2_float_matmul_kernel(DType type);
const MatmulKernel * avx2_legacy_matmul_kernel(DType type);
const MatmulKernel * avx2_kquant_matmul_kernel(DType type);
const MatmulKernel * avx2_iquant_matmul_kernel(DType type);
// The AVX-512 ones (avx512/*.cpp).
const MatmulKernel * avx512_float_matmul_kernel(DType type);
const MatmulKernel * avx512_legacy_matmul_kernel(DType type);
const MatmulKernel * avx512_kquant_matmul_kernel(DType type);
const MatmulKernel * avx512_iquant_matmul_kernel(DType type);

const MatmulKernel * avx2_matmul_kernel(DType type) {
#if defined(LONGREAD_HAVE_AVX2_KERNELS)
    if (const MatmulKernel * k = avx2_float_matmul_kernel(type)) return k;
    if (const MatmulKernel * k = avx2_legacy_matmul_kernel(type)) return k;
    if (const MatmulKernel * k = avx2_kquant_matmul_kernel(type)) return k;
    return avx2_iquant_matmul_kernel(type);
#else
    (void)type;
    return nullptr;
#endif
}

const MatmulKernel * avx512_matmul_kernel(DType type) {
#if defined(LONGREAD_HAVE_AVX512_KERNELS)
    if (const MatmulKernel * k = avx512_float_matmul_kernel(type)) return k;
    if (const MatmulKernel * k = avx512_legacy_matmul_kernel(type)) return k;
    if (const MatmulKernel * k = avx512_kquant_matmul_kernel(type)) return k;
    return avx512_iquant_matmul_kernel(type);
#else
    (void)type;
    return nullptr;
#endif
}

const MatmulKernel * matmul_kernel(CpuIsa isa, DType type) {
    if (isa == CpuIsa::avx512) {
        if (const MatmulKernel * k = avx512_matmul_kernel(type)) return k;
    }
    if (runs_avx2(isa)) {
        if (const MatmulKernel * k = avx2_matmul_kernel(type)) return k;
    }
    return scalar_matmul_kernel(type);
}

}  // namespace lr::cpu
