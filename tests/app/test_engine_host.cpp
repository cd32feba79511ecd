// EngineHost, EngineWorker and EngineJob with a scripted engine: requests and results cross
// the thread as values, each job's signals arrive on its own EngineJob (exact counts), tokens
// stream in order (a reply's thinking apart from its answer), Stop acts within one chunk or token through the stop token (mid-prefill,
// mid-decode, queued jobs), an abandoned job says nothing more, engine errors and anything
// the engine throws arrive as failed(), and the GUI thread's event loop keeps running while
// the engine is busy.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include <atomic>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

#include "app/core/engine_host.h"
#include "app/support/fake_engine.h"
#include "support/eventually.h"

using namespace lr;
using namespace lr::app;
using namespace lr::test;

class TestEngineHost : public QObject {
    Q_OBJECT

    std::shared_ptr<FakeScript> m_script;
    std::unique_ptr<EngineHost> m_host;

    static ChatRequest chatRequest(const QString & text) { return {.conversationId = 1, .userText = text}; }
    void loadModel() {
        QSignalSpy finished(m_host->loadModel({.path = QStringLiteral("fake.gguf")}), &EngineJob::finished);
        QVERIFY(finished.wait(kEventuallyMs));
    }
    // A chat whose prompt takes 200 chunks of 10 ms.
    EngineJob * slowPromptChat(const QString & text) {
        m_script->prefillChunks = 200;
        m_script->chunkDelayMs = 10;
        return m_host->chat(chatRequest(text));
    }
    // Every signal of one job.
    struct Spies {
        explicit Spies(EngineJob * job)
            : started(job, &EngineJob::started), measured(job, &EngineJob::measured), progress(job, &EngineJob::progress),
              tokens(job, &EngineJob::token), thinking(job, &EngineJob::thinking), finished(job, &EngineJob::finished),
              failed(job, &EngineJob::failed) {}
        static QString joined(const QSignalSpy & spy) {
            QString out;
            for (const QList<QVariant> & args : spy) out += args.at(0).toString();
            return out;
        }
        QString streamed() const { return joined(tokens); }
        QString thought() const { return joined(thinking); }
        QSignalSpy started, measured, progress, tokens, thinking, finished, failed;
    };

private slots:
    void init() {
        m_script = std::make_shared<FakeScript>();
        m_host = std::make_unique<EngineHost>(fakeFactory(m_script));
    }
    void cleanup() { m_host.reset(); }

    // The engine's thread and the threads it starts (the CPU workers, started by a model's
    // load) run as SCHED_BATCH, so that a waking GUI thread takes a core from them at once;
    // the GUI thread's own policy stays.
    void engineThreadsYieldCoresToTheGui() {
#if defined(__linux__)
        auto policy = std::make_shared<std::atomic<int>>(-1), started_policy = std::make_shared<std::atomic<int>>(-1);
        auto inner = fakeFactory(m_script);
        m_host = std::make_unique<EngineHost>([=] {
            policy->store(sched_getscheduler(0));
            std::thread([=] { started_policy->store(sched_getscheduler(0)); }).join();
            return inner();
        });
        QTRY_VERIFY_WITH_TIMEOUT(started_policy->load() != -1, kEventuallyMs);
        QCOMPARE(policy->load(), SCHED_BATCH);
        QCOMPARE(started_policy->load(), SCHED_BATCH);
        QCOMPARE(sched_getscheduler(0), SCHED_OTHER);
#else
        QSKIP("thread scheduling policies are Linux's");
#endif
    }

