#pragma once
// Named model shapes for random-weight models (make-model): the hyper-parameters of
// well-known models, so benchmarks and users get files of realistic size and speed
// without downloading anything.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/model/model_hparams.h"
#include "engine/model/weight_mix.h"

namespace lr {

// The shape of a model of the families make-model writes (llama, qwen2, qwen3, gemma3,
// qwen3moe, gpt-oss, and the hybrids qwen35, qwen35moe): everything needed to lay out its
// tensors and write the metadata the loader reads (model_hparams.cpp). Each family's own
// tensors (norms, biases, sinks, the attention's output gate) follow from its architecture
// (model_features.h).
struct ModelShape {
    ModelArch arch = ModelArch::llama;
    uint32_t n_vocab = 0;  // replaced by the token count when a vocabulary is copied
    uint32_t n_ctx_train = 2048;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_ff = 0;  // the dense FFN (mixtures of experts write it as feed_forward_length)
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;
    bool qkv_bias = false;           // attn_q/k/v.bias (qwen2, gpt-oss)
    bool tied_output = false;        // no output.weight: the logits reuse token_embd
    uint32_t n_embd_head = 0;        // attention.key_length = value_length; 0: n_embd / n_head
    float rope_scale_linear = 0.0f;  // rope.scaling linear with this factor (0: none)
    // Sliding-window layers (gemma3, gpt-oss): the window, the period whose last layer is
    // global (gemma3; gpt-oss has none: every other layer), and the sliding layers' rope base.
    uint32_t sliding_window = 0;
    uint32_t sliding_pattern = 0;
    float rope_freq_base_swa = 10000.0f;
    // Mixtures of experts (qwen3moe, gpt-oss): experts per layer, chosen per token, their
    // width; a shared expert's width (0: none).
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_exp = 0;
    uint32_t n_ff_shexp = 0;
    // YaRN (gpt-oss): the factor and the original context (0: none).
    float rope_yarn_factor = 0.0f;
    uint32_t n_ctx_orig_yarn = 0;
    // The dimensions of a head that rope turns (0: all of them); qwen35's partial rope.
    uint32_t n_rot = 0;
    // Gated DeltaNet layers (qwen35, qwen35moe; 0: none): every full_attention_interval-th
    // layer is attention, the others recurrent, with ssm_group_count q/k heads and
    // ssm_time_step_rank v heads, all ssm_state_size wide, and a causal convolution
    // ssm_conv_kernel tokens wide.
    uint32_t full_attention_interval = 0;
    uint32_t ssm_conv_kernel = 0;
    uint32_t ssm_state_size = 0;
    uint32_t ssm_group_count = 0;
    uint32_t ssm_time_step_rank = 0;

    uint32_t head_dim() const { return n_embd_head != 0 ? n_embd_head : n_head == 0 ? 0 : n_embd / n_head; }
    uint32_t n_embd_q() const { return n_head * head_dim(); }
    uint32_t n_embd_kv() const { return n_head_kv * head_dim(); }
    bool is_moe() const { return n_expert > 0; }
    uint32_t rope_dims() const { return n_rot != 0 ? n_rot : head_dim(); }
    bool is_hybrid() const { return full_attention_interval > 0; }
    bool is_recurrent(uint32_t il) const { return is_hybrid() && (il + 1) % full_attention_interval != 0; }
    uint32_t ssm_inner_size() const { return ssm_state_size * ssm_time_step_rank; }  // v heads x head_v_dim
    // A delta-net layer's convolution channels: [q | k | v] of every head.
    uint32_t delta_net_channels() const { return 2 * ssm_group_count * ssm_state_size + ssm_inner_size(); }
};

// Checks that the shape can be written and loaded (sizes non-zero, heads divide the
// embedding, an even head size, GQA groups whole, experts where the family has them and
// nowhere else, delta-net layers in the hybrids and nowhere else, with at least one
// attention layer). invalid_argument names the field.
Status validate(const ModelShape & shape);

// The dense model of a mixture of experts' active size, for benchmarks: each layer's
// experts become one FFN as wide as the experts a token uses (n_expert_used x n_ff_exp,
// plus the shared expert), the rest unchanged. qwen3moe becomes qwen3 and qwen35moe qwen35
// (the shared expert's sigmoid gate goes with it); gpt-oss, which has no dense form, keeps
// its layout with a single expert that every token uses. A dense shape is returned as it is.
ModelShape dense_counterpart(const ModelShape & moe);

struct ModelPreset {
    std::string_view name;         // "tinyllama-1.1b"
    std::string_view description;  // one line for help text
    ModelShape shape;
    WeightFormat weights{};  // make-model's type when none is given (the published files')
};

// Every preset, in the order help text lists them.
std::span<const ModelPreset> model_presets();

// The preset called `name` (exact, case-insensitive); nullptr when there is none.
const ModelPreset * find_model_preset(std::string_view name);

// "tiny, tiny-qwen2, tinyllama-1.1b, ..." for help text and error messages.
std::string model_preset_names();

}  // namespace lr
