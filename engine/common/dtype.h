#pragma once
// Tensor element types as numbered in GGUF files (ggml_type). The numbers are written
// to disk: never renumber. A type is "supported" when the engine can compute with it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lr {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct DTypeTraits {
    std::string_view name;
    uint32_t block_elems;  // elements per block (1 for plain types)
    uint32_t block_bytes;  // bytes per block
    bool supported;        // the engine can dequantize / compute with it
};

// Traits of a type number read from a file; nullopt for a number ggml never defined.
std::optional<DTypeTraits> dtype_traits(uint32_t type_number);
const DTypeTraits & dtype_traits(DType type);

inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(DType type, size_t n) {
    const DTypeTraits & t = dtype_traits(type);
    return n / t.block_elems * t.block_bytes;
}

// Parses "Q4_K", "q4_k", "f16"...; nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace lr
