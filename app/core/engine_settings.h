#pragma once
// The settings one engine request runs with: the KV cache's knobs, the context and prefill
// chunk, sampling. Snapshotted into every request (the engine thread never reads settings
// objects), stored per conversation as JSON, defaults kept by AppSettings.
//
// makeSessionConfig() is the one place that maps these settings onto the engine's
// SessionConfig; engineCapabilities() says which knobs that mapping passes on today, so the
// UI never shows a control that does nothing.

#include <QJsonObject>
#include <QMetaType>
#include <QString>

#include "engine/runtime/session.h"
#include "engine/sampling/sampler.h"
#include "kvcache/kv_settings.h"
#include "kvcache/memory_planner.h"

namespace lr::app {

struct EngineSettings {
    KvSettings kv;
    uint32_t contextTokens = 0;    // 0: the model's trained context
    uint32_t chunkTokens = 256;    // prefill chunk
    int32_t maxReplyTokens = 1024; // <= 0: until the context is full
    uint32_t summaryTokens = 384;  // length of each summary pass at most
    SamplerParams sampler;

    // Settings that need a new engine Session when they change (the rest apply per call).
    bool sameSession(const EngineSettings & other) const;
};

// Ranges and combinations, with a message naming the setting (empty when valid).
QString validationError(const EngineSettings & settings);

// What the engine applies of KvSettings today. The cache panel and sliders disable what
// is not applied and say why, instead of pretending.
struct EngineCapabilities {
    bool codecs = false;        // k_bits / v_bits
    bool policies = false;      // policy, keep ratio, recent ratio, sink tokens
    bool tierBudgets = false;   // device / host / disk MiB, cache directory
    bool prefixCache = false;   // persisted prefixes restored instead of prefilled
};
EngineCapabilities engineCapabilities();

// The KvSettings the engine will really use: the knobs it cannot apply yet at their
// defaults. The planner's preview uses these, so its prediction is what will happen.
KvSettings effectiveKvSettings(const KvSettings & requested);

// The one mapping of EngineSettings onto the engine's session configuration.
SessionConfig makeSessionConfig(const EngineSettings & settings);

// What the planner needs of a model, from its hyper-parameters and weight bytes (the
// model picker has only the file's header; a loaded model has the same numbers).
// Mirrors lr::memory_shape(const Model &), which needs a loaded model.
// ENGINE-REQUEST: memory_shape(const ModelHParams &, uint64_t weight_bytes) in
// engine/runtime/session.h, so that this forwards to it and the two cannot drift apart.
ModelMemoryShape memoryShape(const ModelHParams & hparams, uint64_t weightBytes);

// The planner's estimate for a model at the settings' context, on this machine now (or on
// `machine`, probed once for many models).
MemoryPlan planFor(const ModelMemoryShape & shape, const EngineSettings & settings);
MemoryPlan planFor(const ModelMemoryShape & shape, const EngineSettings & settings, const MachineMemory & machine);
MachineMemory probeMachine(const EngineSettings & settings);

QJsonObject toJson(const EngineSettings & settings);
// Missing or invalid keys keep the values of `defaults`.
EngineSettings engineSettingsFromJson(const QJsonObject & json, const EngineSettings & defaults);

QString policyName(KvPolicy policy);
// describe(KvSettings) without the codecs: "h2o 20% (recent 50%, 4 sinks)", "none".
QString policyDescription(const KvSettings & settings);
QString codecsDescription(const KvSettings & settings);  // "K f16 / V q8"

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::EngineSettings)
