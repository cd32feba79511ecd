#pragma once
// How the widgets name a kind of layer memory (KvLayerKind): the cache panel's rows
// ("Full attention") and the retention view's sentence ("full-attention layers").

#include <QString>
#include <span>

#include "engine/api/kv_layer.h"
#include "engine/api/memory_plan.h"

namespace lr::ui {

QString layerKindTitle(KvLayerKind kind);   // "Full attention", "Sliding window", ...
QString layerKindLayers(KvLayerKind kind);  // "full-attention layers", "sliding-window layers", ...
// Where a model's cache policies reach, in plain words ("This model keeps 3 of 4 layers as a
// fixed-size state; eviction, Quest and the KV codecs apply to the other 1."); empty when
// every layer is full attention.
QString policyReachText(std::span<const KvLayerKindPlan> kinds);

}  // namespace lr::ui
