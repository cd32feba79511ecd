#include "model_presets.h"

#include <array>
#include <cctype>

namespace lr {
namespace {

// NOTE: the hyper-parameters are those of the published config.json files. "tiny" matches
// ../shared/models/tiny (the reference-logit models), whose vocabulary is stories260K's.
constexpr std::array kPresets = {
    ModelPreset{"tiny",
                "llama, n_embd 256, 2 layers, 8/4 heads, n_ff 768, vocab 512 (a few MB)",
                {.arch = ModelArch::llama,
                 .n_vocab = 512,
                 .n_ctx_train = 2048,
                 .n_embd = 256,
                 .n_layer = 2,
                 .n_head = 8,
                 .n_head_kv = 4,
                 .n_ff = 768,
                 .rope_freq_base = 10000.0f,
                 .rms_eps = 1e-5f}},
    ModelPreset{"tiny-qwen2",
                "qwen2, the tiny shape with q/k/v biases",
                {.arch = ModelArch::qwen2,
                 .n_vocab = 512,
                 .n_ctx_train = 2048,
                 .n_embd = 256,
                 .n_layer = 2,
                 .n_head = 8,
                 .n_head_kv = 4,
                 .n_ff = 768,
                 .rope_freq_base = 10000.0f,
                 .rms_eps = 1e-6f,
                 .qkv_bias = true}},
    ModelPreset{"tinyllama-1.1b",
                "TinyLlama 1.1B: llama, n_embd 2048, 22 layers, 32/4 heads, vocab 32000",
                {.arch = ModelArch::llama,
                 .n_vocab = 32000,
                 .n_ctx_train = 2048,
                 .n_embd = 2048,
                 .n_layer = 22,
                 .n_head = 32,
                 .n_head_kv = 4,
                 .n_ff = 5632,
                 .rope_freq_base = 10000.0f,
                 .rms_eps = 1e-5f}},
    ModelPreset{"llama3-8b",
                "Llama 3 8B: llama, n_embd 4096, 32 layers, 32/8 heads, vocab 128256",
                {.arch = ModelArch::llama,
                 .n_vocab = 128256,
                 .n_ctx_train = 8192,
                 .n_embd = 4096,
                 .n_layer = 32,
                 .n_head = 32,
                 .n_head_kv = 8,
                 .n_ff = 14336,
                 .rope_freq_base = 500000.0f,
                 .rms_eps = 1e-5f}},
    ModelPreset{"qwen2.5-0.5b",
                "Qwen2.5 0.5B: qwen2, n_embd 896, 24 layers, 14/2 heads, vocab 151936, tied output",
                {.arch = ModelArch::qwen2,
                 .n_vocab = 151936,
                 .n_ctx_train = 32768,
                 .n_embd = 896,
                 .n_layer = 24,
                 .n_head = 14,
                 .n_head_kv = 2,
                 .n_ff = 4864,
                 .rope_freq_base = 1000000.0f,
                 .rms_eps = 1e-6f,
                 .qkv_bias = true,
                 .tied_output = true}},
    ModelPreset{"qwen3-8b",
                "Qwen3 8B: qwen3, n_embd 4096, 36 layers, 32/8 heads, q/k norms, vocab 151936",
                {.arch = ModelArch::qwen3,
                 .n_vocab = 151936,
                 .n_ctx_train = 40960,
                 .n_embd = 4096,
                 .n_layer = 36,
                 .n_head = 32,
                 .n_head_kv = 8,
                 .n_ff = 12288,
                 .rope_freq_base = 1000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 128}},
    ModelPreset{"gemma3-4b",
                "Gemma 3 4B: gemma3, n_embd 2560, 34 layers, 8/4 heads of 256, 5 of 6 layers sliding (1024), vocab 262208",
                {.arch = ModelArch::gemma3,
                 .n_vocab = 262208,
                 .n_ctx_train = 131072,
                 .n_embd = 2560,
                 .n_layer = 34,
                 .n_head = 8,
                 .n_head_kv = 4,
                 .n_ff = 10240,
                 .rope_freq_base = 1000000.0f,
                 .rms_eps = 1e-6f,
                 .tied_output = true,
                 .n_embd_head = 256,
                 .rope_scale_linear = 8.0f,
                 .sliding_window = 1024,
                 .sliding_pattern = 6,
                 .rope_freq_base_swa = 10000.0f}},
    // The mixtures of experts. "tiny-qwen3moe" and "tiny-gpt-oss" are the shapes of
    // ../shared/models/tiny-2026 (the reference-logit models).
    ModelPreset{"tiny-qwen3moe",
                "qwen3moe, n_embd 128, 2 layers, 4/2 heads of 64, 8 experts of width 32, 2 per token, vocab 512",
                {.arch = ModelArch::qwen3moe,
                 .n_vocab = 512,
                 .n_ctx_train = 1024,
                 .n_embd = 128,
                 .n_layer = 2,
                 .n_head = 4,
                 .n_head_kv = 2,
                 .n_ff = 256,
                 .rope_freq_base = 1000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 64,
                 .n_expert = 8,
                 .n_expert_used = 2,
                 .n_ff_exp = 32}},
    ModelPreset{"tiny-gpt-oss",
                "gpt-oss, n_embd 128, 2 layers, 4/2 heads of 64, 8 experts of width 64, 4 per token, window 32, YaRN x32, vocab 512",
                {.arch = ModelArch::gpt_oss,
                 .n_vocab = 512,
                 .n_ctx_train = 131072,
                 .n_embd = 128,
                 .n_layer = 2,
                 .n_head = 4,
                 .n_head_kv = 2,
                 .n_ff = 64,
                 .rope_freq_base = 150000.0f,
                 .rms_eps = 1e-5f,
                 .qkv_bias = true,
                 .n_embd_head = 64,
                 .sliding_window = 32,
                 .rope_freq_base_swa = 150000.0f,
                 .n_expert = 8,
                 .n_expert_used = 4,
                 .n_ff_exp = 64,
                 .rope_yarn_factor = 32.0f,
                 .n_ctx_orig_yarn = 4096},
                {DType::MXFP4, WeightMix::mxfp4_moe}},
    // The hybrids: three Gated DeltaNet layers to one attention layer. "tiny-qwen35" and
    // "tiny-qwen35moe" are the shapes of ../shared/models/tiny-2026.
    ModelPreset{"tiny-qwen35",
                "qwen35, n_embd 128, 4 layers (3 Gated DeltaNet, 1 attention with 4/2 heads of 64, rope on 16 dims), delta-net 2 q/k "
                "and 4 v heads of 32, n_ff 256, vocab 512",
                {.arch = ModelArch::qwen35,
                 .n_vocab = 512,
                 .n_ctx_train = 1024,
                 .n_embd = 128,
                 .n_layer = 4,
                 .n_head = 4,
                 .n_head_kv = 2,
                 .n_ff = 256,
                 .rope_freq_base = 10000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 64,
                 .n_rot = 16,
                 .full_attention_interval = 4,
                 .ssm_conv_kernel = 4,
                 .ssm_state_size = 32,
                 .ssm_group_count = 2,
                 .ssm_time_step_rank = 4}},
    ModelPreset{"tiny-qwen35moe",
                "qwen35moe, tiny-qwen35 with 8 experts of width 32, 2 per token, and a shared expert of width 64",
                {.arch = ModelArch::qwen35moe,
                 .n_vocab = 512,
                 .n_ctx_train = 1024,
                 .n_embd = 128,
                 .n_layer = 4,
                 .n_head = 4,
                 .n_head_kv = 2,
                 .rope_freq_base = 10000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 64,
                 .n_expert = 8,
                 .n_expert_used = 2,
                 .n_ff_exp = 32,
                 .n_ff_shexp = 64,
                 .n_rot = 16,
                 .full_attention_interval = 4,
                 .ssm_conv_kernel = 4,
                 .ssm_state_size = 32,
                 .ssm_group_count = 2,
                 .ssm_time_step_rank = 4}},
    ModelPreset{"qwen3-30b-a3b",
                "Qwen3 30B-A3B: qwen3moe, n_embd 2048, 48 layers, 32/4 heads of 128, 128 experts of width 768, 8 per token, vocab 151936",
                {.arch = ModelArch::qwen3moe,
                 .n_vocab = 151936,
                 .n_ctx_train = 40960,
                 .n_embd = 2048,
                 .n_layer = 48,
                 .n_head = 32,
                 .n_head_kv = 4,
                 .n_ff = 6144,
                 .rope_freq_base = 1000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 128,
                 .n_expert = 128,
                 .n_expert_used = 8,
                 .n_ff_exp = 768}},
    ModelPreset{"gpt-oss-20b",
                "gpt-oss 20B: n_embd 2880, 24 layers, 64/8 heads of 64, 32 experts of width 2880, 4 per token, MXFP4 experts, "
                "window 128 on every other layer, YaRN x32, vocab 201088",
                {.arch = ModelArch::gpt_oss,
                 .n_vocab = 201088,
                 .n_ctx_train = 131072,
                 .n_embd = 2880,
                 .n_layer = 24,
                 .n_head = 64,
                 .n_head_kv = 8,
                 .n_ff = 2880,
                 .rope_freq_base = 150000.0f,
                 .rms_eps = 1e-5f,
                 .qkv_bias = true,
                 .n_embd_head = 64,
                 .sliding_window = 128,
                 .rope_freq_base_swa = 150000.0f,
                 .n_expert = 32,
                 .n_expert_used = 4,
                 .n_ff_exp = 2880,
                 .rope_yarn_factor = 32.0f,
                 .n_ctx_orig_yarn = 4096},
                {DType::MXFP4, WeightMix::mxfp4_moe}},
    // Qwen3.6 (the Qwen3.5 architecture, config.json of Qwen/Qwen3.6-27B and -35B-A3B): the
    // language model without its vision encoder and multi-token-prediction layer.
    ModelPreset{"qwen3.6-27b",
                "Qwen3.6 27B: qwen35, 26.90B parameters, n_embd 5120, 64 layers (48 Gated DeltaNet with 16 q/k and 48 v heads of 128, "
                "16 attention with 24/4 heads of 256, rope on 64 dims), n_ff 17408, vocab 248320",
                {.arch = ModelArch::qwen35,
                 .n_vocab = 248320,
                 .n_ctx_train = 262144,
                 .n_embd = 5120,
                 .n_layer = 64,
                 .n_head = 24,
                 .n_head_kv = 4,
                 .n_ff = 17408,
                 .rope_freq_base = 10000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 256,
                 .n_rot = 64,
                 .full_attention_interval = 4,
                 .ssm_conv_kernel = 4,
                 .ssm_state_size = 128,
                 .ssm_group_count = 16,
                 .ssm_time_step_rank = 48}},
    ModelPreset{"qwen3.6-35b-a3b",
                "Qwen3.6 35B-A3B: qwen35moe, 34.66B parameters (3.45B per token), n_embd 2048, 40 layers (30 Gated DeltaNet with 16 "
                "q/k and 32 v heads of 128, 10 attention with 16/2 heads of 256, rope on 64 dims), 256 experts of width 512, 8 per "
                "token, a shared expert of width 512, vocab 248320",
                {.arch = ModelArch::qwen35moe,
                 .n_vocab = 248320,
                 .n_ctx_train = 262144,
                 .n_embd = 2048,
                 .n_layer = 40,
                 .n_head = 16,
                 .n_head_kv = 2,
                 .rope_freq_base = 10000000.0f,
                 .rms_eps = 1e-6f,
                 .n_embd_head = 256,
                 .n_expert = 256,
                 .n_expert_used = 8,
                 .n_ff_exp = 512,
                 .n_ff_shexp = 512,
                 .n_rot = 64,
                 .full_attention_interval = 4,
                 .ssm_conv_kernel = 4,
                 .ssm_state_size = 128,
                 .ssm_group_count = 16,
                 .ssm_time_step_rank = 32}},
};

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    }
    return true;
}

