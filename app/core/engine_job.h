#pragma once
// One engine request, seen from the GUI thread (as Qt's QNetworkReply is one network
// request): its signals say what happens to it, stop() stops it. EngineHost makes one per
// request; the caller owns it (deleteLater() it once finished or failed). A job lives on
// the GUI thread and only ever receives values from the engine thread.
//
// Signals, in order: started; then measured (a prefill's size, before it reads),
// progress (the prompt read, a summary's passes), token (the answer's text) and thinking (a
// thinking model's thinking, apart from the answer) as they come; then exactly one of
// finished or failed.

#include <QObject>

#include <stop_token>

#include "app/core/job_event.h"

namespace lr::app {

class EngineJob : public QObject {
    Q_OBJECT
public:
    // Deleting a job that has not ended stops it.
    ~EngineJob() override;

    JobKind kind() const { return m_kind; }
    // finished or failed was emitted.
    bool isDone() const { return m_done; }

    // Stops the job and deletes it later; it emits nothing more (for a job its caller no
    // longer wants: a replaced load, a deleted conversation).
    void abandon();

public slots:
    // Stops the job within one prefill chunk or generated token (a queued job before it
    // starts); it then finishes with StopReason::cancelled. Stop does not travel through
    // the event queue: the engine thread sees it while it works. No effect once done.
    void stop();

signals:
    void started();
    void measured(const lr::app::ContextMeasure & measure);
    void progress(const lr::app::JobProgress & progress);
    void token(const QString & text);
    void thinking(const QString & text);
    void finished(const lr::app::JobResult & result);
    void failed(const lr::app::JobError & error);

private:
    friend class EngineHost;
    EngineJob(JobKind kind, std::stop_source stop, QObject * parent);
    // Emits the signal the event stands for.
    void deliver(const JobEvent & event);

    JobKind m_kind;
    std::stop_source m_stop;  // the engine thread holds its token
    bool m_done = false;
};

}  // namespace lr::app
