#pragma once
// How the widgets name a kind of layer memory (KvLayerKind): the cache panel's rows
// ("Full attention") and the retention view's sentence ("full-attention layers").

#include <QString>

#include "engine/api/kv_layer.h"

namespace lr::ui {

QString layerKindTitle(KvLayerKind kind);   // "Full attention", "Sliding window", ...
QString layerKindLayers(KvLayerKind kind);  // "full-attention layers", "sliding-window layers", ...

}  // namespace lr::ui
