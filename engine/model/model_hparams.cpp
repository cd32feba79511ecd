#include "model_hparams.h"

#include <algorithm>
#include <cmath>

namespace lr {
namespace {

class KeyReader {
public:
    KeyReader(const gguf::GgufFile & file, std::string prefix) : file_(file), prefix_(std::move(prefix)) {}

    // `{arch}.suffix` as an unsigned integer; `fallback` when absent (nullopt: required).
    Status get_u32(const std::string & suffix, uint32_t & out, std::optional<uint32_t> fallback = std::nullopt) const {
        const std::string key = prefix_ + suffix;
        const gguf::MetaValue * v = file_.find(key);
        if (v && v->type == gguf::ValueType::array) {
            return error(StatusCode::unsupported,
                         file_.path() + ": key '" + key + "' varies per layer, which Longread does not support yet");
        }
        LR_ASSIGN_OR_RETURN(std::optional<uint64_t> value, file_.get_uint(key));
        if (!value) {
            if (!fallback) return error(StatusCode::corrupt_data, file_.path() + ": required key '" + key + "' is missing");
            out = *fallback;
            return {};
        }
        if (*value > UINT32_MAX) return error(StatusCode::corrupt_data, file_.path() + ": key '" + key + "' is out of range");
        out = static_cast<uint32_t>(*value);
        return {};
    }

    Status get_f32(const std::string & suffix, float & out, float fallback) const {
        LR_ASSIGN_OR_RETURN(std::optional<double> value, file_.get_float(prefix_ + suffix));
        out = value ? static_cast<float>(*value) : fallback;
        return {};
    }

    Status get_bool(const std::string & suffix, bool & out, bool fallback) const {
        LR_ASSIGN_OR_RETURN(std::optional<bool> value, file_.get_bool(prefix_ + suffix));
        out = value.value_or(fallback);
        return {};
    }

    // `{arch}.suffix` as one unsigned integer for every layer, or as an array of n_layer
    // (llama.cpp's get_key_or_arr): `out` takes the largest value, `per_layer` each layer's
    // (left empty for a scalar).
    Status get_u32_or_array(const std::string & suffix, uint32_t n_layer, uint32_t & out, std::vector<uint32_t> & per_layer,
                            std::optional<uint32_t> fallback = std::nullopt) const {
        const std::string key = prefix_ + suffix;
        const gguf::MetaValue * v = file_.find(key);
        if (!v || v->type != gguf::ValueType::array) return get_u32(suffix, out, fallback);
        LR_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> values, file_.get_int_array(key));
        const std::vector<int64_t> list = values.value_or(std::vector<int64_t>{});
        if (list.size() != n_layer) {
            return error(StatusCode::corrupt_data, file_.path() + ": key '" + key + "' has " + std::to_string(list.size()) +
                                                       " values for " + std::to_string(n_layer) + " layers");
        }
        per_layer.clear();
        for (int64_t value : list) {
            if (value < 0 || value > INT32_MAX)
                return error(StatusCode::corrupt_data, file_.path() + ": key '" + key + "' is out of range");
            per_layer.push_back(uint32_t(value));
        }
        out = *std::max_element(per_layer.begin(), per_layer.end());
        return {};
    }

    bool has(const std::string & suffix) const { return file_.find(prefix_ + suffix) != nullptr; }

