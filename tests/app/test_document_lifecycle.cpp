// The document's state machine: every transition (opened, read, restored, stopped, too long,
// failed, read again, summarizing), the events it ignores (another conversation's, a job
// that is no longer reading, a file that is not loading), exactly one changed() per change,
// and what each phase allows (summarize, read again, the document in the chat's context).
#include <QSignalSpy>
#include <QtTest>

#include <functional>

#include "app/core/document_lifecycle.h"

using namespace lr;
using namespace lr::app;

namespace {

const DocumentRecord kStored{.id = 5,
                             .conversationId = 1,
                             .path = "/docs/notes.md",
                             .title = "notes.md",
                             .format = "md",
                             .fileBytes = 1200,
                             .tokenCount = -1,
                             .text = "Meeting on Tuesday."};
const ContextMeasure kFits{.documentTokens = 300, .promptTokens = 340, .contextLimit = 2048, .reserveTokens = 512, .fits = true};
const ContextMeasure kTooLong{.documentTokens = 3000, .promptTokens = 3040, .contextLimit = 2048, .reserveTokens = 512, .fits = false};

using Events = std::function<void(DocumentLifecycle &)>;

void storedAndReading(DocumentLifecycle & d) {
    d.show(1, kStored);
    d.startReading();
}

struct Scenario {
    const char * name;
    Events events;
    DocumentPhase phase;
    int changes;  // changed() emissions
};

const std::vector<Scenario> & scenarios() {
    static const std::vector<Scenario> all = {
        {"no document", [](DocumentLifecycle & d) { d.show(1, std::nullopt); }, DocumentPhase::none, 1},
        {"a file being opened", [](DocumentLifecycle & d) { d.open(1, "/docs/notes.md"); }, DocumentPhase::loading, 1},
        {"a file that cannot be used",
         [](DocumentLifecycle & d) {
             d.open(1, "/docs/empty.txt");
             d.openFailed(1, "empty.txt is empty");
         },
         DocumentPhase::failed, 2},
        {"opened, stored, reading",
         [](DocumentLifecycle & d) {
             d.open(1, "/docs/notes.md");
             d.show(1, kStored);
         },
         DocumentPhase::reading, 2},
        {"measured and read into the context",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.measured(1, kFits);
             d.progressed(1, {.done = 128, .total = 340});
             d.read(1, {.kind = JobKind::prefill, .measure = kFits});
         },
         DocumentPhase::inContext, 5},
        {"restored from the prefix cache",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.read(1, {.kind = JobKind::prefill, .restoredTokens = 320, .measure = kFits});
         },
         DocumentPhase::inContext, 3},
        {"reading stopped",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.read(1, {.kind = JobKind::prefill, .reason = StopReason::cancelled, .restoredTokens = 32});
         },
         DocumentPhase::stopped, 3},
        {"too long for the context",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.measured(1, kTooLong);
             d.readFailed(
                 1, {.kind = JobKind::prefill, .errorKind = JobErrorKind::contextFull, .message = "does not fit", .measure = kTooLong});
         },
         DocumentPhase::tooLong, 4},
        {"the engine failed",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.readFailed(1, {.kind = JobKind::prefill, .errorKind = JobErrorKind::engine, .message = "disk full"});
         },
         DocumentPhase::failed, 3},
        {"read again after it was too long",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.readFailed(1, {.kind = JobKind::prefill, .errorKind = JobErrorKind::contextFull, .measure = kTooLong});
             d.startReading();
             d.read(1, {.kind = JobKind::prefill, .measure = kFits});
         },
         DocumentPhase::inContext, 5},
        {"another conversation's reading is ignored",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.measured(2, kFits);
             d.progressed(2, {.done = 1, .total = 2});
             d.read(2, {.kind = JobKind::prefill});
             d.readFailed(2, {.kind = JobKind::prefill});
         },
         DocumentPhase::reading, 2},
        {"events after the read are ignored",
         [](DocumentLifecycle & d) {
             storedAndReading(d);
             d.read(1, {.kind = JobKind::prefill, .measure = kFits});
             d.progressed(1, {.done = 1, .total = 2});
             d.readFailed(1, {.kind = JobKind::prefill, .errorKind = JobErrorKind::engine});
         },
         DocumentPhase::inContext, 3},
        {"no reading while the file loads",
         [](DocumentLifecycle & d) {
             d.open(1, "/docs/notes.md");
             d.startReading();
         },
         DocumentPhase::loading, 1},
        {"a stored document's failure to open is ignored",
         [](DocumentLifecycle & d) {
             d.show(1, kStored);
             d.openFailed(1, "late");
         },
         DocumentPhase::reading, 1},
    };
    return all;
}

}  // namespace

