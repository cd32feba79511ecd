#pragma once
// What the GUI thread asks of the engine thread: plain values, copied into a queued signal.
// Each request carries the conversation as it stands and a snapshot of the settings; the
// engine keeps no conversation state of its own besides the KV cache, which it reuses for
// the common prefix of what it is asked to hold.

#include <QMetaType>
#include <QString>

#include <stop_token>
#include <variant>
#include <vector>

#include "app/core/engine_settings.h"

namespace lr::app {

// The model compiled into the program, as a model path (the engine's kBundledModelName).
inline constexpr const char * kBundledModelPath = "bundled:stories260K";

struct ChatTurn {
    QString role;  // "user" or "assistant"
    QString text;
    QString thinking;  // an assistant turn's thinking: the chat template decides whether the prompt shows it
};

// What a conversation puts in the model's context: its document (as a system message),
// then its finished turns, oldest first.
struct ConversationContext {
    QString documentTitle;
    QString documentText;  // empty: no document in the context
    std::vector<ChatTurn> turns;

    bool hasDocument() const { return !documentText.isEmpty(); }
};

struct LoadModelRequest {
    QString path;     // a GGUF file, or kBundledModelPath
    int threads = 0;  // CPU threads; 0: the physical cores
};

// Read the conversation (its document) into the KV cache, with progress, without replying.
struct PrefillRequest {
    qint64 conversationId = 0;
    ConversationContext context;
    EngineSettings settings;
};

struct ChatRequest {
    qint64 conversationId = 0;
    ConversationContext context;  // before the new message
    QString userText;
    EngineSettings settings;
};

struct SummarizeRequest {
    qint64 conversationId = 0;
    QString title;
    QString text;
    QString instruction;  // empty: the summarizer's default
    EngineSettings settings;
};

// One request as the engine thread receives it.
struct EngineRequest {
    using Variant = std::variant<LoadModelRequest, PrefillRequest, ChatRequest, SummarizeRequest>;
    quint64 id = 0;
    std::stop_token stop;  // from the stop source of the request's EngineJob
    Variant request;
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::EngineRequest)
