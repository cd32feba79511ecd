#include "cpu_isa.h"

namespace lr {

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::best: return "best";
        case CpuIsa::scalar: return "scalar";
        case CpuIsa::avx2: return "avx2";
    }
    return "?";
}

CpuIsa detect_cpu_isa() {
#if defined(LONGREAD_HAVE_AVX2_KERNELS) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) return CpuIsa::avx2;
#endif
    return CpuIsa::scalar;
}

CpuIsa resolve_cpu_isa(CpuIsa requested) {
    const CpuIsa best = detect_cpu_isa();
    if (requested == CpuIsa::best) return best;
    if (requested == CpuIsa::avx2 && best != CpuIsa::avx2) return CpuIsa::scalar;
    return requested;
}

}  // namespace lr
