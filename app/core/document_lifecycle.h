#pragma once
// The current conversation's document through its life, as one small state machine (the
// only place DocumentState's phase changes):
//
//   none --open--> loading --stored--> reading --read--> inContext (restoredTokens: from the prefix cache)
//                     |                   | |  \--read, stopped--> stopped
//                     +--openFailed--> failed  \--readFailed--> tooLong (it does not fit) or failed
//   startReading: a stored document's phases other than loading go back to reading
//   summarizing: a flag, set while a summary of the document runs
//
// Events about reading carry the conversation they concern and apply only to the one shown
// while it is reading; changed() is emitted once per change.

#include <QObject>

#include <functional>
#include <optional>

#include "app/core/document_state.h"
#include "app/core/storage_records.h"

namespace lr::app {

class DocumentLifecycle : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    const DocumentState & state() const { return m_state; }
    // A summary can start: there is a document, loaded, that did not fail.
    bool canSummarize() const;
    // The stored document can be read again (not while its file is still being loaded).
    bool canReadAgain() const;

    // The document of `conversationId` as stored (reading: it is read next), or none.
    void show(qint64 conversationId, const std::optional<DocumentRecord> & stored);
    // A file is being turned into text for `conversationId`.
    void open(qint64 conversationId, const QString & path);
    void openFailed(qint64 conversationId, const QString & message);
    // A note about the file (the PDF had pages without text...).
    void note(const QString & message);

    void startReading();
    void measured(qint64 conversationId, const ContextMeasure & measure);
    void progressed(qint64 conversationId, const PrefillStatus & progress);
    void read(qint64 conversationId, const JobResult & result);
    void readFailed(qint64 conversationId, const JobError & error);
    void setSummarizing(qint64 conversationId, bool summarizing);

signals:
    void changed(const lr::app::DocumentState & state);

private:
    bool readingFor(qint64 conversationId) const;
    void set(DocumentState state);
    void edit(const std::function<void(DocumentState &)> & change);

    DocumentState m_state;
};

}  // namespace lr::app
