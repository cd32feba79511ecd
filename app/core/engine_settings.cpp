#include "engine_settings.h"

#include <QJsonValue>

#include <algorithm>

#include "engine/backend/backend_factory.h"

namespace lr::app {
namespace {

double number(const QJsonObject & json, const char * key, double fallback) {
    const QJsonValue v = json.value(QLatin1String(key));
    return v.isDouble() ? v.toDouble() : fallback;
}

uint32_t count(const QJsonObject & json, const char * key, uint32_t fallback) {
    const double v = number(json, key, fallback);
    return v >= 0 && v <= 4294967295.0 ? uint32_t(v) : fallback;
}

int32_t integer(const QJsonObject & json, const char * key, int32_t fallback) {
    const double v = number(json, key, fallback);
    return v >= -2147483648.0 && v <= 2147483647.0 ? int32_t(v) : fallback;
}

}  // namespace

QString validationError(const EngineSettings & s) {
    if (Status st = validate(s.kv); !st.ok()) return QString::fromStdString(st.message());
    if (s.chunkTokens > 8192) return QStringLiteral("the prefill chunk must be 1 to 8192 tokens, or automatic");
    if (s.contextTokens != 0 && (s.contextTokens < 64 || s.contextTokens > (1u << 24))) {
        return QStringLiteral("the context must be 64 tokens or more (or 0 for the model's trained context)");
    }
    if (s.summaryTokens < 16 || s.summaryTokens > 65536) return QStringLiteral("the summary length must be 16 to 65536 tokens");
    if (Status st = validate_sampler_params(s.sampler); !st.ok()) return QString::fromStdString(st.message());
    return {};
}

SessionOptions sessionOptions(const EngineSettings & settings) {
    return {.n_ctx = settings.contextTokens, .chunk_tokens = settings.chunkTokens, .kv = settings.kv};
}

MachineMemory probeMachine(const EngineSettings & settings) {
    MachineMemory machine = probe_machine_memory(resolve_kv_dir(settings.kv));
    // The app loads models on the automatic backend: the first CUDA device it can use.
    for (const GpuDevice & d : probe_backends().devices) {
        if (d.cc_major >= 8) {
            machine.free_vram_bytes = d.free_bytes;
            break;
        }
    }
    return machine;
}

MemoryPlan planFor(const ModelMemoryShape & shape, const EngineSettings & settings, const MachineMemory & machine) {
    const KvSettings & kv = settings.kv;
    // Before a load the weights are not on the GPU yet: they take their share of its memory
    // (with what its ops keep) before the KV cache's device tier. Weights that do not fit are
    // planned in RAM, as the device tier then is (partial offload keeps most of them there).
    MachineMemory free = machine;
    const uint64_t gpu_weights = shape.weight_bytes + kDeviceOpsReserveBytes;
    const bool on_gpu = machine.free_vram_bytes > gpu_weights;
    free.free_vram_bytes = on_gpu ? machine.free_vram_bytes - gpu_weights : 0;
    const KvTierCapacities capacities = resolve_capacities(kv, free, shape.weight_bytes, on_gpu);
    const uint32_t nCtx = settings.contextTokens ? settings.contextTokens : shape.n_ctx_train;
    ModelMemoryShape observed = shape;
    observed.observed_attention = true;  // the app records where the model looks (LlmEngine)
    return plan_memory(observed, nCtx, settings.chunkTokens, kv, capacities);
}

QJsonObject toJson(const EngineSettings & s) {
    return {
        {"policy", QString::fromUtf8(kv_policy_name(s.kv.policy).data(), qsizetype(kv_policy_name(s.kv.policy).size()))},
        {"keepRatio", s.kv.keep_ratio},
        {"recentRatio", s.kv.recent_ratio},
        {"sinkTokens", double(s.kv.sink_tokens)},
        {"kBits", double(s.kv.k_bits)},
        {"vBits", double(s.kv.v_bits)},
        {"hostBits", double(s.kv.host_bits)},
        {"diskBits", double(s.kv.disk_bits)},
        {"residualTokens", double(s.kv.residual_tokens)},
        {"deviceMiB", s.kv.device_mib},
        {"hostMiB", s.kv.host_mib},
        {"diskMiB", s.kv.disk_mib},
        {"cacheDir", QString::fromStdString(s.kv.dir)},
        {"prefixCache", s.kv.prefix_cache},
        {"contextTokens", double(s.contextTokens)},
        {"chunkTokens", double(s.chunkTokens)},
        {"maxReplyTokens", double(s.maxReplyTokens)},
        {"summaryTokens", double(s.summaryTokens)},
        {"temperature", double(s.sampler.temperature)},
        {"topK", double(s.sampler.top_k)},
        {"topP", double(s.sampler.top_p)},
        {"minP", double(s.sampler.min_p)},
        {"repeatPenalty", double(s.sampler.repeat_penalty)},
        // Placement's order and look-ahead, and the adaptive mode.
        {"demotion", QString::fromUtf8(kv_demotion_name(s.kv.demotion).data(), qsizetype(kv_demotion_name(s.kv.demotion).size()))},
        {"prefetchLayers", double(s.kv.prefetch_layers)},
        {"adapt", s.kv.adapt},
        // Warm-up.
        {"warmupTokens", double(s.kv.warmup_tokens)},
        // Per-layer budgets.
        {"layerBudget",
         QString::fromLatin1(kv_layer_budget_name(s.kv.layer_budget).data(), qsizetype(kv_layer_budget_name(s.kv.layer_budget).size()))},
        // Thinking: "on" / "off" (absent: the template's default); an effort (absent: its default).
        {"thinking", s.thinking.enabled ? QJsonValue(*s.thinking.enabled ? "on" : "off") : QJsonValue()},
        {"reasoningEffort", s.thinking.effort.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(s.thinking.effort))},
    };
}

