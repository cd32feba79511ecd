#include "engine_job.h"

namespace lr::app {

EngineJob::EngineJob(JobKind kind, std::stop_source stop, QObject * parent) : QObject(parent), m_kind(kind), m_stop(std::move(stop)) {}

EngineJob::~EngineJob() { stop(); }

void EngineJob::stop() {
    if (!m_done) m_stop.request_stop();
}

void EngineJob::abandon() {
    stop();
    blockSignals(true);
    deleteLater();
}

void EngineJob::deliver(const JobEvent & event) {
    m_done = event.isLast();
    std::visit(
        [this](const auto & what) {
            using T = std::decay_t<decltype(what)>;
            if constexpr (std::is_same_v<T, JobStarted>) emit started();
            if constexpr (std::is_same_v<T, ContextMeasure>) emit measured(what);
            if constexpr (std::is_same_v<T, JobProgress>) emit progress(what);
            if constexpr (std::is_same_v<T, GeneratedText>) {
                if (what.part == TextPart::thinking) {
                    emit thinking(what.text);
                } else {
                    emit token(what.text);
                }
            }
            if constexpr (std::is_same_v<T, JobResult>) emit finished(what);
            if constexpr (std::is_same_v<T, JobError>) emit failed(what);
        },
        event.what);
}

}  // namespace lr::app