    Result<std::optional<std::string_view>> get_string(const std::string & suffix) const { return file_.get_string(prefix_ + suffix); }

private:
    const gguf::GgufFile & file_;
    std::string prefix_;
};

Status out_of_range(const gguf::GgufFile & file, const std::string & what) {
    return error(StatusCode::corrupt_data, file.path() + ": " + what);
}

// The architectures Longread runs, with their rope layout.
struct ArchEntry {
    ModelArch arch;
    std::string_view name;
    RopeMode rope_mode;
};
constexpr ArchEntry kArchs[] = {
    {ModelArch::llama, "llama", RopeMode::normal},       {ModelArch::qwen2, "qwen2", RopeMode::neox},
    {ModelArch::qwen3, "qwen3", RopeMode::neox},         {ModelArch::mistral3, "mistral3", RopeMode::normal},
    {ModelArch::phi3, "phi3", RopeMode::neox},           {ModelArch::gemma3, "gemma3", RopeMode::neox},
    {ModelArch::gemma4, "gemma4", RopeMode::neox},       {ModelArch::qwen3moe, "qwen3moe", RopeMode::neox},
    {ModelArch::gpt_oss, "gpt-oss", RopeMode::neox},     {ModelArch::qwen35, "qwen35", RopeMode::neox},
    {ModelArch::qwen35moe, "qwen35moe", RopeMode::neox},
};

// llama.cpp's LLAMA_MAX_EXPERTS.
constexpr uint32_t kMaxExperts = 512;

const ArchEntry * find_arch(std::string_view name) {
    for (const ArchEntry & e : kArchs) {
        if (e.name == name) return &e;
    }
    return nullptr;
}

// The rope scaling keys, as llama.cpp's loader reads them for every architecture.
Status read_rope_scaling(const gguf::GgufFile & file, const KeyReader & keys, ModelHParams & hp) {
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> scaling, keys.get_string("rope.scaling.type"));
    float factor = 0.0f;
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.factor", factor, 0.0f));
    if (factor == 0.0f) LR_RETURN_IF_ERROR(keys.get_f32("rope.scale_linear", factor, 0.0f));  // older files
    // llama.cpp's default type is linear: a factor without a type divides the frequencies.
    const std::string type = scaling ? std::string(*scaling) : (factor > 0.0f ? "linear" : "none");
    if (type == "none") {
        hp.rope_scaling = RopeScaling::none;
    } else if (type == "linear" || type == "yarn") {
        hp.rope_scaling = type == "yarn" ? RopeScaling::yarn : RopeScaling::linear;
        if (factor < 0.0f) return out_of_range(file, "rope.scaling.factor must be positive");
        if (factor > 0.0f) hp.rope_freq_scale = 1.0f / factor;
    } else {
        return error(StatusCode::unsupported, file.path() + ": rope scaling type '" + type + "' is not supported yet");
    }
    LR_RETURN_IF_ERROR(keys.get_u32("rope.scaling.original_context_length", hp.n_ctx_orig, 0));
    if (hp.n_ctx_orig == 0) hp.n_ctx_orig = hp.n_ctx_train;
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.attn_factor", hp.rope_attn_factor, 1.0f));
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.yarn_beta_fast", hp.yarn_beta_fast, 32.0f));
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.yarn_beta_slow", hp.yarn_beta_slow, 1.0f));
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.yarn_log_multiplier", hp.yarn_log_mul, 0.0f));
    if (!(hp.rope_attn_factor > 0.0f)) return out_of_range(file, "rope.scaling.attn_factor must be positive");
    return {};
}

// A head size (key_length, which value_length must equal) and the dimensions rope turns, of
// the full layers (suffix "") or the sliding ones ("_swa"); `fallback` nullopt: required.
Status read_head_size(const gguf::GgufFile & file, const KeyReader & keys, const std::string & suffix, std::optional<uint32_t> fallback,
                      uint32_t & head_dim, uint32_t & n_rot) {
    LR_RETURN_IF_ERROR(keys.get_u32("attention.key_length" + suffix, head_dim, fallback));
    uint32_t value_length = 0;
    LR_RETURN_IF_ERROR(keys.get_u32("attention.value_length" + suffix, value_length,
                                    fallback ? std::optional<uint32_t>(head_dim) : std::optional<uint32_t>()));
    if (value_length != head_dim)
        return error(StatusCode::unsupported, file.path() + ": different key and value head sizes are not supported");
    if (head_dim == 0 || head_dim > 1024) return out_of_range(file, "attention head size out of range");
    LR_RETURN_IF_ERROR(keys.get_u32("rope.dimension_count" + suffix, n_rot, head_dim));
    if (n_rot > head_dim || n_rot % 2 != 0)
        return out_of_range(file, "rope.dimension_count" + suffix + " must be even and at most the head size");
    return {};
}