EngineSettings engineSettingsFromJson(const QJsonObject & json, const EngineSettings & defaults) {
    EngineSettings s = defaults;
    if (json.value("policy").isString()) {
        if (auto p = kv_policy_from_name(json.value("policy").toString().toStdString())) s.kv.policy = *p;
    }
    s.kv.keep_ratio = number(json, "keepRatio", s.kv.keep_ratio);
    s.kv.recent_ratio = number(json, "recentRatio", s.kv.recent_ratio);
    s.kv.sink_tokens = count(json, "sinkTokens", s.kv.sink_tokens);
    s.kv.k_bits = count(json, "kBits", s.kv.k_bits);
    s.kv.v_bits = count(json, "vBits", s.kv.v_bits);
    s.kv.host_bits = count(json, "hostBits", s.kv.host_bits);
    s.kv.disk_bits = count(json, "diskBits", s.kv.disk_bits);
    s.kv.residual_tokens = count(json, "residualTokens", s.kv.residual_tokens);
    s.kv.device_mib = number(json, "deviceMiB", s.kv.device_mib);
    s.kv.host_mib = number(json, "hostMiB", s.kv.host_mib);
    s.kv.disk_mib = number(json, "diskMiB", s.kv.disk_mib);
    if (json.value("cacheDir").isString()) s.kv.dir = json.value("cacheDir").toString().toStdString();
    if (json.value("prefixCache").isBool()) s.kv.prefix_cache = json.value("prefixCache").toBool();
    s.contextTokens = count(json, "contextTokens", s.contextTokens);
    s.chunkTokens = count(json, "chunkTokens", s.chunkTokens);
    s.maxReplyTokens = integer(json, "maxReplyTokens", s.maxReplyTokens);
    s.summaryTokens = count(json, "summaryTokens", s.summaryTokens);
    s.sampler.temperature = float(number(json, "temperature", s.sampler.temperature));
    s.sampler.top_k = integer(json, "topK", s.sampler.top_k);
    s.sampler.top_p = float(number(json, "topP", s.sampler.top_p));
    s.sampler.min_p = float(number(json, "minP", s.sampler.min_p));
    s.sampler.repeat_penalty = float(number(json, "repeatPenalty", s.sampler.repeat_penalty));
    if (json.value("demotion").isString()) {
        if (auto d = kv_demotion_from_name(json.value("demotion").toString().toStdString())) s.kv.demotion = *d;
    }
    s.kv.prefetch_layers = count(json, "prefetchLayers", s.kv.prefetch_layers);
    if (json.value("adapt").isBool()) s.kv.adapt = json.value("adapt").toBool();
    // Warm-up.
    s.kv.warmup_tokens = count(json, "warmupTokens", s.kv.warmup_tokens);
    if (json.value("layerBudget").isString()) {
        if (auto shape = kv_layer_budget_from_name(json.value("layerBudget").toString().toStdString())) s.kv.layer_budget = *shape;
    }
    const QString thinking = json.value("thinking").toString();
    if (thinking == "on" || thinking == "off") s.thinking.enabled = thinking == "on";
    if (json.value("thinking").isNull()) s.thinking.enabled.reset();
    const QString effort = json.value("reasoningEffort").toString();
    if (effort == "low" || effort == "medium" || effort == "high") s.thinking.effort = effort.toStdString();
    if (json.value("reasoningEffort").isNull()) s.thinking.effort.clear();
    // A stored value out of range (an older or hand-edited file) falls back as a whole.
    return validationError(s).isEmpty() ? s : defaults;
}

QString policyName(KvPolicy policy) {
    const std::string_view n = kv_policy_name(policy);
    return QString::fromLatin1(n.data(), qsizetype(n.size()));
}

QString policyDescription(const KvSettings & settings) {
    return QString::fromStdString(describe(settings)).section(QStringLiteral(", K "), 0, 0);
}

QString codecsDescription(const KvSettings & s) {
    const std::string_view k = kv_codec_name(s.k_codec());
    const std::string_view v = kv_codec_name(s.v_codec());
    QString out = QStringLiteral("K %1 / V %2")
                      .arg(QString::fromLatin1(k.data(), qsizetype(k.size())), QString::fromLatin1(v.data(), qsizetype(v.size())));
    if (s.host_bits != 0) out += QStringLiteral(", RAM ≤ %1-bit").arg(s.host_bits);
    if (s.disk_bits != 0) out += QStringLiteral(", disk ≤ %1-bit").arg(s.disk_bits);
    return out;
}

}  // namespace lr::app
