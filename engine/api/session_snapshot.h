#pragma once
// What a session holds now, as values: its KV cache's statistics and how much of its context
// is used (the cache panel, --kv-stats); and what it keeps of a conversation's document (the
// retention view).

#include <cstdint>
#include <vector>

#include "engine/api/kv_layer.h"
#include "engine/api/kv_stats.h"
#include "engine/api/text_span.h"

namespace lr {

struct SessionSnapshot {
    bool has_session = false;  // false: no model or no session yet (the rest is empty)
    KvStats kv;
    uint32_t context_used = 0;  // tokens the session holds
    uint32_t context_limit = 0;
};

struct DocumentRetention {
    bool in_context = false;                     // the session holds the document's tokens
    bool per_position = false;                   // kept[] is the cache's own per position (else all or nothing)
    KvLayerKind layer_kind = KvLayerKind::full;  // the layers whose cache kept[] describes
    std::vector<TextSpan> spans;                 // per document token: its bytes in the document text
    std::vector<float> kept;                     // per document token: the share of those layers' heads keeping it
};

}  // namespace lr