// Which layers slide: llama.cpp's set_swa_pattern(period): layer il is sliding iff
// il % period < period - 1 (the last layer of each period is global); period 0: all.
void set_swa_pattern(ModelHParams & hp, uint32_t period) {
    hp.swa_layers.assign(hp.n_layer, 0);
    for (uint32_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[il] = period == 0 || il % period < period - 1;
}

// Qwen3.5's Gated DeltaNet keys, all required as llama.cpp requires them (rope sections
// too, though text positions make its rope plain neox over the first n_rot dimensions).
Status read_delta_net_keys(const gguf::GgufFile & file, const KeyReader & keys, ModelHParams & hp) {
    if (!keys.has("rope.dimension_sections")) {
        return error(StatusCode::corrupt_data, file.path() + ": required key '" + hp.arch_name + ".rope.dimension_sections' is missing");
    }
    LR_RETURN_IF_ERROR(keys.get_u32("ssm.conv_kernel", hp.ssm_conv_kernel));
    LR_RETURN_IF_ERROR(keys.get_u32("ssm.state_size", hp.ssm_state_size));
    LR_RETURN_IF_ERROR(keys.get_u32("ssm.group_count", hp.ssm_group_count));
    LR_RETURN_IF_ERROR(keys.get_u32("ssm.time_step_rank", hp.ssm_time_step_rank));
    LR_RETURN_IF_ERROR(keys.get_u32("ssm.inner_size", hp.ssm_inner_size));
    LR_RETURN_IF_ERROR(keys.get_u32("full_attention_interval", hp.full_attention_interval, 4));
    if (hp.ssm_conv_kernel < 2 || hp.ssm_conv_kernel > 64 || hp.ssm_state_size == 0 || hp.ssm_state_size > 1024 ||
        hp.ssm_group_count == 0 || hp.ssm_time_step_rank == 0 || hp.full_attention_interval == 0) {
        return out_of_range(file, "ssm.conv_kernel, ssm.state_size, ssm.group_count, ssm.time_step_rank or full_attention_interval");
    }
    if (hp.ssm_time_step_rank % hp.ssm_group_count != 0) {
        return out_of_range(file, "ssm.time_step_rank (v heads) must be a multiple of ssm.group_count (k heads)");
    }
    if (uint64_t(hp.ssm_inner_size) != uint64_t(hp.ssm_state_size) * hp.ssm_time_step_rank) {
        return out_of_range(file, "ssm.inner_size must be ssm.state_size x ssm.time_step_rank");
    }
    return {};
}

// Gemma 4: sliding layers with a head size and rope of their own, KV shared by the last
// layers, per-layer inputs; every one of these keys but the shared layers is required, as
// in llama.cpp.
Status read_gemma4_keys(const gguf::GgufFile & file, const KeyReader & keys, ModelHParams & hp) {
    LR_RETURN_IF_ERROR(keys.get_u32("attention.sliding_window", hp.n_swa));
    if (hp.n_swa == 0) return out_of_range(file, "attention.sliding_window must be positive");
    LR_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> pattern,
                        file.get_int_array(hp.arch_name + ".attention.sliding_window_pattern"));
    if (!pattern || pattern->size() != hp.n_layer) {
        return out_of_range(file, "attention.sliding_window_pattern must name every layer (an array of " + std::to_string(hp.n_layer) +
                                      " booleans)");
    }
    hp.swa_layers.assign(pattern->begin(), pattern->end());
    LR_RETURN_IF_ERROR(keys.get_f32("rope.freq_base_swa", hp.rope_freq_base_swa, hp.rope_freq_base));
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    LR_RETURN_IF_ERROR(read_head_size(file, keys, "_swa", std::nullopt, hp.head_dim_swa, hp.n_rot_swa));
    LR_RETURN_IF_ERROR(keys.get_u32("embedding_length_per_layer_input", hp.n_embd_per_layer));
    uint32_t n_shared = 0;
    LR_RETURN_IF_ERROR(keys.get_u32("attention.shared_kv_layers", n_shared, 0));
    if (n_shared >= hp.n_layer) return out_of_range(file, "attention.shared_kv_layers leaves no layer with KV of its own");
    hp.n_layer_kv = hp.n_layer - n_shared;
    if (n_shared > 0) {
        // llama.cpp's fixed sources: the shared sliding layers read layer n_layer_kv - 2, the
        // global ones n_layer_kv - 1; a source of the other kind would have the wrong shape.
        if (hp.n_layer_kv < 2 || !hp.is_sliding(hp.n_layer_kv - 2) || hp.is_sliding(hp.n_layer_kv - 1)) {
            return error(StatusCode::unsupported, file.path() + ": the KV-shared layers read layers " + std::to_string(hp.n_layer_kv - 2) +
                                                      " (sliding) and " + std::to_string(hp.n_layer_kv - 1) +
                                                      " (global), which the sliding window pattern does not give those kinds");
        }
    }
    LR_RETURN_IF_ERROR(keys.get_f32("final_logit_softcapping", hp.final_logit_softcap, 0.0f));
    hp.attention_scale = 1.0f;  // Gemma 4 attends with a scale of 1 on its normed q and k
    return {};
}

