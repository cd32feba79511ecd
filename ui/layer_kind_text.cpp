#include "layer_kind_text.h"

#include <QCoreApplication>

namespace lr::ui {

QString layerKindTitle(KvLayerKind kind) {
    switch (kind) {
        case KvLayerKind::full: return QCoreApplication::translate("LayerKind", "Full attention");
        case KvLayerKind::sliding_window: return QCoreApplication::translate("LayerKind", "Sliding window");
        case KvLayerKind::shared: return QCoreApplication::translate("LayerKind", "Shared KV");
        case KvLayerKind::recurrent: return QCoreApplication::translate("LayerKind", "Recurrent state");
    }
    return {};
}

QString layerKindLayers(KvLayerKind kind) {
    switch (kind) {
        case KvLayerKind::full: return QCoreApplication::translate("LayerKind", "full-attention layers");
        case KvLayerKind::sliding_window: return QCoreApplication::translate("LayerKind", "sliding-window layers");
        case KvLayerKind::shared: return QCoreApplication::translate("LayerKind", "shared-KV layers");
        case KvLayerKind::recurrent: return QCoreApplication::translate("LayerKind", "recurrent layers");
    }
    return {};
}

}  // namespace lr::ui
