#include "random_model_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <new>
#include <span>
#include <thread>

#include "engine/backend/cpu/thread_pool.h"
#include "engine/common/assert.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_features.h"
#include "engine/model/random_model_vocab.h"
#include "engine/quant/quant.h"

namespace lr {
namespace {

constexpr float kWeightStddev = 0.02f;
constexpr float kNormStddev = 0.1f;
constexpr float kBiasStddev = 0.02f;
// A depthwise kernel of 4 taps: PyTorch's default for it, U(+-1/sqrt(4)), has this spread;
// 0.02 would shrink q, k and v thirty-fold before the delta rule.
constexpr float kConvStddev = 0.3f;
// The delta-net decay: ssm_a = -U(1, 16) and dt log-uniform in [1e-3, 1e-1] (Mamba's ranges).
constexpr float kDecayRateMin = 1.0f, kDecayRateMax = 16.0f;
constexpr float kTimeStepMin = 1e-3f, kTimeStepMax = 1e-1f;
// Tensor data is produced in chunks of about this many output bytes: progress and
// cancellation are checked between chunks, threads split the rows of one chunk.

// ---- Random numbers --------------------------------------------------------------------
// splitmix64 (Steele, Lea, Flood): tiny, fast, and every 64-bit seed gives a good stream,
// which is what per-tensor and per-row seeding needs.

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t mix64(uint64_t x) {
    x += kGolden;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
    return h;
}

uint64_t tensor_key(uint64_t seed, std::string_view name) { return mix64(seed ^ mix64(fnv1a64(name))); }

constexpr float kInv24 = 1.0f / float(1u << 24);

float stddev_of(TensorInit init) {
    switch (init) {
        case TensorInit::norm: return kNormStddev;
        case TensorInit::bias: return kBiasStddev;
        case TensorInit::conv: return kConvStddev;
        default: return kWeightStddev;
    }
}

// A delta-net layer's per-head decay parameters: one uniform draw u in (0, 1] each.
void draw_decay_row(uint64_t state, TensorInit init, float * out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        state += kGolden;
        const float u = float((mix64(state) >> 40) + 1) * kInv24;
        if (init == TensorInit::decay_rate) {
            out[i] = -(kDecayRateMin + (kDecayRateMax - kDecayRateMin) * u);
        } else {
            const float dt = kTimeStepMin * std::pow(kTimeStepMax / kTimeStepMin, u);
            out[i] = std::log(std::expm1(dt));  // softplus(out) = dt
        }
    }
}

// Row `row` of a tensor: mean + stddev * N(0, 1), by Box-Muller on one 64-bit draw per
// pair of values (24 bits per uniform: float precision, tails to about 5.8 sigma); the
// decay parameters uniform.
void draw_row(uint64_t key, uint64_t row, TensorInit init, float * out, size_t n) {
    uint64_t state = mix64(key ^ mix64(row));
    if (init == TensorInit::decay_rate || init == TensorInit::time_step_bias) return draw_decay_row(state, init, out, n);
    const float mean = init == TensorInit::norm ? 1.0f : 0.0f;
    const float stddev = stddev_of(init);
    constexpr float kTwoPi = 6.28318530717958647692f;
    for (size_t i = 0; i < n; i += 2) {
        state += kGolden;
        const uint64_t r = mix64(state);
        const float u1 = float((r >> 40) + 1) * kInv24;          // (0, 1]
        const float u2 = float((r >> 16) & 0xFFFFFFu) * kInv24;  // [0, 1)
        const float radius = stddev * std::sqrt(-2.0f * std::log(u1));
        const float angle = kTwoPi * u2;
        out[i] = mean + radius * std::cos(angle);
        if (i + 1 < n) out[i + 1] = mean + radius * std::sin(angle);
    }
}

// ---- Validation --------------------------------------------------------------------------

Status invalid(const std::string & what) { return error(StatusCode::invalid_argument, "make-model: " + what); }

const ModelShape * spec_shape(const RandomModelSpec & spec) {
    if (spec.shape) return &*spec.shape;
    const ModelPreset * preset = find_model_preset(spec.preset);
    return preset ? &preset->shape : nullptr;
}

// ---- Planning ----------------------------------------------------------------------------

// Fallbacks grouped by (wanted, written, row length), naming the tensors generically
// ("blk.*.attn_q.weight") so that a 32-layer model gives a few lines, not a hundred.
struct FallbackGroup {
    DType wanted;
    DType type;
    uint64_t ne0;
    std::vector<std::string> names;
    size_t n_tensors = 0;
};

std::string generic_name(const std::string & name) {
    if (!name.starts_with("blk.")) return name;
    const size_t dot = name.find('.', 4);
    return dot == std::string::npos ? name : "blk.*" + name.substr(dot);
}

class Planner {
public:
    Planner(const ModelShape & shape, const WeightFormat & format, RandomModelPlan & plan) : shape_(shape), format_(format), plan_(plan) {}

