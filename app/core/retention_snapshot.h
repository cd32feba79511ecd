#pragma once
// Which parts of the conversation's document the KV cache still holds, per document token:
// what the retention view shades. While the policy keeps everything (none), every token of
// a document in the context is kept (1.0); a document that is not in the context is not
// remembered at all. It also carries where the model looked in the document (the attention
// view), when the cache recorded it.

#include <QMetaType>
#include <QString>

#include <memory>
#include <utility>
#include <vector>

#include "engine/api/attention_mass.h"
#include "engine/api/kv_layer.h"

namespace lr::app {

struct RetentionSnapshot {
    qint64 conversationId = 0;
    bool inContext = false;                     // the document is in the session's context
    bool perPosition = false;                   // kept[] comes from the cache's per-position query
    KvLayerKind layerKind = KvLayerKind::full;  // the layers whose cache kept[] describes
    QString policy;                             // "none", "h2o 20% ..."
    QString documentText;
    std::vector<std::pair<int, int>> tokenSpans;  // [begin, end) in documentText (UTF-16) per document token
    std::vector<float> kept;                      // per document token: the fraction of layers and heads keeping it
    // Where the model looked in the document, per full-attention layer and document token
    // (positions from 0): shared, so the snapshot stays cheap to copy; null when not recorded.
    std::shared_ptr<const AttentionMass> attention;

    double keptFraction() const;  // over the document's tokens (0 when not in the context)
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::RetentionSnapshot)
