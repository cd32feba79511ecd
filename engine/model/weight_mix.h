#pragma once
// Which type each weight of a model gets: one type for every 2-D weight ("pure", like
// llama-quantize --pure), llama.cpp's Q4_K_M mix, or its MXFP4_MOE mix. Either way a row
// length the type's block does not divide falls back the way llama-quantize does. 1-D
// tensors (norms, biases), routers and expert biases are always F32, as in llama-quantize.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/common/dtype.h"

namespace lr {

enum class WeightMix {
    pure,       // every 2-D weight in WeightFormat::type
    q4_k_m,     // llama.cpp's Q4_K_M: Q4_K, with Q6_K for output.weight and for the attn_v /
                // ffn_down (ffn_down_exps) of the layers llama.cpp's use_more_bits() picks
    mxfp4_moe,  // llama.cpp's MXFP4_MOE: MXFP4 experts, every other 2-D weight Q8_0 (gpt-oss)
};

struct WeightFormat {
    DType type = DType::F16;  // the type of a pure file; Q4_K for q4_k_m
    WeightMix mix = WeightMix::pure;
};

// Parses "Q4_K_M", "MXFP4_MOE" or any type name lr::dtype_from_name knows ("q8_0", "F16"...), case
// aside. nullopt for an unknown name; a known type make-model cannot write (Q8_K, IQ2_XXS)
// parses, and validate(RandomModelSpec) rejects it with the list of writable types.
std::optional<WeightFormat> weight_format_from_name(std::string_view name);

// "Q4_0", "Q4_K_M", "MXFP4_MOE".
std::string weight_format_name(const WeightFormat & format);

// True for the types a file can be written in: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ3_S, IQ3_XXS, TQ2_0, MXFP4 (and
// the Q4_K_M and MXFP4_MOE mixes): those llama.cpp quantizes without an importance matrix.
bool is_writable(const WeightFormat & format);

// Empty for a writable format, else why not ("IQ2_XXS needs an importance matrix ...").
std::string why_not_writable(const WeightFormat & format);

// "F32, F16, BF16, Q8_0, ..., Q4_K_M, MXFP4_MOE" for help text and error messages.
std::string writable_weight_format_names();

// llama.cpp's general.file_type (enum llama_ftype) for the format. Q3_K, Q4_K and Q5_K
// write llama-quantize's aliases Q3_K_M (12), Q4_K_M (15) and Q5_K_M (17); MXFP4 writes
// MXFP4_MOE (38), the ftype llama-quantize --pure writes all-MXFP4 files under, as the
// MXFP4_MOE mix does.
uint32_t llama_file_type(const WeightFormat & format);

// What a 2-D weight (or a stack of experts) is, for the mix rules.
enum class WeightRole {
    token_embd,
    output,
    attn_q,
    attn_k,
    attn_v,
    attn_output,
    ffn_gate,
    ffn_up,
    ffn_down,
    ffn_gate_exps,
    ffn_up_exps,
    ffn_down_exps
};

struct WeightTypeChoice {
    DType type = DType::F32;    // what is written
    DType wanted = DType::F32;  // what the format asked for, before a fallback
    bool fell_back() const { return type != wanted; }
};

// The type of one 2-D weight with rows of `ne0` elements. A row the type's block does not
// divide falls back as llama-quantize's tensor_type_fallback: Q2_K, Q3_K, TQ2_0 -> Q4_0;
// IQ4_XS, IQ3_S, IQ3_XXS -> IQ4_NL; MXFP4, Q6_K -> Q8_0; Q4_K -> Q5_0; Q5_K -> Q5_1; then
// F16 if that block does not divide it either. `il` / `n_layer` place attn_v
// and ffn_down in the stack; `tied_output` says token_embd doubles as the output (then
// it gets the output's type in the mix, as in llama.cpp).
WeightTypeChoice choose_weight_type(const WeightFormat & format, WeightRole role, uint32_t il, uint32_t n_layer, uint64_t ne0,
                                    bool tied_output);

}  // namespace lr