class TestDocumentLifecycle : public QObject {
    Q_OBJECT

private slots:
    void transitions_data() {
        QTest::addColumn<int>("scenario");
        for (size_t i = 0; i < scenarios().size(); ++i) QTest::newRow(scenarios()[i].name) << int(i);
    }
    void transitions() {
        QFETCH(int, scenario);
        const Scenario & s = scenarios()[size_t(scenario)];
        DocumentLifecycle d;
        QSignalSpy changed(&d, &DocumentLifecycle::changed);
        s.events(d);
        QCOMPARE(d.state().phase, s.phase);
        QCOMPARE(changed.count(), s.changes);
        QCOMPARE(changed.last().at(0).value<DocumentState>().phase, s.phase);
    }

    void whatEachPhaseCarries() {
        DocumentLifecycle d;
        storedAndReading(d);
        QCOMPARE(d.state().title, QStringLiteral("notes.md"));
        QCOMPARE(d.state().characters, qint64(kStored.text.size()));
        QCOMPARE(d.state().tokens, qint64(-1));
        d.measured(1, kFits);
        QCOMPARE(d.state().tokens, qint64(300));
        d.progressed(1, {.done = 64, .total = 340, .restored = 32});
        QCOMPARE(d.state().progress.restored, 32u);
        d.read(1, {.kind = JobKind::prefill, .restoredTokens = 32, .measure = kFits});
        QCOMPARE(d.state().restoredTokens, 32u);
        QVERIFY(d.state().message.isEmpty());
        // Reading again clears the progress, the restored count and the message.
        d.note(QStringLiteral("a note"));
        d.startReading();
        QCOMPARE(d.state().progress.total, 0u);
        QCOMPARE(d.state().restoredTokens, 0u);
        QVERIFY(d.state().message.isEmpty());
        d.read(1, {.kind = JobKind::prefill, .reason = StopReason::cancelled});
        QVERIFY(d.state().message.contains(QStringLiteral("Reading stopped")));
        d.startReading();
        d.readFailed(1, {.kind = JobKind::prefill, .errorKind = JobErrorKind::contextFull, .message = "too long", .measure = kTooLong});
        QCOMPARE(d.state().message, QStringLiteral("too long"));
        QVERIFY(!d.state().measure.fits);
    }

    void summarizingIsAFlagOfItsConversation() {
        DocumentLifecycle d;
        QSignalSpy changed(&d, &DocumentLifecycle::changed);
        d.show(1, kStored);
        d.setSummarizing(2, true);  // another conversation's
        QVERIFY(!d.state().summarizing);
        d.setSummarizing(1, true);
        d.setSummarizing(1, true);  // no change
        QVERIFY(d.state().summarizing);
        QCOMPARE(d.state().phase, DocumentPhase::reading);
        d.setSummarizing(1, false);
        QVERIFY(!d.state().summarizing);
        QCOMPARE(changed.count(), 3);
    }

    void whatEachPhaseAllows_data() {
        QTest::addColumn<int>("phase");
        QTest::addColumn<bool>("summarize");
        QTest::addColumn<bool>("readAgain");
        QTest::addColumn<bool>("inChat");
        QTest::newRow("none") << int(DocumentPhase::none) << false << false << false;
        QTest::newRow("loading") << int(DocumentPhase::loading) << false << false << false;
        QTest::newRow("reading") << int(DocumentPhase::reading) << true << true << true;
        QTest::newRow("in context") << int(DocumentPhase::inContext) << true << true << true;
        QTest::newRow("too long") << int(DocumentPhase::tooLong) << true << true << false;
        QTest::newRow("stopped") << int(DocumentPhase::stopped) << true << true << false;
        QTest::newRow("failed") << int(DocumentPhase::failed) << false << true << false;
    }
    void whatEachPhaseAllows() {
        QFETCH(int, phase);
        QFETCH(bool, summarize);
        QFETCH(bool, readAgain);
        QFETCH(bool, inChat);
        DocumentLifecycle d;
        for (const Scenario & s : scenarios()) {
            if (int(s.phase) != phase) continue;
            s.events(d);
            break;
        }
        if (phase == int(DocumentPhase::none)) d.show(1, std::nullopt);
        QCOMPARE(int(d.state().phase), phase);
        QCOMPARE(d.canSummarize(), summarize);
        QCOMPARE(d.canReadAgain(), readAgain);
        QCOMPARE(d.state().usableInContext(), inChat);
    }
};

QTEST_GUILESS_MAIN(TestDocumentLifecycle)
#include "test_document_lifecycle.moc"