Status bad_shape(const std::string & what) { return error(StatusCode::invalid_argument, "model shape: " + what); }

// The Gated DeltaNet layers, with the loader's limits (model_hparams.cpp).
Status validate_delta_net(const ModelShape & s, bool hybrid_family) {
    if (hybrid_family != s.is_hybrid()) {
        return bad_shape(hybrid_family
                             ? std::string(arch_name(s.arch)) + " needs Gated DeltaNet layers (full_attention_interval)"
                             : "only qwen35 and qwen35moe models have Gated DeltaNet layers, not " + std::string(arch_name(s.arch)));
    }
    if (!s.is_hybrid()) return {};
    if (s.ssm_conv_kernel < 2 || s.ssm_conv_kernel > 64 || s.ssm_state_size == 0 || s.ssm_state_size > 1024 || s.ssm_group_count == 0 ||
        s.ssm_time_step_rank == 0) {
        return bad_shape(
            "Gated DeltaNet: ssm_conv_kernel 2 to 64, ssm_state_size 1 to 1024, ssm_group_count and ssm_time_step_rank positive");
    }
    if (s.ssm_time_step_rank % s.ssm_group_count != 0) {
        return bad_shape("ssm_time_step_rank (v heads) " + std::to_string(s.ssm_time_step_rank) +
                         " is not a multiple of ssm_group_count (q/k heads) " + std::to_string(s.ssm_group_count));
    }
    // The attention layer is the last of each period: fewer layers would have none.
    if (s.n_layer < s.full_attention_interval) {
        return bad_shape("a hybrid needs at least full_attention_interval (" + std::to_string(s.full_attention_interval) +
                         ") layers, its first attention layer being the last of them; n_layer is " + std::to_string(s.n_layer));
    }
    return {};
}

}  // namespace

