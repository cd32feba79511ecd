#include "engine.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/assert.h"
#include "engine/model/layer_weight_bytes.h"
#include "engine/model/model.h"
#include "engine/runtime/chat_prompt.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/model_file_summary.h"
#include "engine/runtime/prompt_memo.h"
#include "engine/runtime/reply_generator.h"
#include "engine/runtime/session.h"
#include "engine/runtime/summarizer.h"
#include "kvcache/kv_health.h"
#include "resources/bundled_model.h"

namespace lr {
namespace {

std::string backend_description(const Backend & backend) {
    if (backend.kind() == BackendKind::cuda) return "CUDA " + backend.name();
    const int threads = static_cast<const CpuBackend &>(backend).n_threads();
    return threads == 1 ? std::string("CPU, 1 thread") : "CPU, " + std::to_string(threads) + " threads";
}

ModelInfo describe(const Model & model, const Backend & backend, const std::string & path) {
    const ModelHParams & hp = model.hparams();
    return {.path = path,
            .name = hp.name,
            .architecture = hp.arch_name,
            .quantization = quantization_name(model.file()),
            .chat_template = std::string(chat::chat_family_name(model.chat_template().family())),
            .chat_template_builtin = model.chat_template().is_builtin(),
            .thinking_switch = thinking_choice_matters(model, {.enabled = true}, {.enabled = false}),
            .reasoning_effort = thinking_choice_matters(model, {.effort = "low"}, {.effort = "high"}),
            .tool_call_format = std::string(chat::tool_call_format_name(tool_call_format(model))),
            .backend = backend_description(backend),
            .file_bytes = model.file().file_size(),
            .n_ctx_train = hp.n_ctx_train,
            .n_layer = hp.n_layer,
            .n_vocab = hp.n_vocab,
            .shape = memory_shape(model)};
}

// Tokens kept free after a conversation for the next question and its answer.
uint32_t reserve_for(uint32_t n_ctx) { return std::min<uint32_t>(512, n_ctx / 4); }

}  // namespace

struct Engine::Impl {
    // Declared first, destroyed last: the model and the session run on it. Shared: the
    // model handed out by model() keeps it alive (the app's server may outlive a load()).
    std::shared_ptr<Backend> backend;
    std::optional<GpuOffloadPlan> gpu_plan;
    std::string backend_note;
    std::shared_ptr<const Model> model;
    ModelInfo info;
    std::unique_ptr<Session> session;
    SessionOptions session_options;
    bool observe_attention = false;
    // The session cache's health monitor, made with the session, and when it last ran.
    std::unique_ptr<KvHealthMonitor> health;
    std::chrono::steady_clock::time_point last_health{};
    PromptMemo memo;

    // What the session was last made to hold of a document (prefill, reply): the tokens
    // [first, end) of its prompt spell it. Cleared by anything else that syncs the session.
    struct HeldDocument {
        std::string title;
        std::string text;
        PromptTokens prompt;
    };
    std::optional<HeldDocument> held;

    Status need_session() const {
        if (!session) return error(StatusCode::not_found, "no session: load a model and set the session options first");
        return {};
    }
    // Syncs the session to `prompt` and remembers the document it holds.
    Status hold(const Conversation & conversation, PromptTokens prompt, const ProgressFn & progress, std::stop_token stop) {
        held.reset();
        Status s = session->sync(prompt.encoded.tokens, progress, stop);
        if (conversation.has_document()) held = HeldDocument{conversation.document_title, conversation.document_text, std::move(prompt)};
        return s;
    }
};

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

Result<ModelInfo> Engine::load(const LoadParams & params, std::stop_token stop) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    Impl & m = *impl_;
    m.held.reset();
    m.session.reset();
    m.model.reset();
    m.info = {};
    m.memo.clear();
    m.backend.reset();
    m.gpu_plan.reset();
    m.backend_note.clear();
    if (stop.stop_requested()) return error(StatusCode::cancelled, "stopped");
    const std::optional<BackendChoice> choice = backend_choice_from_name(params.backend);
    if (!choice) return error(StatusCode::invalid_argument, "unknown backend '" + params.backend + "' (auto, cpu, cuda)");
    const std::optional<CpuIsa> isa = cpu_isa_from_name(params.cpu_isa);
    if (!isa) return error(StatusCode::invalid_argument, "unknown CPU ISA '" + params.cpu_isa + "' (best, avx512, avx2, scalar)");
    const bool bundled = params.path == kBundledModelName;
    BackendOptions options{.choice = *choice, .n_threads = params.n_threads, .cpu_isa = *isa, .gpu_layers = params.gpu_layers};
    LayerWeightBytes weight_bytes;
    if (*choice != BackendChoice::cpu) {
        // The layer sizes, for the GPU's share of the weights. A file that does not open is
        // reported by Model::load below.
        Result<gguf::GgufFile> file = bundled ? gguf::GgufFile::parse(bundled_model_bytes(), kBundledModelName)
                                              : gguf::GgufFile::open(params.path);
        if (file.ok()) {
            weight_bytes = layer_weight_bytes(*file, cuda_weight_bytes);
            options.weights = &weight_bytes;
        }
    }
    BackendSelection selection = create_backend(options);
    m.backend = std::move(selection.backend);
    m.gpu_plan = selection.plan;
    m.backend_note = selection.note;
    LR_ASSIGN_OR_RETURN(std::shared_ptr<const Model> loaded,
                        bundled ? Model::load_from_memory(bundled_model_bytes(), kBundledModelName, *m.backend)
                                : Model::load(params.path, *m.backend));
    // The model, owning its backend too (destroyed after it).
    struct Owned {
        std::shared_ptr<Backend> backend;
        std::shared_ptr<const Model> model;
    };
    auto owned = std::make_shared<Owned>(Owned{m.backend, std::move(loaded)});
    m.model = std::shared_ptr<const Model>(owned, owned->model.get());
    m.info = describe(*m.model, *m.backend, params.path);
    m.info.backend_note = m.backend_note;
    m.info.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return m.info;
}