// What each family adds to the common keys, with llama.cpp's defaults.
Status read_arch_keys(const gguf::GgufFile & file, const KeyReader & keys, ModelHParams & hp) {
    switch (hp.arch) {
        case ModelArch::llama:
        case ModelArch::qwen2:
        case ModelArch::qwen3:
        case ModelArch::qwen3moe: return {};
        case ModelArch::qwen35:
        case ModelArch::qwen35moe: return read_delta_net_keys(file, keys, hp);
        case ModelArch::mistral3:
            // Llama 4's attention temperature, with the original context as its period.
            LR_RETURN_IF_ERROR(keys.get_f32("attention.temperature_scale", hp.attn_temp_scale, 0.0f));
            if (hp.attn_temp_scale != 0.0f) hp.attn_temp_floor = hp.n_ctx_orig;
            if (hp.attn_temp_scale != 0.0f && hp.attn_temp_floor == 0) {
                return out_of_range(file, "attention.temperature_scale needs rope.scaling.original_context_length");
            }
            return {};
        case ModelArch::phi3:
            // NOTE: Phi-3 files name a sliding window (262144 for Phi-3-mini) that llama.cpp
            // ignores ("Phi SWA is currently disabled"): every layer attends to everything.
            return {};
        case ModelArch::gemma3: {
            LR_RETURN_IF_ERROR(keys.get_u32("attention.sliding_window", hp.n_swa, 0));
            if (hp.n_swa > 0) {
                uint32_t period = 6;  // Gemma 3: five sliding layers, then a global one
                LR_RETURN_IF_ERROR(keys.get_u32("attention.sliding_window_pattern", period, 6));
                set_swa_pattern(hp, period);
                LR_RETURN_IF_ERROR(keys.get_f32("rope.freq_base_swa", hp.rope_freq_base_swa, 10000.0f));
                hp.rope_freq_scale_swa = 1.0f;  // llama.cpp never scales the sliding layers' rope
            }
            LR_RETURN_IF_ERROR(keys.get_f32("final_logit_softcapping", hp.final_logit_softcap, 0.0f));
            // Gemma's query_pre_attn_scalar: n_embd / n_head for the 27B model (62 layers),
            // the head size for the others (llama.cpp's rule).
            hp.attention_scale = hp.n_layer == 62 ? 1.0f / std::sqrt(float(hp.n_embd / hp.n_head)) : 1.0f / std::sqrt(float(hp.head_dim));
            return {};
        }
        case ModelArch::gemma4: return read_gemma4_keys(file, keys, hp);
        case ModelArch::gpt_oss:
            // Every other layer slides, layer 0 first (llama.cpp's set_swa_pattern(2); the
            // files carry no pattern key). Both kinds share the rope, YaRN included.
            LR_RETURN_IF_ERROR(keys.get_u32("attention.sliding_window", hp.n_swa));
            if (hp.n_swa == 0) return out_of_range(file, "attention.sliding_window must be positive");
            set_swa_pattern(hp, 2);
            LR_RETURN_IF_ERROR(keys.get_f32("rope.freq_base_swa", hp.rope_freq_base_swa, hp.rope_freq_base));
            hp.rope_freq_scale_swa = hp.rope_freq_scale;
            return {};
    }
    return {};
}

