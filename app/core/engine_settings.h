#pragma once
// The settings one engine request runs with: the KV cache's knobs, the context and prefill
// chunk, sampling, thinking. Snapshotted into every request (the engine thread never reads settings
// objects), stored per conversation as JSON, defaults kept by AppSettings.
//
// sessionOptions() is the one place that maps these settings onto the engine's session.

#include <QJsonObject>
#include <QMetaType>
#include <QString>

#include "engine/api/kv_settings.h"
#include "engine/api/memory_plan.h"
#include "engine/api/prefill_chunk.h"
#include "engine/api/sampling.h"
#include "engine/api/session_options.h"
#include "engine/api/thinking_choice.h"

namespace lr::app {

// The app manages its cache tiers automatically by default (the engine's and the CLI's
// default is fixed): on the tier benchmark it decodes 1.1-1.4x (document) and 1.5-1.7x
// (chat) as fast as the fixed default, close to the best fixed split (docs/BENCHMARKS.md).
inline KvSettings appKvDefaults() {
    KvSettings kv;
    kv.adapt = true;
    return kv;
}

struct EngineSettings {
    KvSettings kv = appKvDefaults();
    uint32_t contextTokens = 0;  // 0: the model's trained context
    // Prefill chunk; automatic by default: as fast as 256 here, and Stop acts within a
    // quarter of a second instead of a second (docs/BENCHMARKS.md).
    uint32_t chunkTokens = kAutoChunk;
    int32_t maxReplyTokens = 1024;  // <= 0: until the context is full
    uint32_t summaryTokens = 384;   // length of each summary pass at most
    SamplerParams sampler;
    ThinkingChoice thinking;  // where the model's template lets one choose (ModelInfo says)
};

// Ranges and combinations, with a message naming the setting (empty when valid).
QString validationError(const EngineSettings & settings);

// The one mapping of EngineSettings onto the engine's session (which is rebuilt only when
// these change: same_session).
SessionOptions sessionOptions(const EngineSettings & settings);

// The planner's estimate for a model at the settings' context on `machine` (probeMachine:
// RAM, the cache directory's disk, the free VRAM of the GPU the app would load on), probed
// once for many models or many settings.
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