bool Engine::has_model() const { return impl_->model != nullptr; }
const ModelInfo & Engine::model_info() const { return impl_->info; }
const std::string & Engine::backend_note() const { return impl_->backend_note; }

MachinePlan Engine::plan_memory(uint32_t n_ctx, uint32_t chunk_tokens, const KvSettings & kv) const {
    const Impl & m = *impl_;
    LR_ASSERT(m.model);
    MachinePlan out;
    out.kv_dir = resolve_kv_dir(kv);
    MachineMemory machine = probe_machine_memory(out.kv_dir);
    machine.free_vram_bytes = m.backend->device_memory().free_bytes;
    out.weights_on_device = m.backend->kind() == BackendKind::cuda;
    out.capacities = resolve_capacities(kv, machine, m.model->weights().n_bytes, out.weights_on_device);
    ModelMemoryShape shape = memory_shape(*m.model);
    shape.observed_attention = m.observe_attention;
    out.plan = lr::plan_memory(shape, n_ctx, chunk_tokens, kv, out.capacities);
    return out;
}

Status Engine::use_session(const SessionOptions & options) {
    Impl & m = *impl_;
    if (!m.model) return error(StatusCode::not_found, "no model is loaded: open a model first");
    if (m.session && same_session(options, m.session_options)) {
        m.session_options = options;
        return {};
    }
    m.held.reset();
    m.health.reset();
    m.session.reset();
    LR_ASSIGN_OR_RETURN(m.session,
                        Session::create(m.model, {.n_ctx = options.n_ctx, .chunk_tokens = options.chunk_tokens, .kv = options.kv}));
    m.session->kv_cache().observe_attention(m.observe_attention);
    m.session_options = options;
    m.health = std::make_unique<KvHealthMonitor>(system_health_probe(m.backend.get()));
    return check_health(true);
}

Status Engine::check_health(bool now) {
    Impl & m = *impl_;
    if (!m.session || !m.health) return {};
    const auto t = std::chrono::steady_clock::now();
    if (!now && t - m.last_health < std::chrono::milliseconds(KvHealthMonitor::kIntervalMs)) return {};
    m.last_health = t;
    {
        std::lock_guard turn(m.model->backend_turn());
        m.health->check(m.session->kv_cache());
    }
    return m.session->recompute_lost();
}

bool Engine::has_session() const { return impl_->session != nullptr; }

Result<ContextMeasure> Engine::measure(const Conversation & conversation) {
    Impl & m = *impl_;
    LR_RETURN_IF_ERROR(m.need_session());
    const PromptTokens prompt = m.memo.tokens(*m.model, conversation, {}, false);
    ContextMeasure c;
    c.document_tokens = prompt.document_tokens();
    c.prompt_tokens = uint32_t(prompt.encoded.tokens.size());
    c.context_limit = m.session->n_ctx();
    c.reserve_tokens = reserve_for(c.context_limit);
    c.fits = uint64_t(c.prompt_tokens) + c.reserve_tokens <= c.context_limit;
    return c;
}