bool is_moe_arch(ModelArch arch) { return arch == ModelArch::qwen3moe || arch == ModelArch::gpt_oss || arch == ModelArch::qwen35moe; }

// llama.cpp's enum llama_expert_gating_func_type (written to files: never renumber).
Result<ExpertGating> gating_from_key(const gguf::GgufFile & file, uint32_t value) {
    switch (value) {
        case 1: return ExpertGating::softmax;
        case 3: return ExpertGating::softmax_weight;
        default:
            return error(StatusCode::unsupported, file.path() + ": expert_gating_func " + std::to_string(value) +
                                                      " is not supported (1 softmax and 3 softmax over the chosen experts are)");
    }
}

// The mixture-of-experts keys, with llama.cpp's checks and each family's defaults: qwen3moe
// softmax with renormalized weights, gpt-oss softmax over the chosen experts' logits.
Status read_expert_keys(const gguf::GgufFile & file, const KeyReader & keys, ModelHParams & hp) {
    LR_RETURN_IF_ERROR(keys.get_u32("expert_count", hp.n_expert, 0));
    LR_RETURN_IF_ERROR(keys.get_u32("expert_used_count", hp.n_expert_used, 0));
    if (!is_moe_arch(hp.arch)) {
        if (hp.n_expert == 0) return {};
        return error(StatusCode::unsupported,
                     file.path() + ": " + hp.arch_name + " files with experts (expert_count " + std::to_string(hp.n_expert) +
                         ") are not supported; Longread runs the qwen3moe, qwen35moe and gpt-oss mixtures of experts");
    }
    if (hp.n_expert == 0) return out_of_range(file, hp.arch_name + " needs experts, but expert_count is missing or 0");
    if (hp.n_expert > kMaxExperts) {
        return out_of_range(file, "expert_count " + std::to_string(hp.n_expert) + " exceeds " + std::to_string(kMaxExperts));
    }
    if (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert) {
        return out_of_range(file, "expert_used_count " + std::to_string(hp.n_expert_used) + " must be 1 to expert_count " +
                                      std::to_string(hp.n_expert));
    }
    if (hp.arch == ModelArch::gpt_oss) {
        LR_RETURN_IF_ERROR(keys.get_u32("expert_feed_forward_length", hp.n_ff_exp));
    } else {
        // llama.cpp's qwen3moe default: the dense width shared out over the used experts.
        LR_RETURN_IF_ERROR(keys.get_u32("expert_feed_forward_length", hp.n_ff_exp, hp.n_ff / hp.n_expert_used));
    }
    if (hp.n_ff_exp == 0) return out_of_range(file, "expert_feed_forward_length must be positive");
    LR_RETURN_IF_ERROR(keys.get_u32("expert_shared_feed_forward_length", hp.n_ff_shexp, 0));
    LR_RETURN_IF_ERROR(keys.get_u32("expert_shared_count", hp.n_expert_shared, hp.n_ff_shexp > 0 ? 1 : 0));
    if (hp.n_expert_shared > 1) {
        return error(StatusCode::unsupported, file.path() + ": expert_shared_count " + std::to_string(hp.n_expert_shared) +
                                                  " is not supported (one shared expert is)");
    }
    if (hp.n_expert_shared == 1 && hp.n_ff_shexp == 0) hp.n_ff_shexp = hp.n_ff_exp;

    const bool gpt_oss = hp.arch == ModelArch::gpt_oss;
    hp.expert_gating = gpt_oss ? ExpertGating::softmax_weight : ExpertGating::softmax;
    if (keys.has("expert_gating_func")) {
        uint32_t value = 0;
        LR_RETURN_IF_ERROR(keys.get_u32("expert_gating_func", value));
        LR_ASSIGN_OR_RETURN(hp.expert_gating, gating_from_key(file, value));
    }
    LR_RETURN_IF_ERROR(keys.get_bool("expert_weights_norm", hp.expert_weights_norm, !gpt_oss));
    LR_RETURN_IF_ERROR(keys.get_f32("expert_weights_scale", hp.expert_weights_scale, 0.0f));
    if (!std::isfinite(hp.expert_weights_scale)) return out_of_range(file, "expert_weights_scale must be finite");
    return {};
}

}  // namespace