    void vector(const std::string & name, uint64_t n, TensorInit init) {
        add({.name = name, .ne0 = n, .ne1 = 1, .type = DType::F32, .init = init});
    }

    // A 2-D weight, or with ne2 > 1 a stack of ne2 experts' matrices.
    void matrix(const std::string & name, uint64_t ne0, uint64_t ne1, WeightRole role, uint32_t il, uint64_t ne2 = 1) {
        const WeightTypeChoice c = choose_weight_type(format_, role, il, shape_.n_layer, ne0, shape_.tied_output);
        if (c.fell_back()) note_fallback(name, c, ne0);
        add({.name = name, .ne0 = ne0, .ne1 = ne1, .ne2 = ne2, .type = c.type, .init = TensorInit::weight});
    }

    // A 2-D tensor llama-quantize keeps in F32: a router, the experts' biases.
    void f32_matrix(const std::string & name, uint64_t ne0, uint64_t ne1, TensorInit init) {
        add({.name = name, .ne0 = ne0, .ne1 = ne1, .type = DType::F32, .init = init});
    }

    void finish() {
        for (const FallbackGroup & g : fallbacks_) {
            std::string names;
            for (const std::string & n : g.names) names += (names.empty() ? "" : ", ") + n;
            plan_.notes.push_back(std::string(dtype_name(g.wanted)) + " -> " + std::string(dtype_name(g.type)) + " for " +
                                  std::to_string(g.n_tensors) + " tensor(s) with rows of " + std::to_string(g.ne0) +
                                  " elements, not a multiple of " + std::to_string(dtype_traits(g.wanted).block_elems) +
                                  " (as llama-quantize falls back): " + names);
        }
    }

private:
    void add(PlannedTensor t) {
        t.n_bytes = row_bytes(t.type, t.ne0) * t.n_rows();
        plan_.n_params += t.n_elements();
        plan_.n_tensor_bytes += t.n_bytes;
        plan_.tensors.push_back(std::move(t));
    }

    void note_fallback(const std::string & name, const WeightTypeChoice & c, uint64_t ne0) {
        auto it = std::find_if(fallbacks_.begin(), fallbacks_.end(),
                               [&](const FallbackGroup & g) { return g.wanted == c.wanted && g.type == c.type && g.ne0 == ne0; });
        if (it == fallbacks_.end()) it = fallbacks_.insert(fallbacks_.end(), FallbackGroup{c.wanted, c.type, ne0, {}});
        ++it->n_tensors;
        const std::string generic = generic_name(name);
        if (std::find(it->names.begin(), it->names.end(), generic) == it->names.end()) it->names.push_back(generic);
    }