Status Engine::prefill(const Conversation & conversation, const ProgressFn & progress, std::stop_token stop) {
    Impl & m = *impl_;
    LR_RETURN_IF_ERROR(m.need_session());
    PromptTokens prompt = m.memo.tokens(*m.model, conversation, {}, false);
    if (prompt.encoded.tokens.size() >= m.session->n_ctx()) {
        return error(StatusCode::context_full, "the conversation takes " + std::to_string(prompt.encoded.tokens.size()) +
                                                   " tokens and the context holds " + std::to_string(m.session->n_ctx()));
    }
    return m.hold(conversation, std::move(prompt), progress, stop);
}

Result<GenerateResult> Engine::reply(const Conversation & conversation, std::string_view user_text, const ReplyParams & params,
                                     const ProgressFn & progress, const TokenSink & sink, std::stop_token stop) {
    Impl & m = *impl_;
    LR_RETURN_IF_ERROR(m.need_session());
    PromptTokens prompt = m.memo.tokens(*m.model, conversation, user_text, true);
    const size_t n_prompt = prompt.encoded.tokens.size();
    // The streaming policy keeps a window and runs past the context; the others cannot.
    if (n_prompt >= m.session->n_ctx() && m.session_options.kv.policy != KvPolicy::streaming) {
        return error(StatusCode::context_full, "the conversation needs " + std::to_string(n_prompt) + " tokens but the context holds " +
                                                   std::to_string(m.session->n_ctx()) + ": " + params.when_full);
    }
    Status s = m.hold(conversation, std::move(prompt), progress, stop);
    if (s.code() == StatusCode::cancelled) return GenerateResult{.reason = StopReason::cancelled};
    LR_RETURN_IF_ERROR(s);
    return generate_reply(*m.session, params.generate, params.thinking_sink, sink, stop);
}

Result<SummaryResult> Engine::summarize(std::string_view text, const SummarizeParams & params, const SummaryProgressFn & progress,
                                        const TokenSink & sink, std::stop_token stop) {
    Impl & m = *impl_;
    LR_RETURN_IF_ERROR(m.need_session());
    m.held.reset();
    return lr::summarize(*m.session, text, params, progress, sink, stop);
}

SessionSnapshot Engine::snapshot() const {
    const Impl & m = *impl_;
    if (!m.session) return {};
    return {.has_session = true,
            .kv = m.session->kv_stats(),
            .context_used = uint32_t(m.session->tokens().size()),
            .context_limit = m.session->n_ctx()};
}

DocumentRetention Engine::retention(const Conversation & conversation) const {
    const Impl & m = *impl_;
    DocumentRetention r;
    if (!m.session || !m.held || !conversation.has_document() || m.held->title != conversation.document_title ||
        m.held->text != conversation.document_text) {
        return r;
    }
    const PromptTokens & p = m.held->prompt;
    const std::vector<int32_t> & held = m.session->tokens();
    // A stopped read holds only the chunks it finished.
    r.in_context = p.document_tokens() > 0 && held.size() >= p.end_document_token;
    if (!r.in_context) return r;
    const size_t size = conversation.document_text.size();
    for (size_t i = p.first_document_token; i < p.end_document_token; ++i) r.spans.push_back(p.document_span(i, size));
    r.kept.assign(r.spans.size(), 1.0f);
    // The cache's per-position retention; streaming's renumbering detaches positions from
    // tokens, and then the document counts as kept whole.
    const std::vector<float> kept = m.session->retention();
    if (kept.size() != held.size()) return r;
    std::copy(kept.begin() + std::ptrdiff_t(p.first_document_token), kept.begin() + std::ptrdiff_t(p.end_document_token), r.kept.begin());
    r.per_position = true;
    return r;
}

void Engine::observe_attention(bool on) {
    impl_->observe_attention = on;
    if (impl_->session) impl_->session->kv_cache().observe_attention(on);
}

AttentionMass Engine::attention(const Conversation & conversation) const {
    const Impl & m = *impl_;
    if (!m.session || !m.held || !conversation.has_document() || m.held->title != conversation.document_title ||
        m.held->text != conversation.document_text) {
        return {};
    }
    const PromptTokens & p = m.held->prompt;
    const AttentionMass all = m.session->attention();
    // Positions are the session's tokens unless streaming renumbered them.
    if (all.n_positions != m.session->tokens().size()) return {};
    return attention_slice(all, uint32_t(p.first_document_token), uint32_t(p.end_document_token));
}

size_t Engine::documents_tokenized() const { return impl_->memo.documents_tokenized(); }

std::shared_ptr<const Model> Engine::model() const { return impl_->model; }
Backend & Engine::backend() const { return *impl_->backend; }
const GpuOffloadPlan * Engine::gpu_plan() const { return impl_->gpu_plan ? &*impl_->gpu_plan : nullptr; }
Session * Engine::session() { return impl_->session.get(); }

}  // namespace lr
