#pragma once
// Where the current conversation's document stands, for the document panel (the value
// DocumentLifecycle moves through its phases).

#include <QMetaType>
#include <QString>

#include "app/core/engine_results.h"

namespace lr::app {

enum class DocumentPhase {
    none,       // no document
    loading,    // reading the file into text
    reading,    // the engine is measuring it and reading it into the KV cache (progress)
    inContext,  // in the chat's context
    tooLong,    // it does not fit the context: not in the chat's context (message lists the options)
    stopped,    // the user stopped the reading: not in the chat's context
    failed,     // the file could not be read, or the engine failed (message says why)
};

struct DocumentState {
    DocumentPhase phase = DocumentPhase::none;
    qint64 conversationId = 0;
    QString title;
    QString path;
    QString format;
    qint64 fileBytes = 0;
    qint64 characters = 0;
    qint64 tokens = -1;           // -1: not measured yet
    ContextMeasure measure;       // valid once measured
    PrefillStatus progress;       // while reading
    uint32_t restoredTokens = 0;  // inContext: read from the prefix cache rather than computed
    bool summarizing = false;     // a summary of it is being written
    QString message;              // why it failed / does not fit, or a note about the file

    // Whether chat requests put the document in the context.
    bool usableInContext() const { return phase == DocumentPhase::reading || phase == DocumentPhase::inContext; }
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::DocumentState)