std::string_view arch_name(ModelArch arch) {
    for (const ArchEntry & e : kArchs) {
        if (e.arch == arch) return e.name;
    }
    return "llama";
}

Result<ModelHParams> read_hparams(const gguf::GgufFile & file) {
    ModelHParams hp;
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> arch, file.get_string("general.architecture"));
    if (!arch)
        return error(StatusCode::corrupt_data,
                     file.path() + ": key 'general.architecture' is missing (is this a model, or a vocabulary-only file?)");
    hp.arch_name = std::string(*arch);
    const ArchEntry * entry = find_arch(hp.arch_name);
    if (!entry) {
        return error(StatusCode::unsupported,
                     file.path() + ": model architecture '" + hp.arch_name +
                         "' is not supported (Longread runs llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe, mistral3, "
                         "phi3, gemma3, gemma4 and gpt-oss models: Llama 2/3.x, Mistral, Qwen 2/2.5/3, Qwen3 MoE, "
                         "Qwen3.5/3.6, Ministral 3, Phi-3/4, Gemma 3, Gemma 4, gpt-oss)");
    }
    hp.arch = entry->arch;
    hp.rope_mode = entry->rope_mode;
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> name, file.get_string("general.name"));
    hp.name = name ? std::string(*name) : file.path().substr(file.path().find_last_of('/') + 1);

    const KeyReader keys(file, hp.arch_name + ".");
    LR_RETURN_IF_ERROR(keys.get_u32("embedding_length", hp.n_embd));
    LR_RETURN_IF_ERROR(keys.get_u32("block_count", hp.n_layer));
    // Mixture-of-experts files may have no dense FFN (and no width for one).
    const bool moe = is_moe_arch(hp.arch);
    LR_RETURN_IF_ERROR(
        keys.get_u32_or_array("feed_forward_length", hp.n_layer, hp.n_ff, hp.n_ff_layers, moe ? std::optional<uint32_t>(0) : std::nullopt));
    LR_RETURN_IF_ERROR(keys.get_u32("attention.head_count", hp.n_head));
    LR_RETURN_IF_ERROR(keys.get_u32_or_array("attention.head_count_kv", hp.n_layer, hp.n_head_kv, hp.n_head_kv_layers, hp.n_head));
    LR_RETURN_IF_ERROR(keys.get_u32("context_length", hp.n_ctx_train, 2048));
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || (hp.n_ff == 0 && !moe) || hp.n_layer > 1024 || hp.n_head > 4096) {
        return out_of_range(file, "hyper-parameters out of range (embedding_length, block_count, head_count, feed_forward_length)");
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const uint32_t n_kv = hp.n_head_kv_of(il);
        if (n_kv == 0 || hp.n_head % n_kv != 0) {
            return out_of_range(file, "attention.head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                                          std::to_string(n_kv));
        }
        if (hp.n_ff_of(il) == 0 && !moe) return out_of_range(file, "feed_forward_length must be positive");
    }
    if (!file.find(hp.arch_name + ".attention.key_length") && hp.n_embd % hp.n_head != 0) {
        return out_of_range(file, "embedding_length is not a multiple of head_count");
    }
    LR_RETURN_IF_ERROR(read_head_size(file, keys, "", hp.n_embd / hp.n_head, hp.head_dim, hp.n_rot));
    // llama.cpp requires the epsilon of the newer families; older llama files may lack it.
    const bool eps_required = hp.arch != ModelArch::llama && hp.arch != ModelArch::qwen2;
    if (eps_required && !file.find(hp.arch_name + ".attention.layer_norm_rms_epsilon")) {
        return error(StatusCode::corrupt_data,
                     file.path() + ": required key '" + hp.arch_name + ".attention.layer_norm_rms_epsilon' is missing");
    }
    LR_RETURN_IF_ERROR(keys.get_f32("attention.layer_norm_rms_epsilon", hp.rms_eps, 1e-5f));
    LR_RETURN_IF_ERROR(keys.get_f32("rope.freq_base", hp.rope_freq_base, 10000.0f));
    if (!(hp.rms_eps > 0) || !(hp.rope_freq_base > 0)) return out_of_range(file, "rms epsilon and rope.freq_base must be positive");
    LR_RETURN_IF_ERROR(read_rope_scaling(file, keys, hp));
    hp.n_layer_kv = hp.n_layer;
    LR_RETURN_IF_ERROR(read_arch_keys(file, keys, hp));
    LR_RETURN_IF_ERROR(read_expert_keys(file, keys, hp));
    if (!(hp.rope_freq_base_swa > 0)) return out_of_range(file, "rope.freq_base_swa must be positive");

    uint32_t vocab = 0;
    LR_RETURN_IF_ERROR(keys.get_u32("vocab_size", vocab, 0));
    if (vocab == 0) {
        if (const gguf::TensorInfo * emb = file.find_tensor("token_embd.weight")) vocab = static_cast<uint32_t>(emb->ne[1]);
    }
    if (vocab == 0)
        return error(StatusCode::corrupt_data,
                     file.path() + ": cannot tell the vocabulary size (no vocab_size key and no token_embd.weight)");
    hp.n_vocab = vocab;
    return hp;
}

