// SessionController with the real EngineHost thread and a scripted engine: replies stream
// into the message model and the database (flushed while streaming; a reply's thinking
// apart, and back to the engine in the next turn's context), stop mid-prefill and
// mid-decode, engine errors, switching conversations while generating, regenerate and
// edit-and-resend, documents that fit and that do not, summaries, and a restart that finds
// everything (an interrupted reply included).
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/core/session_controller.h"
#include "app/support/fake_engine.h"
#include "support/eventually.h"

using namespace lr;
using namespace lr::app;
using namespace lr::test;

namespace {

// One run of the app's core on a database and settings file that outlive it.
struct Core {
    Core(const QString & dir, std::shared_ptr<FakeScript> script)
        : db(dir + QStringLiteral("/conversations.sqlite")),
          settings(std::make_unique<QSettings>(dir + QStringLiteral("/settings.ini"), QSettings::IniFormat)),
          engine(fakeFactory(std::move(script))) {
        if (!db.open()) qFatal("%s", qPrintable(db.errorMessage()));
        controller = std::make_unique<SessionController>(db, engine, settings);
        conversationsTester = std::make_unique<QAbstractItemModelTester>(controller->conversations(),
                                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
        messagesTester = std::make_unique<QAbstractItemModelTester>(controller->messages(),
                                                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    }
    ~Core() {
        messagesTester.reset();
        conversationsTester.reset();
        controller.reset();
    }
    bool startAndWaitForModel() {
        QSignalSpy ready(controller.get(), &SessionController::modelReady);
        controller->start();
        return ready.wait(kEventuallyMs);
    }
    std::vector<MessageRecord> stored(qint64 conversation) { return MessageRepository(db).forConversation(conversation); }

    Database db;
    AppSettings settings;
    EngineHost engine;
    std::unique_ptr<SessionController> controller;
    std::unique_ptr<QAbstractItemModelTester> conversationsTester;
    std::unique_ptr<QAbstractItemModelTester> messagesTester;
};

}  // namespace

class TestSessionController : public QObject {
    Q_OBJECT

    std::unique_ptr<QTemporaryDir> m_dir;
    std::shared_ptr<FakeScript> m_script;
    std::unique_ptr<Core> m_core;
    SessionController * c() { return m_core->controller.get(); }

    void waitIdle() { QTRY_VERIFY_WITH_TIMEOUT(!c()->isReplying(), kEventuallyMs); }
    QString writeFile(const QString & name, const QByteArray & bytes) {
        QFile f(m_dir->filePath(name));
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return f.fileName();
    }
    void slowTokens(int n, int delayMs) {
        m_script->tokens.clear();
        for (int i = 0; i < n; ++i) m_script->tokens << QStringLiteral("w%1 ").arg(i);
        m_script->tokenDelayMs = delayMs;
    }

private slots:
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        m_script = std::make_shared<FakeScript>();
        m_core = std::make_unique<Core>(m_dir->path(), m_script);
        QVERIFY(m_core->startAndWaitForModel());
        QVERIFY(c()->isModelReady());
    }
    void cleanup() {
        m_core.reset();
        m_dir.reset();
    }

