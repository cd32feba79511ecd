#include "layer_kind_text.h"

#include <QCoreApplication>
#include <QStringList>

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

QString policyReachText(std::span<const KvLayerKindPlan> kinds) {
    uint32_t n_layers = 0, n_full = 0;
    for (const KvLayerKindPlan & k : kinds) {
        n_layers += k.n_layers;
        if (k.kind == KvLayerKind::full) n_full += k.n_layers;
    }
    QStringList others;
    for (const KvLayerKindPlan & k : kinds) {
        const QString share = QCoreApplication::translate("LayerKind", "%1 of %2 layers").arg(k.n_layers).arg(n_layers);
        switch (k.kind) {
            case KvLayerKind::full: break;
            case KvLayerKind::recurrent: others << QCoreApplication::translate("LayerKind", "%1 as a fixed-size state").arg(share); break;
            case KvLayerKind::sliding_window:
                others << QCoreApplication::translate("LayerKind", "%1 as a sliding window").arg(share);
                break;
            case KvLayerKind::shared:
                others << QCoreApplication::translate("LayerKind", "%1 reading an earlier layer's KV").arg(share);
                break;
        }
    }
    if (others.isEmpty()) return {};
    return QCoreApplication::translate("LayerKind", "This model keeps %1; eviction, Quest and the KV codecs apply to the other %2.")
        .arg(others.join(QStringLiteral(", ")))
        .arg(n_full);
}

}  // namespace lr::ui