    void loadThenChatStreamsTokensInOrder() {
        QSignalSpy busy(m_host.get(), &EngineHost::busyChanged);
        EngineJob * load = m_host->loadModel({.path = QStringLiteral("fake.gguf")});
        EngineJob * chat = m_host->chat(chatRequest(QStringLiteral("hi")));
        Spies l(load), c(chat);
        QCOMPARE(load->kind(), JobKind::loadModel);
        QCOMPARE(chat->kind(), JobKind::chat);
        QVERIFY(m_host->isBusy());
        QCOMPARE(m_host->jobsInFlight(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(c.finished.count(), 1, kEventuallyMs);

        QCOMPARE(l.started.count(), 1);
        QCOMPARE(l.finished.count(), 1);
        QCOMPARE(l.finished.at(0).at(0).value<JobResult>().model.name, QStringLiteral("fake model"));
        QCOMPARE(l.progress.count() + l.tokens.count() + l.failed.count() + l.measured.count(), 0);
        QVERIFY(load->isDone());
        QCOMPARE(c.started.count(), 1);
        QCOMPARE(c.measured.count(), 0);
        QCOMPARE(c.progress.count(), 3);
        QCOMPARE(c.tokens.count(), 4);
        QCOMPARE(c.failed.count(), 0);
        QCOMPARE(c.streamed(), QStringLiteral("Hello, world."));
        const JobResult result = c.finished.at(0).at(0).value<JobResult>();
        QCOMPARE(result.kind, JobKind::chat);
        QCOMPARE(result.reason, StopReason::end_of_generation);
        QCOMPARE(result.text, c.streamed());
        QCOMPARE(result.generatedTokens, 4u);
        QCOMPARE(c.thinking.count(), 0);
        QCOMPARE(result.thinking, QString());
        QCOMPARE(busy.count(), 2);
        QCOMPARE(busy.at(0).at(0).toBool(), true);
        QCOMPARE(busy.at(1).at(0).toBool(), false);
        QVERIFY(!m_host->isBusy());
        QCOMPARE(m_script->lastUserText, QStringLiteral("hi"));
    }

    // A thinking model's reply: its thinking arrives on `thinking`, in order and before the
    // answer, which alone arrives on `token`; the result carries both apart.
    void aReplysThinkingStreamsApartFromItsAnswer() {
        loadModel();
        m_script->thinking = {QStringLiteral("The user"), QStringLiteral(" says hi.")};
        EngineJob * job = m_host->chat(chatRequest(QStringLiteral("hi")));
        Spies c(job);
        QString order;
        connect(job, &EngineJob::thinking, this, [&] { order += QLatin1Char('t'); });
        connect(job, &EngineJob::token, this, [&] { order += QLatin1Char('a'); });
        QVERIFY(c.finished.wait(kEventuallyMs));
        QCOMPARE(order, QStringLiteral("ttaaaa"));
        QCOMPARE(c.thought(), QStringLiteral("The user says hi."));
        QCOMPARE(c.streamed(), QStringLiteral("Hello, world."));
        const JobResult result = c.finished.at(0).at(0).value<JobResult>();
        QCOMPARE(result.thinking, c.thought());
        QCOMPARE(result.text, c.streamed());
        QCOMPARE(result.generatedTokens, 6u);
    }

    // A prefill's job says how large the conversation is before it reads, then how far it
    // has read, then what the cache keeps of the document.
    void aPrefillJobMeasuresThenReads() {
        loadModel();
        PrefillRequest r{.conversationId = 3};
        r.context.documentText = QStringLiteral("a short document");
        Spies p(m_host->prefill(r));
        QVERIFY(p.finished.wait(kEventuallyMs));
        QCOMPARE(p.started.count(), 1);
        QCOMPARE(p.measured.count(), 1);
        QCOMPARE(p.progress.count(), 3);
        QCOMPARE(p.tokens.count(), 0);
        QCOMPARE(p.failed.count(), 0);
        QCOMPARE(p.progress.at(2).at(0).value<JobProgress>().prefill.done, 96u);
        QVERIFY(!p.progress.at(0).at(0).value<JobProgress>().summary.has_value());
        const JobResult result = p.finished.at(0).at(0).value<JobResult>();
        QCOMPARE(result.measure.documentTokens, 4u);
        QVERIFY(result.retention.has_value());
        QCOMPARE(result.retention->conversationId, qint64(3));
        QVERIFY(result.retention->inContext);
    }

    void aSummaryJobReportsItsPasses() {
        loadModel();
        Spies s(m_host->summarize({.conversationId = 1, .title = QStringLiteral("t"), .text = QStringLiteral("text")}));
        QVERIFY(s.finished.wait(kEventuallyMs));
        QCOMPARE(s.progress.count(), 3);
        for (const QList<QVariant> & args : s.progress) QVERIFY(args.at(0).value<JobProgress>().summary.has_value());
        QCOMPARE(s.progress.at(2).at(0).value<JobProgress>().summary->progress.stage, SummaryStage::final);
        QCOMPARE(s.tokens.count(), 4);
        QCOMPARE(s.finished.at(0).at(0).value<JobResult>().kind, JobKind::summarize);
    }

    // An abandoned job is stopped and says nothing more; the host is idle once the engine
    // has let it go.
    void anAbandonedJobSaysNothingMore() {
        loadModel();
        EngineJob * job = slowPromptChat(QStringLiteral("never mind"));
        Spies c(job);
        QVERIFY(c.progress.wait(kEventuallyMs));
        job->abandon();
        QTRY_VERIFY_WITH_TIMEOUT(!m_host->isBusy(), kEventuallyMs);
        QCOMPARE(c.progress.count(), 1);
        QCOMPARE(c.finished.count() + c.failed.count() + c.tokens.count(), 0);
        QVERIFY(m_script->chunksRun.load() < 200);
    }

    void chatWithoutAModelFails() {
        Spies c(m_host->chat(chatRequest(QStringLiteral("hi"))));
        QVERIFY(c.failed.wait(kEventuallyMs));
        QCOMPARE(c.started.count(), 1);
        QCOMPARE(c.failed.count(), 1);
        QCOMPARE(c.finished.count(), 0);
        QCOMPARE(c.failed.at(0).at(0).value<JobError>().errorKind, JobErrorKind::noModel);
        QCOMPARE(m_script->replies.load(), 0);
    }

    void stopActsWithinOneChunkDuringPrefill() {
        loadModel();
        EngineJob * job = slowPromptChat(QStringLiteral("a long prompt"));
        Spies c(job);
        QVERIFY(c.progress.wait(kEventuallyMs));
        const int chunksAtStop = m_script->chunksRun.load();
        job->stop();
        QVERIFY(c.finished.wait(kEventuallyMs));
        // The chunk being evaluated when Stop came may finish; no other starts.
        QVERIFY2(m_script->chunksRun.load() <= chunksAtStop + 1, qPrintable(QString::number(m_script->chunksRun.load())));
        QCOMPARE(c.finished.at(0).at(0).value<JobResult>().reason, StopReason::cancelled);
        QCOMPARE(c.tokens.count(), 0);
        QCOMPARE(m_script->tokensRun.load(), 0);
    }

    void stopActsWithinOneTokenDuringDecode() {
        loadModel();
        m_script->tokens.clear();
        for (int i = 0; i < 500; ++i) m_script->tokens << QStringLiteral("t%1 ").arg(i);
        m_script->tokenDelayMs = 5;
        EngineJob * job = m_host->chat(chatRequest(QStringLiteral("tell me a long story")));
        Spies c(job);
        QTRY_VERIFY_WITH_TIMEOUT(c.tokens.count() >= 3, kEventuallyMs);
        const int tokensAtStop = m_script->tokensRun.load();
        job->stop();
        QVERIFY(c.finished.wait(kEventuallyMs));
        QVERIFY2(m_script->tokensRun.load() <= tokensAtStop + 1, qPrintable(QString::number(m_script->tokensRun.load())));
        const JobResult result = c.finished.at(0).at(0).value<JobResult>();
        QCOMPARE(result.reason, StopReason::cancelled);
        QCOMPARE(result.text, c.streamed());  // every token generated was delivered, nothing after
        QVERIFY(result.generatedTokens < 500u);
    }

    void stopAlsoStopsQueuedJobs() {
        loadModel();
        m_script->prefillChunks = 100;
        m_script->chunkDelayMs = 10;
        Spies one(m_host->chat(chatRequest(QStringLiteral("one"))));
        Spies two(m_host->chat(chatRequest(QStringLiteral("two"))));
        QVERIFY(one.progress.wait(kEventuallyMs));
        m_host->requestStop();
        QTRY_COMPARE_WITH_TIMEOUT(one.finished.count() + two.finished.count(), 2, kEventuallyMs);
        QCOMPARE(one.finished.at(0).at(0).value<JobResult>().reason, StopReason::cancelled);
        QCOMPARE(two.finished.at(0).at(0).value<JobResult>().reason, StopReason::cancelled);
        QVERIFY(m_script->chunksRun.load() <= 2);
    }

    void stopOneJobLeavesTheOthers() {
        loadModel();
        m_script->chunkDelayMs = 5;
        EngineJob * first = m_host->chat(chatRequest(QStringLiteral("one")));
        EngineJob * second = m_host->chat(chatRequest(QStringLiteral("two")));
        Spies a(first), b(second);
        QSignalSpy order(m_host.get(), &EngineHost::busyChanged);
        first->stop();
        QTRY_COMPARE_WITH_TIMEOUT(b.finished.count(), 1, kEventuallyMs);
        QCOMPARE(a.finished.count(), 1);
        QCOMPARE(a.finished.at(0).at(0).value<JobResult>().reason, StopReason::cancelled);
        QCOMPARE(b.finished.at(0).at(0).value<JobResult>().reason, StopReason::end_of_generation);
        QCOMPARE(order.count(), 1);  // idle once both are done
    }

    void engineErrorArrivesAsFailed() {
        loadModel();
        m_script->failReplyWith = QStringLiteral("the engine broke");
        QSignalSpy busy(m_host.get(), &EngineHost::busyChanged);
        Spies c(m_host->chat(chatRequest(QStringLiteral("hi"))));
        QVERIFY(c.failed.wait(kEventuallyMs));
        const JobError e = c.failed.at(0).at(0).value<JobError>();
        QCOMPARE(e.kind, JobKind::chat);
        QCOMPARE(e.errorKind, JobErrorKind::engine);
        QCOMPARE(e.message, QStringLiteral("the engine broke"));
        QCOMPARE(c.finished.count(), 0);
        QCOMPARE(busy.count(), 2);
        QVERIFY(!m_host->isBusy());
    }

    // The exception barrier: what the engine throws ends the job as failed with a plain
    // message, and the engine thread goes on with the next job.
    void whatTheEngineThrowsFailsTheJob_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("message");
        QTest::newRow("out of memory") << "bad_alloc"
                                       << "The engine ran out of memory: std::bad_alloc. Lower the context";
        QTest::newRow("std::exception") << "runtime_error"
                                        << "The engine failed: a tensor went missing.";
        QTest::newRow("anything else") << "int"
                                       << "The engine failed with an unknown error.";
    }
    void whatTheEngineThrowsFailsTheJob() {
        QFETCH(QString, what);
        QFETCH(QString, message);
        loadModel();
        m_script->throwInReply = what;
        Spies c(m_host->chat(chatRequest(QStringLiteral("hi"))));
        QVERIFY(c.failed.wait(kEventuallyMs));
        QCOMPARE(c.failed.count(), 1);
        QCOMPARE(c.finished.count(), 0);
        const JobError e = c.failed.at(0).at(0).value<JobError>();
        QCOMPARE(e.kind, JobKind::chat);
        QCOMPARE(e.errorKind, JobErrorKind::engine);
        QVERIFY2(e.message.startsWith(message), qPrintable(e.message));
        QTRY_VERIFY_WITH_TIMEOUT(!m_host->isBusy(), kEventuallyMs);
        m_script->throwInReply.clear();
        Spies next(m_host->chat(chatRequest(QStringLiteral("again"))));
        QVERIFY(next.finished.wait(kEventuallyMs));
        QCOMPARE(next.streamed(), QStringLiteral("Hello, world."));
    }

    // The engine itself cannot be made: each job fails and says why.
    void anEngineThatCannotBeMadeFailsTheJob() {
        EngineHost host([]() -> std::unique_ptr<InferenceEngine> { throw std::runtime_error("no engine today"); });
        Spies l(host.loadModel({.path = QStringLiteral("fake.gguf")}));
        QVERIFY(l.failed.wait(kEventuallyMs));
        QCOMPARE(l.started.count(), 0);
        QCOMPARE(l.failed.at(0).at(0).value<JobError>().message, QStringLiteral("The engine failed: no engine today."));
        QTRY_VERIFY_WITH_TIMEOUT(!host.isBusy(), kEventuallyMs);
    }

    void modelLoadErrorNamesTheProblem() {
        m_script->failLoadWith = QStringLiteral("x.gguf: cannot open the file");
        Spies l(m_host->loadModel({.path = QStringLiteral("x.gguf")}));
        QVERIFY(l.failed.wait(kEventuallyMs));
        const JobError e = l.failed.at(0).at(0).value<JobError>();
        QCOMPARE(e.kind, JobKind::loadModel);
        QCOMPARE(e.errorKind, JobErrorKind::model);
        QVERIFY(e.message.contains(QStringLiteral("x.gguf")));
    }

    void documentThatDoesNotFitIsRefusedWithTheSizes() {
        loadModel();
        PrefillRequest r{.conversationId = 7};
        r.context.documentTitle = QStringLiteral("big.txt");
        r.context.documentText = QString(4000, QLatin1Char('a'));  // 1000 fake tokens > 512
        Spies p(m_host->prefill(r));
        QVERIFY(p.failed.wait(kEventuallyMs));
        QCOMPARE(p.measured.count(), 1);
        QCOMPARE(p.progress.count(), 0);
        const JobError e = p.failed.at(0).at(0).value<JobError>();
        QCOMPARE(e.errorKind, JobErrorKind::contextFull);
        QCOMPARE(e.measure.documentTokens, 1000u);
        QVERIFY(!e.measure.fits);
        QVERIFY(e.message.contains(QStringLiteral("1008")));
        QVERIFY(e.message.contains(QStringLiteral("Summarize")));
        QCOMPARE(m_script->prefills.load(), 0);
        QVERIFY(e.retention.has_value());
        QCOMPARE(e.retention->conversationId, qint64(7));
    }

    void cacheSnapshotsShowAbsentTiersAsAbsent() {
        QSignalSpy snapshots(m_host.get(), &EngineHost::cacheSnapshot);
        loadModel();
        QSignalSpy finished(m_host->chat(chatRequest(QStringLiteral("hi"))), &EngineJob::finished);
        QVERIFY(finished.wait(kEventuallyMs));
        QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() >= 2, kEventuallyMs);  // one after each job at least
        const CacheSnapshot s = snapshots.last().at(0).value<CacheSnapshot>();
        QVERIFY(s.hasSession);
        QVERIFY(s.kv.tiers[0].present);
        QVERIFY(!s.kv.tiers[1].present);
        QVERIFY(!s.kv.tiers[2].present);
        QVERIFY(s.decodeTokensPerSecond > 0);
    }