    void replyStreamsIntoTheModelAndTheDatabase() {
        QSignalSpy replying(c(), &SessionController::replyingChanged);
        QSignalSpy inserted(c()->messages(), &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(c()->messages(), &QAbstractItemModel::dataChanged);
        QSignalSpy conversationAdded(c()->conversations(), &QAbstractItemModel::rowsInserted);
        c()->sendMessage(QStringLiteral("  What is in the report?  "));
        QVERIFY(c()->isReplying());
        QCOMPARE(conversationAdded.count(), 1);
        QCOMPARE(inserted.count(), 2);  // the question, the (empty) reply
        waitIdle();
        QCOMPARE(replying.count(), 2);
        // One dataChanged per token, one for the prompt's progress note, one to clear it, one at the end.
        int textChanges = 0;
        for (const QList<QVariant> & args : changed) {
            if (args.at(2).value<QList<int>>() == QList<int>{MessageListModel::TextRole}) ++textChanges;
        }
        QCOMPARE(textChanges, 4);
        const qint64 conversation = c()->currentConversation();
        QCOMPARE(c()->conversations()->index(0).data().toString(), QStringLiteral("What is in the report?"));
        const std::vector<MessageRecord> rows = m_core->stored(conversation);
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows[0].text, QStringLiteral("What is in the report?"));
        QCOMPARE(rows[1].text, QStringLiteral("Hello, world."));
        QCOMPARE(rows[1].state, MessageState::finished);
        QCOMPARE(rows[1].stopReason, QStringLiteral("end"));
        QVERIFY2(rows[1].note.contains(QStringLiteral("tok/s")), qPrintable(rows[1].note));
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::TextRole).toString(), QStringLiteral("Hello, world."));
        QCOMPARE(m_script->lastUserText, QStringLiteral("What is in the report?"));
    }

    void thinkingStreamsApartIntoTheModelAndTheDatabase() {
        m_script->thinking = {QStringLiteral("They ask"), QStringLiteral(" about the report.")};
        QSignalSpy changed(c()->messages(), &QAbstractItemModel::dataChanged);
        c()->sendMessage(QStringLiteral("What is in the report?"));
        waitIdle();
        int thinkingChanges = 0;
        for (const QList<QVariant> & args : changed) {
            if (args.at(2).value<QList<int>>() == QList<int>{MessageListModel::ThinkingRole}) ++thinkingChanges;
        }
        QCOMPARE(thinkingChanges, 2);
        const MessageRecord reply = m_core->stored(c()->currentConversation()).back();
        QCOMPARE(reply.thinking, QStringLiteral("They ask about the report."));
        QCOMPARE(reply.text, QStringLiteral("Hello, world."));
        QCOMPARE(reply.state, MessageState::finished);
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::ThinkingRole).toString(), reply.thinking);
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::TextRole).toString(), reply.text);
        QCOMPARE(c()->messages()->index(0).data(MessageListModel::ThinkingRole).toString(), QString());
    }

    // The chat template decides whether a past turn's thinking is shown: the engine gets it.
    void theNextRequestCarriesThePreviousThinking() {
        m_script->thinking = {QStringLiteral("Greet back.")};
        c()->sendMessage(QStringLiteral("hi"));
        waitIdle();
        m_script->thinking.clear();
        c()->sendMessage(QStringLiteral("and then?"));
        waitIdle();
        const std::vector<ChatTurn> & turns = m_script->lastContext.turns;
        QCOMPARE(turns.size(), size_t(2));
        QCOMPARE(turns[0].role, QStringLiteral("user"));
        QCOMPARE(turns[0].thinking, QString());
        QCOMPARE(turns[1].role, QStringLiteral("assistant"));
        QCOMPARE(turns[1].text, QStringLiteral("Hello, world."));
        QCOMPARE(turns[1].thinking, QStringLiteral("Greet back."));
        QCOMPARE(m_core->stored(c()->currentConversation()).back().thinking, QString());
    }

    // Stopped while it thinks: the thinking so far is saved (also while it streams, and
    // across a switch of conversation); with no answer, the reply is not part of the context.
    void stopDuringTheThinking() {
        c()->setFlushInterval(30);
        for (int i = 0; i < 400; ++i) m_script->thinking << QStringLiteral("hmm ");
        m_script->tokenDelayMs = 5;
        c()->sendMessage(QStringLiteral("think hard"));
        const qint64 conversation = c()->currentConversation();
        QTRY_VERIFY_WITH_TIMEOUT(m_core->stored(conversation).back().thinking.size() > 20, kEventuallyMs);
        QCOMPARE(m_core->stored(conversation).back().state, MessageState::streaming);
        c()->newConversation();
        c()->selectConversation(conversation);
        QVERIFY(c()->messages()->index(1).data(MessageListModel::ThinkingRole).toString().startsWith(QStringLiteral("hmm hmm")));
        c()->stop();
        waitIdle();
        const MessageRecord reply = m_core->stored(conversation).back();
        QCOMPARE(reply.state, MessageState::stopped);
        QCOMPARE(reply.text, QString());
        QVERIFY(reply.thinking.startsWith(QStringLiteral("hmm hmm")));
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::ThinkingRole).toString(), reply.thinking);
        m_script->thinking.clear();
        c()->sendMessage(QStringLiteral("well?"));
        waitIdle();
        QCOMPARE(m_script->lastContext.turns.size(), size_t(1));
    }

    void streamingTextIsSavedBeforeTheReplyEnds() {
        c()->setFlushInterval(30);
        slowTokens(400, 5);
        c()->sendMessage(QStringLiteral("long answer please"));
        const qint64 conversation = c()->currentConversation();
        // While it streams, the database already has part of it.
        QTRY_VERIFY_WITH_TIMEOUT(m_core->stored(conversation).back().text.size() > 20, kEventuallyMs);
        QVERIFY(c()->isReplying());
        QCOMPARE(m_core->stored(conversation).back().state, MessageState::streaming);
        c()->stop();
        waitIdle();
    }

    void stopDuringThePrompt() {
        m_script->prefillChunks = 300;
        m_script->chunkDelayMs = 10;
        c()->sendMessage(QStringLiteral("hi"));
        QTRY_VERIFY_WITH_TIMEOUT(m_script->chunksRun.load() > 0, kEventuallyMs);  // the prompt is being read
        c()->stop();
        waitIdle();
        const MessageRecord reply = m_core->stored(c()->currentConversation()).back();
        QCOMPARE(reply.state, MessageState::stopped);
        QCOMPARE(reply.stopReason, QStringLiteral("stopped"));
        QCOMPARE(reply.text, QString());
        QCOMPARE(m_script->tokensRun.load(), 0);
        QVERIFY(m_script->chunksRun.load() < 300);
    }

    void stopDuringTheReply() {
        slowTokens(500, 5);
        c()->sendMessage(QStringLiteral("hi"));
        QTRY_VERIFY_WITH_TIMEOUT(c()->messages()->index(1).data(MessageListModel::TextRole).toString().size() > 10, kEventuallyMs);
        c()->stop();
        waitIdle();
        const MessageRecord reply = m_core->stored(c()->currentConversation()).back();
        QCOMPARE(reply.state, MessageState::stopped);
        QVERIFY(!reply.text.isEmpty());
        QVERIFY(reply.text.size() < 500 * 4);
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::TextRole).toString(), reply.text);
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::StateRole).toInt(), int(MessageState::stopped));
    }

    void engineErrorMarksTheReplyFailed() {
        m_script->failReplyWith = QStringLiteral("out of memory in the engine");
        QSignalSpy errors(c(), &SessionController::errorOccurred);
        c()->sendMessage(QStringLiteral("hi"));
        waitIdle();
        QCOMPARE(errors.count(), 1);
        QCOMPARE(errors.at(0).at(0).toString(), QStringLiteral("out of memory in the engine"));
        const MessageRecord reply = m_core->stored(c()->currentConversation()).back();
        QCOMPARE(reply.state, MessageState::failed);
        QCOMPARE(reply.note, QStringLiteral("out of memory in the engine"));
        // The next turn works, and the failed reply is not part of its context.
        m_script->failReplyWith.clear();
        c()->sendMessage(QStringLiteral("again"));
        waitIdle();
        QCOMPARE(m_script->lastContext.turns.size(), size_t(1));
        QCOMPARE(m_script->lastContext.turns[0].text, QStringLiteral("hi"));
        QCOMPARE(m_core->stored(c()->currentConversation()).back().state, MessageState::finished);
    }

    void switchingConversationsWhileGenerating() {
        slowTokens(60, 10);
        c()->sendMessage(QStringLiteral("first conversation"));
        const qint64 first = c()->currentConversation();
        QTRY_VERIFY_WITH_TIMEOUT(!c()->messages()->index(1).data(MessageListModel::TextRole).toString().isEmpty(), kEventuallyMs);

        c()->newConversation();
        const qint64 second = c()->currentConversation();
        QVERIFY(second != first);
        QCOMPARE(c()->messages()->rowCount(), 0);
        QSignalSpy changed(c()->messages(), &QAbstractItemModel::dataChanged);
        QSignalSpy inserted(c()->messages(), &QAbstractItemModel::rowsInserted);
        QTest::qWait(100);
        QCOMPARE(changed.count(), 0);  // the other conversation's tokens do not leak in
        QCOMPARE(inserted.count(), 0);
        QVERIFY(c()->isReplying());

        // Back to the first while it still streams: the text so far is there, and grows.
        c()->selectConversation(first);
        QCOMPARE(c()->messages()->rowCount(), 2);
        const QString soFar = c()->messages()->index(1).data(MessageListModel::TextRole).toString();
        QVERIFY(!soFar.isEmpty());
        c()->selectConversation(second);
        changed.clear();
        waitIdle();
        QCOMPARE(changed.count(), 0);
        const std::vector<MessageRecord> rows = m_core->stored(first);
        QCOMPARE(rows.back().state, MessageState::finished);
        QVERIFY(rows.back().text.startsWith(soFar));
        QCOMPARE(rows.back().text.count(QLatin1Char('w')), 60);
        QCOMPARE(m_core->stored(second).size(), size_t(0));
        c()->selectConversation(first);
        QCOMPARE(c()->messages()->index(1).data(MessageListModel::TextRole).toString(), rows.back().text);
    }

    void regenerateReplacesTheLastReply() {
        c()->sendMessage(QStringLiteral("question"));
        waitIdle();
        const uint64_t firstSeed = m_script->lastSeed;
        QCOMPARE(firstSeed, c()->settings().sampler.seed);  // a sent message: the settings' seed (reproducible)
        QVERIFY(c()->canRegenerate());
        m_script->tokens = {QStringLiteral("Another"), QStringLiteral(" answer")};
        QSignalSpy removed(c()->messages(), &QAbstractItemModel::rowsRemoved);
        c()->regenerate();
        waitIdle();
        QCOMPARE(removed.count(), 1);
        const std::vector<MessageRecord> rows = m_core->stored(c()->currentConversation());
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows[1].text, QStringLiteral("Another answer"));
        QCOMPARE(m_script->lastUserText, QStringLiteral("question"));
        QCOMPARE(m_script->lastContext.turns.size(), size_t(0));  // the old reply is gone
        QCOMPARE(m_script->replies.load(), 2);
        // Another draw: the same seed would give the same reply again.
        QVERIFY(m_script->lastSeed != firstSeed);
        const uint64_t secondSeed = m_script->lastSeed;
        c()->regenerate();
        waitIdle();
        QVERIFY(m_script->lastSeed != secondSeed);
        QCOMPARE(c()->settings().sampler.seed, firstSeed);  // the conversation's settings are unchanged
    }

    void editAndResendTheLastPrompt() {
        c()->sendMessage(QStringLiteral("first"));
        waitIdle();
        c()->sendMessage(QStringLiteral("secnd questoin"));
        waitIdle();
        QCOMPARE(c()->lastPrompt(), QStringLiteral("secnd questoin"));
        c()->resendEdited(QStringLiteral("second question"));
        waitIdle();
        const std::vector<MessageRecord> rows = m_core->stored(c()->currentConversation());
        QCOMPARE(rows.size(), size_t(4));
        QCOMPARE(rows[2].text, QStringLiteral("second question"));
        QCOMPARE(m_script->lastUserText, QStringLiteral("second question"));
        QCOMPARE(m_script->lastContext.turns.size(), size_t(2));
        QCOMPARE(c()->messages()->rowCount(), 4);
    }

    void documentThatFitsGoesIntoTheContext() {
        const QString path = writeFile(QStringLiteral("notes.md"), "# Notes\n\nThe meeting is on Tuesday.\n");
        QSignalSpy document(c(), &SessionController::documentChanged);
        c()->attachDocument(path);
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::inContext, kEventuallyMs);
        QList<DocumentPhase> phases;
        for (const QList<QVariant> & args : document) phases << args.at(0).value<DocumentState>().phase;
        QVERIFY(phases.indexOf(DocumentPhase::loading) >= 0);
        QVERIFY(phases.indexOf(DocumentPhase::loading) < phases.indexOf(DocumentPhase::reading));
        QCOMPARE(c()->document().title, QStringLiteral("notes.md"));
        QVERIFY(c()->document().tokens > 0);
        QCOMPARE(m_script->prefills.load(), 1);
        QVERIFY(m_script->lastContext.documentText.contains(QStringLiteral("Tuesday")));
        const std::optional<DocumentRecord> stored = DocumentRepository(m_core->db).forConversation(c()->currentConversation());
        QVERIFY(stored.has_value());
        QCOMPARE(stored->tokenCount, c()->document().tokens);
        QCOMPARE(c()->conversations()->index(0).data().toString(), QStringLiteral("notes.md"));

        c()->sendMessage(QStringLiteral("When is the meeting?"));
        waitIdle();
        QVERIFY(m_script->lastContext.hasDocument());
        QTRY_VERIFY_WITH_TIMEOUT(c()->retention().has_value(), kEventuallyMs);
        QVERIFY(c()->retention()->inContext);
    }

    void documentThatDoesNotFitIsSaidSoAndSummarized() {
        m_script->contextLimit = 128;
        const QString path = writeFile(QStringLiteral("book.txt"), QByteArray("A long chapter. ").repeated(200));
        QSignalSpy errors(c(), &SessionController::errorOccurred);
        c()->attachDocument(path);
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::tooLong, kEventuallyMs);
        QVERIFY(c()->document().message.contains(QStringLiteral("not in the chat's context")));
        QVERIFY(!c()->document().measure.fits);
        QCOMPARE(m_script->prefills.load(), 0);
        // A question now is answered without the document, and the panel says so.
        c()->sendMessage(QStringLiteral("what happens?"));
        waitIdle();
        QVERIFY(!m_script->lastContext.hasDocument());
        // Summarizing reads all of it.
        QVERIFY(c()->canSummarize());
        c()->summarizeDocument();
        waitIdle();
        QCOMPARE(m_script->summaries.load(), 1);
        const MessageRecord summary = m_core->stored(c()->currentConversation()).back();
        QCOMPARE(summary.state, MessageState::finished);
        QVERIFY2(summary.note.startsWith(QStringLiteral("map-reduce")), qPrintable(summary.note));
        QCOMPARE(summary.text, QStringLiteral("Hello, world."));
        QCOMPARE(errors.count(), 0);
    }

    void raisingTheContextReadsTheDocumentAgain() {
        m_script->contextLimit = 128;
        c()->attachDocument(writeFile(QStringLiteral("mid.txt"), QByteArray("words ").repeated(100)));
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::tooLong, kEventuallyMs);
        m_script->contextLimit = 4096;
        EngineSettings s = c()->settings();
        s.contextTokens = 4096;
        c()->setSettings(s);
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::inContext, kEventuallyMs);
    }

    void unreadableDocumentSaysWhy() {
        QSignalSpy errors(c(), &SessionController::errorOccurred);
        c()->attachDocument(writeFile(QStringLiteral("empty.txt"), QByteArray()));
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::failed, kEventuallyMs);
        QVERIFY(c()->document().message.contains(QStringLiteral("is empty")));
        QCOMPARE(errors.count(), 1);
    }

    void stopReadingADocument() {
        m_script->prefillChunks = 500;
        m_script->chunkDelayMs = 10;
        c()->attachDocument(writeFile(QStringLiteral("slow.txt"), "some text to read slowly"));
        QTRY_VERIFY_WITH_TIMEOUT(c()->document().progress.total > 0, kEventuallyMs);  // reading, with progress
        QCOMPARE(c()->document().phase, DocumentPhase::reading);
        c()->stopReadingDocument();
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::stopped, kEventuallyMs);
        QVERIFY(!c()->document().usableInContext());
    }

    // Reading the document again while it is being read: the new reading is the one that
    // counts (the first job is abandoned, not reported as stopped).
    void readingAgainWhileReading() {
        m_script->prefillChunks = 40;
        m_script->chunkDelayMs = 5;
        c()->attachDocument(writeFile(QStringLiteral("again.txt"), "text to read twice"));
        QTRY_VERIFY_WITH_TIMEOUT(c()->document().progress.total > 0, kEventuallyMs);
        c()->readDocumentAgain();
        QCOMPARE(c()->document().phase, DocumentPhase::reading);
        QTRY_VERIFY_WITH_TIMEOUT(!m_core->engine.isBusy(), kEventuallyMs);
        QCOMPARE(c()->document().phase, DocumentPhase::inContext);
        QCOMPARE(m_script->prefills.load(), 2);
    }

    void deletingTheConversationBeingAnswered() {
        slowTokens(200, 5);
        c()->sendMessage(QStringLiteral("doomed"));
        const qint64 doomed = c()->currentConversation();
        QTRY_VERIFY_WITH_TIMEOUT(!c()->messages()->index(1).data(MessageListModel::TextRole).toString().isEmpty(), kEventuallyMs);
        c()->deleteConversation(doomed);
        QVERIFY(!c()->isReplying());
        QCOMPARE(c()->conversations()->rowCount(), 0);
        QCOMPARE(c()->currentConversation(), qint64(0));
        QTRY_VERIFY_WITH_TIMEOUT(!m_core->engine.isBusy(), kEventuallyMs);
        QCOMPARE(m_core->stored(doomed).size(), size_t(0));
    }

    void renameAndSearch() {
        c()->sendMessage(QStringLiteral("apples and pears"));
        waitIdle();
        const qint64 a = c()->currentConversation();
        c()->newConversation();
        c()->renameConversation(c()->currentConversation(), QStringLiteral("  Server   logs "));
        QCOMPARE(c()->conversations()->index(0).data().toString(), QStringLiteral("Server logs"));
        c()->search(QStringLiteral("pears"));
        QCOMPARE(c()->conversations()->rowCount(), 1);
        QCOMPARE(c()->conversations()->idAt(0), a);
        c()->search(QString());
        QCOMPARE(c()->conversations()->rowCount(), 2);
    }

    void settingsArePerConversationAndSurviveARestart() {
        c()->newConversation();
        const qint64 id = c()->currentConversation();
        EngineSettings s = c()->settings();
        s.chunkTokens = 64;
        s.kv.k_bits = 8;
        c()->setSettings(s);
        c()->newConversation();
        QCOMPARE(c()->settings().chunkTokens, kAutoChunk);  // another conversation: the defaults
        c()->saveSettingsAsDefaults();
        m_core.reset();
        m_core = std::make_unique<Core>(m_dir->path(), m_script);
        QVERIFY(m_core->startAndWaitForModel());
        c()->selectConversation(id);
        QCOMPARE(c()->settings().chunkTokens, 64u);
        QCOMPARE(c()->settings().kv.k_bits, 8u);
    }

    void restartFindsTheConversationAndTheInterruptedReply() {
        c()->sendMessage(QStringLiteral("remember me"));
        waitIdle();
        const qint64 first = c()->currentConversation();
        c()->setFlushInterval(20);
        slowTokens(1000, 5);
        c()->sendMessage(QStringLiteral("a reply cut short"));
        QTRY_VERIFY_WITH_TIMEOUT(m_core->stored(first).back().text.size() > 10, kEventuallyMs);
        m_core.reset();  // the program ends mid-reply

        m_script = std::make_shared<FakeScript>();
        m_core = std::make_unique<Core>(m_dir->path(), m_script);
        QVERIFY(m_core->startAndWaitForModel());
        QCOMPARE(c()->currentConversation(), first);
        QCOMPARE(c()->messages()->rowCount(), 4);
        QCOMPARE(c()->messages()->index(0).data().toString(), QStringLiteral("remember me"));
        QCOMPARE(c()->messages()->index(1).data().toString(), QStringLiteral("Hello, world."));
        QCOMPARE(c()->messages()->index(3).data(MessageListModel::StateRole).toInt(), int(MessageState::interrupted));
        QVERIFY(c()->messages()->index(3).data().toString().startsWith(QStringLiteral("w0 w1")));
    }

    // The document of the conversation a restart opens is read once the model is loaded: it
    // never shows as failed ("no model is loaded") in between.
    void restartReadsTheDocumentOnceTheModelIsLoaded() {
        c()->attachDocument(writeFile(QStringLiteral("notes.md"), "# Notes\n\nThe meeting is on Tuesday.\n"));
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::inContext, kEventuallyMs);
        m_core.reset();

        m_core = std::make_unique<Core>(m_dir->path(), m_script);
        QSignalSpy document(c(), &SessionController::documentChanged);
        QVERIFY(m_core->startAndWaitForModel());
        QTRY_COMPARE_WITH_TIMEOUT(c()->document().phase, DocumentPhase::inContext, kEventuallyMs);
        for (const QList<QVariant> & args : document) {
            const DocumentState state = args.at(0).value<DocumentState>();
            QVERIFY2(state.phase != DocumentPhase::failed, qPrintable(state.message));
        }
    }

    void aModelThatFailsToLoadAtStartFallsBackToTheBundledOne() {
        m_core.reset();
        {
            QSettings ini(m_dir->filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
            ini.setValue("model/last", "/models/broken.gguf");
        }
        m_script->failLoadWith = QStringLiteral("/models/broken.gguf: not a GGUF file");
        m_script->failLoadFor = QStringLiteral("broken");
        m_core = std::make_unique<Core>(m_dir->path(), m_script);
        QSignalSpy failed(c(), &SessionController::modelFailed);
        QSignalSpy errors(c(), &SessionController::errorOccurred);
        QVERIFY(m_core->startAndWaitForModel());
        QCOMPARE(failed.count(), 1);
        QCOMPARE(errors.count(), 1);
        QVERIFY(errors.at(0).at(0).toString().contains(QStringLiteral("bundled")));
        QCOMPARE(c()->model().path, QString::fromLatin1(kBundledModelPath));
    }
};

QTEST_GUILESS_MAIN(TestSessionController)
#include "test_session_controller.moc"