Status validate(const ModelShape & s) {
    // NOTE: mistral3's and phi3's layouts (YaRN keys, fused projections) are not written.
    const bool moe_family = s.arch == ModelArch::qwen3moe || s.arch == ModelArch::gpt_oss || s.arch == ModelArch::qwen35moe;
    const bool hybrid_family = s.arch == ModelArch::qwen35 || s.arch == ModelArch::qwen35moe;
    if (s.arch != ModelArch::llama && s.arch != ModelArch::qwen2 && s.arch != ModelArch::qwen3 && s.arch != ModelArch::gemma3 &&
        !moe_family && !hybrid_family) {
        return bad_shape("make-model writes llama, qwen2, qwen3, gemma3, qwen3moe, gpt-oss, qwen35 and qwen35moe models, not " +
                         std::string(arch_name(s.arch)));
    }
    if (s.sliding_window > 0 && s.arch != ModelArch::gemma3 && s.arch != ModelArch::gpt_oss) {
        return bad_shape("only gemma3 and gpt-oss models have sliding-window layers");
    }
    if (s.arch == ModelArch::gpt_oss && s.sliding_window == 0) return bad_shape("gpt-oss needs a sliding window");
    if (s.n_vocab == 0) return bad_shape("n_vocab must be positive");
    if (s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 || s.n_head_kv == 0 || (s.n_ff == 0 && !moe_family)) {
        return bad_shape("n_embd, n_layer, n_head, n_head_kv and n_ff must be positive");
    }
    if (moe_family != s.is_moe()) {
        return bad_shape(moe_family ? std::string(arch_name(s.arch)) + " needs experts (n_expert)"
                                    : "only qwen3moe, qwen35moe and gpt-oss models have experts, not " + std::string(arch_name(s.arch)));
    }
    LR_RETURN_IF_ERROR(validate_delta_net(s, hybrid_family));
    if (s.is_moe() && (s.n_expert > 512 || s.n_expert_used == 0 || s.n_expert_used > s.n_expert || s.n_ff_exp == 0)) {
        return bad_shape("experts: n_expert at most 512, n_expert_used 1 to n_expert, n_ff_exp positive");
    }
    // The loader's limits (model_hparams.cpp), so that whatever is written also loads.
    if (s.n_layer > 1024 || s.n_head > 4096) return bad_shape("n_layer at most 1024 and n_head at most 4096");
    if (s.n_embd_head == 0 && s.n_embd % s.n_head != 0) {
        return bad_shape("n_embd " + std::to_string(s.n_embd) + " is not a multiple of n_head " + std::to_string(s.n_head));
    }
    if (s.n_head % s.n_head_kv != 0) {
        return bad_shape("n_head " + std::to_string(s.n_head) + " is not a multiple of n_head_kv " + std::to_string(s.n_head_kv));
    }
    if (s.head_dim() % 2 != 0 || s.head_dim() > 1024) {
        return bad_shape("the head size " + std::to_string(s.head_dim()) + " must be even and at most 1024");
    }
    if (s.n_rot % 2 != 0 || s.n_rot > s.head_dim()) {
        return bad_shape("n_rot " + std::to_string(s.n_rot) + " must be even and at most the head size " + std::to_string(s.head_dim()));
    }
    if (s.n_ctx_train == 0) return bad_shape("n_ctx_train must be positive");
    if (!(s.rope_freq_base > 0.0f) || !(s.rms_eps > 0.0f) || !(s.rope_freq_base_swa > 0.0f)) {
        return bad_shape("rope_freq_base, rope_freq_base_swa and rms_eps must be positive");
    }
    if (s.rope_scale_linear < 0.0f || s.rope_yarn_factor < 0.0f || (s.rope_scale_linear > 0.0f && s.rope_yarn_factor > 0.0f)) {
        return bad_shape("rope_scale_linear and rope_yarn_factor must be 0 (none) or positive, not both");
    }
    if (s.rope_yarn_factor > 0.0f && s.n_ctx_orig_yarn == 0) return bad_shape("YaRN needs the original context (n_ctx_orig_yarn)");
    return {};
}

ModelShape dense_counterpart(const ModelShape & moe) {
    if (!moe.is_moe()) return moe;
    ModelShape dense = moe;
    const uint32_t n_ff_active = moe.n_expert_used * moe.n_ff_exp + moe.n_ff_shexp;
    if (moe.arch == ModelArch::gpt_oss) {
        dense.n_expert = 1;
        dense.n_expert_used = 1;
        dense.n_ff_exp = n_ff_active;
        dense.n_ff_shexp = 0;
        return dense;
    }
    dense.arch = moe.arch == ModelArch::qwen35moe ? ModelArch::qwen35 : ModelArch::qwen3;
    dense.n_ff = n_ff_active;
    dense.n_expert = dense.n_expert_used = dense.n_ff_exp = dense.n_ff_shexp = 0;
    return dense;
}

std::span<const ModelPreset> model_presets() { return kPresets; }

const ModelPreset * find_model_preset(std::string_view name) {
    for (const ModelPreset & p : kPresets) {
        if (iequals(p.name, name)) return &p;
    }
    return nullptr;
}

std::string model_preset_names() {
    std::string out;
    for (const ModelPreset & p : kPresets) {
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
}

}  // namespace lr