uint32_t ModelHParams::max_n_embd_q() const {
    uint32_t n = 0;
    for (uint32_t il = 0; il < n_layer; ++il) n = std::max(n, n_embd_q_of(il));
    return n;
}

uint32_t ModelHParams::max_n_embd_kv() const {
    uint32_t n = 0;
    for (uint32_t il = 0; il < n_layer; ++il) n = std::max(n, n_embd_kv_of(il));
    return n;
}

bool ModelHParams::kv_geometry_varies() const {
    for (uint32_t il = 1; il < n_layer; ++il) {
        if (n_head_kv_of(il) != n_head_kv_of(0) || head_dim_of(il) != head_dim_of(0)) return true;
    }
    return false;
}

uint32_t ModelHParams::kv_geometry_layer() const {
    for (uint32_t il = 0; il < n_layer_kv; ++il) {
        if (!is_sliding(il)) return il;
    }
    return 0;
}

std::vector<KvLayerSpec> kv_layer_specs(const ModelHParams & hp) {
    std::vector<KvLayerSpec> layers;
    const bool varies = hp.kv_geometry_varies();
    if (hp.n_swa == 0 && hp.n_layer_kv == hp.n_layer && !varies && hp.full_attention_interval == 0) return layers;
    layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        KvLayerSpec & l = layers[il];
        if (hp.is_recurrent(il)) {
            l = {.kind = KvLayerKind::recurrent, .state_bytes = hp.recurrent_state_bytes()};
        } else if (!hp.has_kv(il)) {
            l = {.kind = KvLayerKind::shared, .source = hp.kv_source(il)};
        } else if (hp.is_sliding(il)) {
            l = {.kind = KvLayerKind::sliding_window, .window = hp.n_swa};
        }
        if (varies) {
            l.n_head_kv = hp.n_head_kv_of(hp.kv_source(il));
            l.head_dim = hp.head_dim_of(hp.kv_source(il));
        }
    }
    return layers;
}

}  // namespace lr
