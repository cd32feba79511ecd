#pragma once
// What the cache panel shows, as one value: the KV cache's statistics plus what the
// engine thread measured (context use, tokens per second). Sent a few times a second
// while the engine works, and once after every job.

#include <QMetaType>
#include <QString>

#include "engine/api/kv_stats.h"

namespace lr::app {

struct CacheSnapshot {
    bool hasSession = false;   // false: no model or no session yet (nothing to show)
    KvStats kv;                // tiers that do not exist are present == false
    uint32_t contextUsed = 0;  // tokens the session holds
    uint32_t contextLimit = 0;
    double prefillTokensPerSecond = 0;  // the last prefill's rate (0: none yet)
    double decodeTokensPerSecond = 0;   // the last reply's rate (0: none yet)
    QString policy;                     // describe(KvSettings) of the settings in use
    QString codecs;                     // "K f16 / V f16"
    qint64 timestampMs = 0;             // steady clock, for the charts' time axis
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::CacheSnapshot)
