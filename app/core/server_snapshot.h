#pragma once
// What the app's server is doing, as values for the GUI: its state (off, starting, serving,
// failed, with the address and key a client needs) and, while it serves, its figures
// (requests running and waiting, completions served, its own KV cache, each sequence).

#include <QMetaType>
#include <QString>

#include <vector>

#include "engine/api/kv_stats.h"
#include "engine/api/sequence_stats.h"

namespace lr::app {

struct ServerState {
    enum class Kind { off, waitingForModel, starting, serving, failed };
    Kind kind = Kind::off;
    QString address;  // serving: "http://127.0.0.1:8080/v1"
    QString apiKey;   // serving: what clients send as "Authorization: Bearer KEY"
    QString message;  // failed: why, in plain words
};

struct ServerSnapshot {
    uint32_t running = 0;  // requests generating
    uint32_t queued = 0;   // requests waiting for room
    uint64_t completionsServed = 0;
    KvStats kv;  // the server's own cache, separate from the chat's
    std::vector<SequenceStats> sequences;
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::ServerState)
Q_DECLARE_METATYPE(lr::app::ServerSnapshot)