    const ModelShape & shape_;
    const WeightFormat & format_;
    RandomModelPlan & plan_;
    std::vector<FallbackGroup> fallbacks_;
};

// A mixture-of-experts FFN: the router, the expert stacks (GGUF ne = [cols, rows, n_expert])
// with gpt-oss's biases, and the shared expert.
void lay_out_experts(Planner & p, const ModelShape & s, const ModelFeatures & f, const std::string & b, uint32_t il) {
    const uint64_t n_embd = s.n_embd, n_ff = s.n_ff_exp, n_expert = s.n_expert;
    p.f32_matrix(b + "ffn_gate_inp.weight", n_embd, n_expert, TensorInit::weight);
    if (f.expert_biases) p.vector(b + "ffn_gate_inp.bias", n_expert, TensorInit::bias);
    p.matrix(b + "ffn_gate_exps.weight", n_embd, n_ff, WeightRole::ffn_gate_exps, il, n_expert);
    if (f.expert_biases) p.f32_matrix(b + "ffn_gate_exps.bias", n_ff, n_expert, TensorInit::bias);
    p.matrix(b + "ffn_up_exps.weight", n_embd, n_ff, WeightRole::ffn_up_exps, il, n_expert);
    if (f.expert_biases) p.f32_matrix(b + "ffn_up_exps.bias", n_ff, n_expert, TensorInit::bias);
    p.matrix(b + "ffn_down_exps.weight", n_ff, n_embd, WeightRole::ffn_down_exps, il, n_expert);
    if (f.expert_biases) p.f32_matrix(b + "ffn_down_exps.bias", n_embd, n_expert, TensorInit::bias);
    if (s.n_ff_shexp > 0) {
        p.vector(b + "ffn_gate_inp_shexp.weight", n_embd, TensorInit::weight);
        p.matrix(b + "ffn_gate_shexp.weight", n_embd, s.n_ff_shexp, WeightRole::ffn_gate, il);
        p.matrix(b + "ffn_up_shexp.weight", n_embd, s.n_ff_shexp, WeightRole::ffn_up, il);
        p.matrix(b + "ffn_down_shexp.weight", s.n_ff_shexp, n_embd, WeightRole::ffn_down, il);
    }
}

// A Gated DeltaNet layer's mixer, in place of attention (the tensors load_delta_net reads).
// Its projections take the attention's roles in the weight mixes: attn_qkv, attn_gate and
// the gates' inputs as attn_q, ssm_out as attn_output.
void lay_out_delta_net(Planner & p, const ModelShape & s, const std::string & b, uint32_t il) {
    const uint64_t n_embd = s.n_embd, channels = s.delta_net_channels(), inner = s.ssm_inner_size(), n_v = s.ssm_time_step_rank;
    p.matrix(b + "attn_qkv.weight", n_embd, channels, WeightRole::attn_q, il);
    p.matrix(b + "attn_gate.weight", n_embd, inner, WeightRole::attn_q, il);
    p.f32_matrix(b + "ssm_conv1d.weight", s.ssm_conv_kernel, channels, TensorInit::conv);  // llama-quantize keeps it F32
    p.vector(b + "ssm_dt.bias", n_v, TensorInit::time_step_bias);
    p.vector(b + "ssm_a", n_v, TensorInit::decay_rate);
    p.matrix(b + "ssm_beta.weight", n_embd, n_v, WeightRole::attn_q, il);
    p.matrix(b + "ssm_alpha.weight", n_embd, n_v, WeightRole::attn_q, il);
    p.vector(b + "ssm_norm.weight", s.ssm_state_size, TensorInit::norm);
    p.matrix(b + "ssm_out.weight", inner, n_embd, WeightRole::attn_output, il);
}

// An attention layer's projections and their norms, biases and sinks.
void lay_out_attention(Planner & p, const ModelShape & s, const ModelFeatures & f, const std::string & b, uint32_t il) {
    const uint64_t n_embd = s.n_embd, n_embd_q = s.n_embd_q(), n_embd_kv = s.n_embd_kv();
    const bool qkv_bias = s.qkv_bias || f.qkv_biases;
    // qwen35's attn_q holds each head's q and its output gate.
    p.matrix(b + "attn_q.weight", n_embd, n_embd_q * (f.attn_output_gate ? 2 : 1), WeightRole::attn_q, il);
    if (qkv_bias) p.vector(b + "attn_q.bias", n_embd_q, TensorInit::bias);
    p.matrix(b + "attn_k.weight", n_embd, n_embd_kv, WeightRole::attn_k, il);
    if (qkv_bias) p.vector(b + "attn_k.bias", n_embd_kv, TensorInit::bias);
    p.matrix(b + "attn_v.weight", n_embd, n_embd_kv, WeightRole::attn_v, il);
    if (qkv_bias) p.vector(b + "attn_v.bias", n_embd_kv, TensorInit::bias);
    if (f.qk_norm) {
        p.vector(b + "attn_q_norm.weight", s.head_dim(), TensorInit::norm);
        p.vector(b + "attn_k_norm.weight", s.head_dim(), TensorInit::norm);
    }
    p.matrix(b + "attn_output.weight", n_embd_q, n_embd, WeightRole::attn_output, il);
    if (f.expert_biases) p.vector(b + "attn_output.bias", n_embd, TensorInit::bias);  // gpt-oss biases every projection
    if (f.attn_sinks) p.vector(b + "attn_sinks.weight", s.n_head, TensorInit::norm);
    if (f.post_norms) p.vector(b + "post_attention_norm.weight", n_embd, TensorInit::norm);
}

// The tensors in the order llama.cpp's converter writes them; each family's own tensors
// (q/k norms, biases, post-norms, sinks, experts, delta-net mixers) as its features say its
// loader requires.
void lay_out_tensors(const ModelShape & s, const WeightFormat & format, RandomModelPlan & plan) {
    Planner p(s, format, plan);
    const ModelFeatures f = model_features(ModelHParams{.arch = s.arch});
    const uint64_t n_embd = s.n_embd;
    p.matrix("token_embd.weight", n_embd, s.n_vocab, WeightRole::token_embd, 0);
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        p.vector(b + "attn_norm.weight", n_embd, TensorInit::norm);
        if (s.is_recurrent(il)) {
            lay_out_delta_net(p, s, b, il);
        } else {
            lay_out_attention(p, s, f, b, il);
        }
        p.vector(b + (f.ffn_norm_named_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"), n_embd, TensorInit::norm);
        if (s.is_moe()) {
            lay_out_experts(p, s, f, b, il);
        } else {
            p.matrix(b + "ffn_gate.weight", n_embd, s.n_ff, WeightRole::ffn_gate, il);
            p.matrix(b + "ffn_up.weight", n_embd, s.n_ff, WeightRole::ffn_up, il);
            p.matrix(b + "ffn_down.weight", s.n_ff, n_embd, WeightRole::ffn_down, il);
        }
        if (f.post_norms) p.vector(b + "post_ffw_norm.weight", n_embd, TensorInit::norm);
    }
    p.vector("output_norm.weight", n_embd, TensorInit::norm);
    if (!s.tied_output) p.matrix("output.weight", n_embd, s.n_vocab, WeightRole::output, 0);
    p.finish();
}

bool is_float_format(const WeightFormat & f) {
    return f.mix == WeightMix::pure && (f.type == DType::F32 || f.type == DType::F16 || f.type == DType::BF16);
}

// The Gated DeltaNet keys, and the rope sections llama.cpp requires of qwen35 files: the
// converter's mrope_section ([11, 11, 10] for 64 rotated dimensions), padded to four. With
// text positions every section turns alike, so only their sum, n_rot / 2 pairs, matters.
void add_delta_net_metadata(gguf::GgufWriter & w, const ModelShape & s) {
    const std::string arch(arch_name(s.arch));
    w.set_uint32(arch + ".ssm.conv_kernel", s.ssm_conv_kernel);
    w.set_uint32(arch + ".ssm.state_size", s.ssm_state_size);
    w.set_uint32(arch + ".ssm.group_count", s.ssm_group_count);
    w.set_uint32(arch + ".ssm.time_step_rank", s.ssm_time_step_rank);
    w.set_uint32(arch + ".ssm.inner_size", s.ssm_inner_size());
    w.set_uint32(arch + ".full_attention_interval", s.full_attention_interval);
    const int32_t n_pairs = int32_t(s.rope_dims() / 2), first = (n_pairs + 2) / 3, second = std::min(first, n_pairs - first);
    w.set_int32_array(arch + ".rope.dimension_sections", {first, second, n_pairs - first - second, 0});
}

// Every key model_hparams.cpp reads, plus llama.cpp's general.file_type.
void add_model_metadata(gguf::GgufWriter & w, const RandomModelPlan & plan, uint64_t seed) {
    const ModelShape & s = plan.shape;
    const std::string arch(arch_name(s.arch));
    w.set_string("general.architecture", arch);
    w.set_string("general.name", plan.name);
    w.set_string("general.description",
                 "random weights (Longread make-model, seed " + std::to_string(seed) + "): benchmarks and tests, not a trained model");
    w.set_uint32("general.file_type", plan.file_type);
    if (!is_float_format(plan.weights)) w.set_uint32("general.quantization_version", 2);
    w.set_uint32(arch + ".vocab_size", s.n_vocab);
    w.set_uint32(arch + ".context_length", s.n_ctx_train);
    w.set_uint32(arch + ".embedding_length", s.n_embd);
    w.set_uint32(arch + ".block_count", s.n_layer);
    if (s.n_ff > 0) w.set_uint32(arch + ".feed_forward_length", s.n_ff);  // qwen35moe files have none
    w.set_uint32(arch + ".attention.head_count", s.n_head);
    w.set_uint32(arch + ".attention.head_count_kv", s.n_head_kv);
    w.set_uint32(arch + ".rope.dimension_count", s.rope_dims());
    w.set_float32(arch + ".rope.freq_base", s.rope_freq_base);
    w.set_float32(arch + ".attention.layer_norm_rms_epsilon", s.rms_eps);
    if (s.n_embd_head != 0) {
        w.set_uint32(arch + ".attention.key_length", s.n_embd_head);
        w.set_uint32(arch + ".attention.value_length", s.n_embd_head);
    }
    if (s.rope_scale_linear > 0.0f) {
        w.set_string(arch + ".rope.scaling.type", "linear");
        w.set_float32(arch + ".rope.scaling.factor", s.rope_scale_linear);
    }
    if (s.rope_yarn_factor > 0.0f) {
        // The keys convert_hf_to_gguf writes for gpt-oss.
        w.set_string(arch + ".rope.scaling.type", "yarn");
        w.set_float32(arch + ".rope.scaling.factor", s.rope_yarn_factor);
        w.set_uint32(arch + ".rope.scaling.original_context_length", s.n_ctx_orig_yarn);
        w.set_float32(arch + ".rope.scaling.yarn_beta_fast", 32.0f);
        w.set_float32(arch + ".rope.scaling.yarn_beta_slow", 1.0f);
    }
    if (s.sliding_window > 0) {
        w.set_uint32(arch + ".attention.sliding_window", s.sliding_window);
        // gpt-oss files carry neither a pattern (every other layer) nor a base of their own.
        if (s.arch == ModelArch::gemma3) {
            w.set_uint32(arch + ".attention.sliding_window_pattern", s.sliding_pattern);
            w.set_float32(arch + ".rope.freq_base_swa", s.rope_freq_base_swa);
        }
    }
    if (s.is_hybrid()) add_delta_net_metadata(w, s);
    if (s.is_moe()) {
        w.set_uint32(arch + ".expert_count", s.n_expert);
        w.set_uint32(arch + ".expert_used_count", s.n_expert_used);
        w.set_uint32(arch + ".expert_feed_forward_length", s.n_ff_exp);
        if (s.n_ff_shexp > 0) w.set_uint32(arch + ".expert_shared_feed_forward_length", s.n_ff_shexp);
    }
}

// ---- Writing -----------------------------------------------------------------------------

// Produces tensor data for GgufWriter: rows drawn and quantized in parallel, chunk by chunk.
class TensorProducer {
public:
    TensorProducer(const RandomModelPlan & plan, const RandomModelSpec & spec, std::stop_token stop, int n_threads)
        : plan_(plan), spec_(spec), stop_(std::move(stop)), pool_(n_threads), scratch_(size_t(n_threads)) {}

    // Rows [first_row, ...) of tensor `index`, as many as `dst` holds.
    Status fill(size_t index, uint64_t first_row, std::span<uint8_t> dst) {
        const PlannedTensor & t = plan_.tensors[index];
        const uint64_t key = tensor_key(spec_.seed, t.name);
        const size_t row_size = row_bytes(t.type, t.ne0);
        const uint64_t n_rows = dst.size() / row_size;
        LR_ASSERT(first_row + n_rows <= t.n_rows() && n_rows * row_size == dst.size());
        if (stop_.stop_requested()) return error(StatusCode::cancelled, "make-model: cancelled while writing " + t.name);
        for (std::vector<float> & row : scratch_) row.resize(t.ne0);  // here: workers must not allocate
        pool_.run([&](int ith, int nth) {
            std::vector<float> & row = scratch_[size_t(ith)];
            for (uint64_t r = uint64_t(ith); r < n_rows; r += uint64_t(nth)) {
                draw_row(key, first_row + r, t.init, row.data(), row.size());
                quant::quantize_row(t.type, row.data(), dst.data() + r * row_size, t.ne0);
            }
        });
        bytes_done_ += dst.size();
        if (spec_.progress) spec_.progress(bytes_done_, plan_.n_tensor_bytes);
        return {};
    }

private:
    const RandomModelPlan & plan_;
    const RandomModelSpec & spec_;
    std::stop_token stop_;
    ThreadPool pool_;
    std::vector<std::vector<float>> scratch_;  // [thread][ne0]
    uint64_t bytes_done_ = 0;
};

}  // namespace

std::vector<uint64_t> PlannedTensor::dims() const {
    if (is_vector()) return {ne0};
    if (ne2 == 1) return {ne0, ne1};
    return {ne0, ne1, ne2};
}

Status validate(const RandomModelSpec & spec) {
    if (!spec.shape && !find_model_preset(spec.preset)) {
        return invalid("unknown model preset '" + spec.preset + "' (presets: " + model_preset_names() + ")");
    }
    if (spec.shape) LR_RETURN_IF_ERROR(validate(*spec.shape).with_context("make-model"));
    if (!is_writable(spec.weights)) {
        return error(StatusCode::unsupported,
                     "make-model: weight type " + why_not_writable(spec.weights) + " (types: " + writable_weight_format_names() + ")");
    }
    if (spec.output_path.empty()) return invalid("no output path given");
    std::error_code ec;
    if (std::filesystem::is_directory(spec.output_path, ec)) {
        return invalid("output path '" + spec.output_path + "' is a directory; give a file name such as model.gguf");
    }
    const std::filesystem::path parent = std::filesystem::path(spec.output_path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
        return error(StatusCode::not_found, "make-model: the directory of '" + spec.output_path + "' does not exist");
    }
    if (spec.vocab_from.empty() && spec_shape(spec)->n_vocab < ByteVocab::kMinTokens) {
        return invalid("the built-in vocabulary needs at least " + std::to_string(ByteVocab::kMinTokens) + " tokens, the shape has " +
                       std::to_string(spec_shape(spec)->n_vocab) + " (give a vocabulary file instead)");
    }
    if (!spec.vocab_from.empty() && std::filesystem::equivalent(spec.vocab_from, spec.output_path, ec)) {
        return invalid("the output path is the vocabulary file '" + spec.vocab_from + "'");
    }
    if (spec.n_threads < 0) return invalid("n_threads must be 0 (every core) or positive");
    return {};
}

Result<RandomModelPlan> plan_random_model(const RandomModelSpec & spec) {
    LR_RETURN_IF_ERROR(validate(spec));
    RandomModelPlan plan;
    plan.shape = *spec_shape(spec);
    plan.weights = spec.weights;
    plan.file_type = llama_file_type(spec.weights);
    const std::string shape_name = spec.shape ? "custom" : std::string(find_model_preset(spec.preset)->name);
    plan.name = spec.name.empty() ? shape_name + "-random-" + weight_format_name(spec.weights) : spec.name;
    if (!spec.vocab_from.empty()) {
        LR_ASSIGN_OR_RETURN(gguf::GgufFile vocab, gguf::GgufFile::open(spec.vocab_from));
        LR_ASSIGN_OR_RETURN(uint32_t n_tokens, count_tokens(vocab));
        if (n_tokens != plan.shape.n_vocab) {
            plan.notes.push_back("vocabulary: " + std::to_string(n_tokens) + " tokens from " + spec.vocab_from + " (instead of the " +
                                 shape_name + " shape's " + std::to_string(plan.shape.n_vocab) + ")");
        }
        plan.shape.n_vocab = n_tokens;
    }
    lay_out_tensors(plan.shape, plan.weights, plan);
    return plan;
}

Status write_random_model(const RandomModelSpec & spec, std::stop_token stop) {
    LR_ASSIGN_OR_RETURN(RandomModelPlan plan, plan_random_model(spec));

    gguf::GgufWriter writer;
    add_model_metadata(writer, plan, spec.seed);
    if (spec.vocab_from.empty()) {
        add_byte_vocab(writer, plan.shape.n_vocab);
    } else {
        // The token count was read by the plan; the file could have changed since.
        LR_ASSIGN_OR_RETURN(gguf::GgufFile vocab, gguf::GgufFile::open(spec.vocab_from));
        LR_ASSIGN_OR_RETURN(uint32_t n_tokens, copy_tokenizer_keys(vocab, writer));
        if (n_tokens != plan.shape.n_vocab) return error(StatusCode::io_error, spec.vocab_from + ": changed while make-model read it");
    }
    for (const PlannedTensor & t : plan.tensors) {
        writer.add_tensor(t.name, t.type, t.dims());
    }

    const int n_threads = spec.n_threads > 0 ? spec.n_threads : std::max(1, int(std::thread::hardware_concurrency()));
    TensorProducer producer(plan, spec, std::move(stop), n_threads);
    return writer
        .write_file(spec.output_path,
                    [&](size_t index, uint64_t first_row, std::span<uint8_t> dst) { return producer.fill(index, first_row, dst); })
        .with_context("make-model");
}

}  // namespace lr