    // The GUI thread keeps processing events while the engine thread prefills: a 5 ms
    // timer keeps firing. The worst gap is reported, not asserted.
    void eventLoopRunsDuringALongPrefill() {
        loadModel();
        m_script->prefillChunks = 60;
        m_script->chunkDelayMs = 15;
        EngineJob * job = m_host->chat(chatRequest(QStringLiteral("read this")));
        QSignalSpy finished(job, &EngineJob::finished);
        QSignalSpy progress(job, &EngineJob::progress);
        QTimer ticker;
        ticker.setInterval(5);
        int ticks = 0;
        qint64 worstGapMs = 0;
        QElapsedTimer sinceTick;
        connect(&ticker, &QTimer::timeout, this, [&] {
            if (ticks++ > 0) worstGapMs = std::max(worstGapMs, sinceTick.elapsed());
            sinceTick.restart();
        });
        ticker.start();
        sinceTick.start();
        QVERIFY(finished.wait(kEventuallyMs));
        ticker.stop();
        qInfo("GUI event loop during a %d-chunk prefill: %d timer ticks, worst gap %lld ms", m_script->prefillChunks, ticks, worstGapMs);
        QCOMPARE(progress.count(), 60);
        QVERIFY2(ticks >= 20, qPrintable(QString::number(ticks)));
    }
};

QTEST_GUILESS_MAIN(TestEngineHost)
#include "test_engine_host.moc"
