#include "weight_mix.h"

#include <array>
#include <cctype>

#include "engine/quant/quant.h"

namespace lr {
namespace {

struct FormatEntry {
    DType type;
    uint32_t file_type;  // llama_ftype
};

// The writable types, in the order help text lists them, with llama.cpp's ftype numbers.
constexpr std::array kWritable = {
    FormatEntry{DType::F32, 0},      FormatEntry{DType::F16, 1},    FormatEntry{DType::BF16, 32},   FormatEntry{DType::Q8_0, 7},
    FormatEntry{DType::Q6_K, 18},    FormatEntry{DType::Q5_K, 17},  FormatEntry{DType::Q5_1, 9},    FormatEntry{DType::Q5_0, 8},
    FormatEntry{DType::Q4_K, 15},    FormatEntry{DType::Q4_1, 3},   FormatEntry{DType::Q4_0, 2},    FormatEntry{DType::IQ4_NL, 25},
    FormatEntry{DType::Q3_K, 12},    FormatEntry{DType::Q2_K, 10},  FormatEntry{DType::IQ4_XS, 30}, FormatEntry{DType::IQ3_S, 26},
    FormatEntry{DType::IQ3_XXS, 23}, FormatEntry{DType::TQ2_0, 37}, FormatEntry{DType::MXFP4, 38},  // llama.cpp's MXFP4_MOE ftype, which
                                                                                                    // --pure turns into all-MXFP4
};

constexpr uint32_t kFileTypeQ4_K_M = 15;
constexpr std::string_view kQ4_K_M = "Q4_K_M";
constexpr uint32_t kFileTypeMXFP4_MOE = 38;
constexpr std::string_view kMXFP4_MOE = "MXFP4_MOE";

bool is_expert_role(WeightRole role) {
    return role == WeightRole::ffn_gate_exps || role == WeightRole::ffn_up_exps || role == WeightRole::ffn_down_exps;
}

const FormatEntry * find_writable(DType type) {
    for (const FormatEntry & e : kWritable) {
        if (e.type == type) return &e;
    }
    return nullptr;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
    }
    return true;
}

// llama.cpp's use_more_bits(): the first and last eighth of the layers, and every third
// layer in between.
bool use_more_bits(int il, int n_layer) { return il < n_layer / 8 || il >= 7 * n_layer / 8 || (il - n_layer / 8) % 3 == 2; }

// llama.cpp's Q4_K_M choice (llama_tensor_get_type_impl, for dense llama/qwen2 models).
DType q4_k_m_type(WeightRole role, uint32_t il, uint32_t n_layer, uint64_t ne0, bool tied_output) {
    const bool is_output = role == WeightRole::output || (tied_output && role == WeightRole::token_embd);
    if (is_output) return ne0 % dtype_traits(DType::Q4_K).block_elems != 0 ? DType::Q8_0 : DType::Q6_K;
    const bool down = role == WeightRole::ffn_down || role == WeightRole::ffn_down_exps;  // llama.cpp matches "ffn_down"
    if ((role == WeightRole::attn_v || down) && use_more_bits(int(il), int(n_layer))) return DType::Q6_K;
    return DType::Q4_K;
}

// llama-quantize's tensor_type_fallback: a type whose block does not divide the row.
DType fallback_type(DType wanted, uint64_t ne0) {
    DType type = wanted;
    switch (wanted) {
        case DType::IQ4_XS:
        case DType::IQ3_S:
        case DType::IQ3_XXS: type = DType::IQ4_NL; break;
        case DType::MXFP4: type = DType::Q8_0; break;
        case DType::TQ2_0:
        case DType::Q2_K:
        case DType::Q3_K: type = DType::Q4_0; break;
        case DType::Q4_K: type = DType::Q5_0; break;
        case DType::Q5_K: type = DType::Q5_1; break;
        case DType::Q6_K: type = DType::Q8_0; break;
        // NOTE: llama-quantize has no fallback for the 32-element types and gives up;
        // F16 below keeps the file writable (a row not a multiple of 32 is rare).
        default: break;
    }
    if (ne0 % dtype_traits(type).block_elems != 0) type = DType::F16;
    return type;
}

}  // namespace

std::optional<WeightFormat> weight_format_from_name(std::string_view name) {
    if (iequals(name, kQ4_K_M)) return WeightFormat{DType::Q4_K, WeightMix::q4_k_m};
    if (iequals(name, kMXFP4_MOE)) return WeightFormat{DType::MXFP4, WeightMix::mxfp4_moe};
    const std::optional<DType> type = dtype_from_name(name);
    if (!type) return std::nullopt;
    return WeightFormat{*type, WeightMix::pure};
}

std::string weight_format_name(const WeightFormat & format) {
    if (format.mix == WeightMix::q4_k_m) return std::string(kQ4_K_M);
    if (format.mix == WeightMix::mxfp4_moe) return std::string(kMXFP4_MOE);
    return std::string(dtype_name(format.type));
}

std::string why_not_writable(const WeightFormat & format) {
    if (is_writable(format)) return {};
    const std::string name = weight_format_name(format);
    if (quant::needs_importance_matrix(format.type)) {
        return name + " needs an importance matrix (llama-quantize refuses it without one), which make-model does not have";
    }
    return name + " cannot be written";
}

bool is_writable(const WeightFormat & format) {
    if (format.mix == WeightMix::q4_k_m) return format.type == DType::Q4_K;
    if (format.mix == WeightMix::mxfp4_moe) return format.type == DType::MXFP4;
    return find_writable(format.type) != nullptr;
}

std::string writable_weight_format_names() {
    std::string out;
    for (const FormatEntry & e : kWritable) {
        out += dtype_name(e.type);
        out += ", ";
    }
    out += kQ4_K_M;
    out += ", ";
    out += kMXFP4_MOE;
    return out;
}

uint32_t llama_file_type(const WeightFormat & format) {
    if (format.mix == WeightMix::q4_k_m) return kFileTypeQ4_K_M;
    if (format.mix == WeightMix::mxfp4_moe) return kFileTypeMXFP4_MOE;
    const FormatEntry * e = find_writable(format.type);
    return e ? e->file_type : 0;
}

WeightTypeChoice choose_weight_type(const WeightFormat & format, WeightRole role, uint32_t il, uint32_t n_layer, uint64_t ne0,
                                    bool tied_output) {
    WeightTypeChoice c;
    switch (format.mix) {
        case WeightMix::pure: c.wanted = format.type; break;
        case WeightMix::q4_k_m: c.wanted = q4_k_m_type(role, il, n_layer, ne0, tied_output); break;
        case WeightMix::mxfp4_moe: c.wanted = is_expert_role(role) ? DType::MXFP4 : DType::Q8_0; break;
    }
    c.type = ne0 % dtype_traits(c.wanted).block_elems == 0 ? c.wanted : fallback_type(c.wanted, ne0);
    return c;
}

}  // namespace lr
