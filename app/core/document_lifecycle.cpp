#include "document_lifecycle.h"

#include <QFileInfo>

namespace lr::app {

bool DocumentLifecycle::canSummarize() const {
    const DocumentPhase p = m_state.phase;
    return p != DocumentPhase::none && p != DocumentPhase::loading && p != DocumentPhase::failed;
}

bool DocumentLifecycle::canReadAgain() const { return m_state.phase != DocumentPhase::none && m_state.phase != DocumentPhase::loading; }

bool DocumentLifecycle::readingFor(qint64 conversationId) const {
    return conversationId == m_state.conversationId && m_state.phase == DocumentPhase::reading;
}

void DocumentLifecycle::set(DocumentState state) {
    m_state = std::move(state);
    emit changed(m_state);
}

void DocumentLifecycle::edit(const std::function<void(DocumentState &)> & change) {
    DocumentState s = m_state;
    change(s);
    set(std::move(s));
}

void DocumentLifecycle::show(qint64 conversationId, const std::optional<DocumentRecord> & stored) {
    DocumentState s{.conversationId = conversationId};
    if (stored) {
        s.phase = DocumentPhase::reading;
        s.title = stored->title;
        s.path = stored->path;
        s.format = stored->format;
        s.fileBytes = stored->fileBytes;
        s.characters = stored->text.size();
        s.tokens = stored->tokenCount;
    }
    set(s);
}

void DocumentLifecycle::open(qint64 conversationId, const QString & path) {
    set({.phase = DocumentPhase::loading, .conversationId = conversationId, .title = QFileInfo(path).fileName(), .path = path});
}

void DocumentLifecycle::openFailed(qint64 conversationId, const QString & message) {
    if (conversationId != m_state.conversationId || m_state.phase != DocumentPhase::loading) return;
    edit([&](DocumentState & s) {
        s.phase = DocumentPhase::failed;
        s.message = message;
    });
}

void DocumentLifecycle::note(const QString & message) {
    edit([&](DocumentState & s) { s.message = message; });
}

void DocumentLifecycle::startReading() {
    if (!canReadAgain()) return;
    edit([](DocumentState & s) {
        s.phase = DocumentPhase::reading;
        s.progress = {};
        s.restoredTokens = 0;
        s.message.clear();
    });
}

void DocumentLifecycle::measured(qint64 conversationId, const ContextMeasure & measure) {
    if (!readingFor(conversationId)) return;
    edit([&](DocumentState & s) {
        s.tokens = measure.documentTokens;
        s.measure = measure;
    });
}

void DocumentLifecycle::progressed(qint64 conversationId, const PrefillStatus & progress) {
    if (readingFor(conversationId)) edit([&](DocumentState & s) { s.progress = progress; });
}

void DocumentLifecycle::read(qint64 conversationId, const JobResult & result) {
    if (!readingFor(conversationId)) return;
    const bool stopped = result.reason == StopReason::cancelled;
    edit([&](DocumentState & s) {
        s.phase = stopped ? DocumentPhase::stopped : DocumentPhase::inContext;
        s.measure = result.measure;
        s.restoredTokens = stopped ? 0 : result.restoredTokens;
        s.message = stopped ? QStringLiteral("Reading stopped: the document is not in the chat's context.") : QString();
    });
}

void DocumentLifecycle::readFailed(qint64 conversationId, const JobError & error) {
    if (!readingFor(conversationId)) return;
    const bool tooLong = error.errorKind == JobErrorKind::contextFull;
    edit([&](DocumentState & s) {
        s.phase = tooLong ? DocumentPhase::tooLong : DocumentPhase::failed;
        if (tooLong) s.measure = error.measure;
        s.message = error.message;
    });
}

void DocumentLifecycle::setSummarizing(qint64 conversationId, bool summarizing) {
    if (conversationId != m_state.conversationId || m_state.summarizing == summarizing) return;
    edit([&](DocumentState & s) { s.summarizing = summarizing; });
}

}  // namespace lr::app
