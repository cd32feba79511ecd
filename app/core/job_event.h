#pragma once
// What the engine thread says about one job: a value sent to the GUI thread in a queued
// signal, where EngineHost hands it to the job's EngineJob (the one place a job id is
// looked up).

#include <QMetaType>
#include <QString>

#include <variant>

#include "app/core/engine_results.h"

namespace lr::app {

struct JobStarted {};
// Which part of a reply a piece of text belongs to (a thinking model thinks first).
enum class TextPart { answer, thinking };
struct GeneratedText {
    QString text;  // whole UTF-8 characters
    TextPart part = TextPart::answer;
};

struct JobEvent {
    quint64 jobId = 0;
    // finished (JobResult) or failed (JobError) is the job's last event.
    std::variant<JobStarted, ContextMeasure, JobProgress, GeneratedText, JobResult, JobError> what;

    bool isLast() const { return std::holds_alternative<JobResult>(what) || std::holds_alternative<JobError>(what); }
};

}  // namespace lr::app

Q_DECLARE_METATYPE(lr::app::JobEvent)
