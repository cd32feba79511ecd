#include "engine_results.h"

#include "app/core/retention_snapshot.h"

namespace lr::app {

QString stopReasonKey(StopReason reason) {
    switch (reason) {
        case StopReason::end_of_generation: return QStringLiteral("end");
        case StopReason::max_tokens: return QStringLiteral("max_tokens");
        case StopReason::context_full: return QStringLiteral("context_full");
        case StopReason::cancelled: return QStringLiteral("stopped");
        case StopReason::sink: return QStringLiteral("sink");
    }
    return QStringLiteral("end");
}

StopReason stopReasonFromKey(const QString & key) {
    for (StopReason r :
         {StopReason::end_of_generation, StopReason::max_tokens, StopReason::context_full, StopReason::cancelled, StopReason::sink}) {
        if (stopReasonKey(r) == key) return r;
    }
    return StopReason::end_of_generation;
}

double RetentionSnapshot::keptFraction() const {
    if (kept.empty()) return 0;
    double sum = 0;
    for (float k : kept) sum += k;
    return sum / double(kept.size());
}

}  // namespace lr::app
