#include "model_hparams.h"

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

    Result<std::optional<std::string_view>> get_string(const std::string & suffix) const { return file_.get_string(prefix_ + suffix); }

private:
    const gguf::GgufFile & file_;
    std::string prefix_;
};

Status out_of_range(const gguf::GgufFile & file, const std::string & what) {
    return error(StatusCode::corrupt_data, file.path() + ": " + what);
}

}  // namespace

Result<ModelHParams> read_hparams(const gguf::GgufFile & file) {
    ModelHParams hp;
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> arch, file.get_string("general.architecture"));
    if (!arch)
        return error(StatusCode::corrupt_data,
                     file.path() + ": key 'general.architecture' is missing (is this a model, or a vocabulary-only file?)");
    hp.arch_name = std::string(*arch);
    if (hp.arch_name == "llama") {
        hp.arch = ModelArch::llama;
        hp.rope_mode = RopeMode::normal;
    } else if (hp.arch_name == "qwen2") {
        hp.arch = ModelArch::qwen2;
        hp.rope_mode = RopeMode::neox;
    } else {
        return error(StatusCode::unsupported,
                     file.path() + ": model architecture '" + hp.arch_name +
                         "' is not supported (Longread runs llama and qwen2 models: Llama 2/3.x, TinyLlama, Mistral, SmolLM2, Qwen 2/2.5)");
    }
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> name, file.get_string("general.name"));
    hp.name = name ? std::string(*name) : file.path().substr(file.path().find_last_of('/') + 1);

    const KeyReader keys(file, hp.arch_name + ".");
    LR_RETURN_IF_ERROR(keys.get_u32("embedding_length", hp.n_embd));
    LR_RETURN_IF_ERROR(keys.get_u32("block_count", hp.n_layer));
    LR_RETURN_IF_ERROR(keys.get_u32("feed_forward_length", hp.n_ff));
    LR_RETURN_IF_ERROR(keys.get_u32("attention.head_count", hp.n_head));
    LR_RETURN_IF_ERROR(keys.get_u32("attention.head_count_kv", hp.n_head_kv, hp.n_head));
    LR_RETURN_IF_ERROR(keys.get_u32("context_length", hp.n_ctx_train, 2048));
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_ff == 0 || hp.n_layer > 1024 || hp.n_head > 4096) {
        return out_of_range(file, "hyper-parameters out of range (embedding_length, block_count, head_count, feed_forward_length)");
    }
    if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0) {
        return out_of_range(file, "attention.head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                                      std::to_string(hp.n_head_kv));
    }
    if (hp.n_embd % hp.n_head != 0) return out_of_range(file, "embedding_length is not a multiple of head_count");
    LR_RETURN_IF_ERROR(keys.get_u32("attention.key_length", hp.head_dim, hp.n_embd / hp.n_head));
    uint32_t value_length = 0;
    LR_RETURN_IF_ERROR(keys.get_u32("attention.value_length", value_length, hp.head_dim));
    if (value_length != hp.head_dim)
        return error(StatusCode::unsupported, file.path() + ": different key and value head sizes are not supported");
    if (hp.head_dim == 0 || hp.head_dim > 1024) return out_of_range(file, "attention head size out of range");
    LR_RETURN_IF_ERROR(keys.get_u32("rope.dimension_count", hp.n_rot, hp.head_dim));
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        return out_of_range(file, "rope.dimension_count must be even and at most the head size");
    LR_RETURN_IF_ERROR(keys.get_f32("attention.layer_norm_rms_epsilon", hp.rms_eps, 1e-5f));
    LR_RETURN_IF_ERROR(keys.get_f32("rope.freq_base", hp.rope_freq_base, 10000.0f));
    if (!(hp.rms_eps > 0) || !(hp.rope_freq_base > 0)) return out_of_range(file, "rms epsilon and rope.freq_base must be positive");

    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> scaling, keys.get_string("rope.scaling.type"));
    float factor = 0.0f;
    LR_RETURN_IF_ERROR(keys.get_f32("rope.scaling.factor", factor, 0.0f));
    if (factor == 0.0f) LR_RETURN_IF_ERROR(keys.get_f32("rope.scale_linear", factor, 0.0f));  // older files
    const std::string scaling_type = scaling ? std::string(*scaling) : (factor > 0.0f ? "linear" : "none");
    if (scaling_type == "linear") {
        if (!(factor > 0.0f)) return out_of_range(file, "rope.scaling.factor must be positive");
        hp.rope_freq_scale = 1.0f / factor;
    } else if (scaling_type != "none") {
        return error(StatusCode::unsupported, file.path() + ": rope scaling type '" + scaling_type + "' is not supported yet");
    }

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

}  // namespace lr
