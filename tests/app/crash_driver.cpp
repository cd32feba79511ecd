// longread_crash_driver: the desktop app's core, headless, running a scripted workload until
// it is killed. test_crash_recovery starts it, kills it with SIGKILL at a random moment and
// checks what the next start finds. Not installed.
//
//   longread_crash_driver <documents folder> <seed>
//
// The same objects as the desktop app (main.cpp, LongreadApp): AppSettings on the user's
// settings file, the conversation database where AppSettings puts it, an EngineHost running
// LlmEngine on its thread, a SessionController; the KV cache (and its prefix cache) under
// $XDG_CACHE_HOME. The test sets XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_CACHE_HOME, and writes
// the settings (the context, the disk budget, one thread) before the first start.
//
// The workload, in cycles: a new conversation (or, now and then, an older one, whose
// document is read again from the prefix cache), a document from the folder (doc-*.txt,
// read again and again, so restored from the prefix cache) or a new one made of its
// paragraphs (new prefix-cache entries), a question, sometimes a second one, a summary.
//
// Every state change is a line on stdout, flushed at once, starting with the steady clock in
// ms (the test reads the same clock), so the test knows what was durable when it killed:
//   ready <db path> <kv dir>            the database is open and the model loaded
//   conv <conversation>
//   doc-stored <conversation> <document id> <chars>
//   doc-reading <conversation>          the engine reads the document into the cache
//   doc-ready <conversation> <phase> <tokens> <restored tokens>
//   user <conversation> <message> <chars>                the user's message is stored
//   reply-started <conversation> <message> <chat|summary>
//   stream <message> <chars>            the reply's text in memory (every 100 ms while it grows)
//   flush <message> <chars>             the reply's text committed to the database (seen by a
//                                       second connection)
//   reply-finished <conversation> <message> <chars> <state>   committed with its final state
//   prefix <bytes> <blocks> <newest row>   the prefix cache's index changed (committed writes)
//   storage-failed <message>            a database write failed (the test fails)
//   error <message>                     what the app would show above the composer
//   cache-fault <count> <message>       the KV cache handled a fault (a block that failed its
//                                       checksum is dropped and computed again)
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTimer>

#include <chrono>
#include <cstdio>

#include "app/core/app_settings.h"
#include "app/core/database.h"
#include "app/core/engine_host.h"
#include "app/core/llm_engine.h"
#include "app/core/session_controller.h"

using namespace lr::app;

namespace {

qint64 steadyMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void say(const QString & line) {
    std::printf("%lld %s\n", static_cast<long long>(steadyMs()), qPrintable(line));
    std::fflush(stdout);
}

const char * phaseName(DocumentPhase phase) {
    switch (phase) {
        case DocumentPhase::none: return "none";
        case DocumentPhase::loading: return "loading";
        case DocumentPhase::reading: return "reading";
        case DocumentPhase::inContext: return "inContext";
        case DocumentPhase::tooLong: return "tooLong";
        case DocumentPhase::stopped: return "stopped";
        case DocumentPhase::failed: return "failed";
    }
    return "?";
}

const QStringList kQuestions = {
    QStringLiteral("What happens in the story?"),
    QStringLiteral("Who is the main character and what do they want?"),
    QStringLiteral("Tell me more about the garden."),
    QStringLiteral("What did they learn in the end?"),
    QStringLiteral("Write a new story about the same friends."),
};

class CrashDriver : public QObject {
public:
    CrashDriver(QString documents, quint32 seed, Database & db, SessionController & controller, const QString & kvDir)
        : m_documents(std::move(documents)), m_rng(seed), m_seed(seed), m_db(db), m_controller(controller), m_kvDir(kvDir) {
        connect(&controller, &SessionController::modelReady, this,
                [this] { say(QStringLiteral("ready %1 %2").arg(m_db.path(), m_kvDir)); });
        connect(&controller, &SessionController::storageFailed, this,
                [](const QString & message) { say(QStringLiteral("storage-failed ") + message); });
        connect(&controller, &SessionController::errorOccurred, this, [](const QString & message) {
            say(QStringLiteral("error ") + QString(message).replace(QLatin1Char('\n'), QLatin1Char(' ')));
        });
        connect(&controller, &SessionController::cacheSnapshot, this, [this](const CacheSnapshot & snapshot) {
            if (snapshot.kv.faults == m_faults) return;
            m_faults = snapshot.kv.faults;
            if (m_faults > 0) say(QStringLiteral("cache-fault %1 %2").arg(m_faults).arg(QString::fromStdString(snapshot.kv.last_fault)));
        });
        connect(&controller, &SessionController::replyingChanged, this, &CrashDriver::onReplying);
        connect(&controller, &SessionController::documentChanged, this, &CrashDriver::onDocument);
        connect(&m_tick, &QTimer::timeout, this, &CrashDriver::tick);
        m_tick.start(100);
        // A second connection sees what the controller's connection committed.
        m_watch = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("crash-driver-watch"));
        m_watch.setDatabaseName(db.path());
        m_watch.open();
    }

private:
    // Every 100 ms: what streamed, what is committed, the prefix cache, the next step.
    void tick() {
        if (m_replyId != 0) {
            if (const MessageRecord * m = m_controller.messages()->find(m_replyId); m && m->text.size() != m_streamed) {
                m_streamed = m->text.size();
                say(QStringLiteral("stream %1 %2").arg(m_replyId).arg(m_streamed));
            }
            const qsizetype committed = committedText(m_replyId).size();
            if (committed != m_flushed) {
                m_flushed = committed;
                say(QStringLiteral("flush %1 %2").arg(m_replyId).arg(committed));
            }
        }
        watchPrefixCache();
        step();
    }

    QString committedText(qint64 id) {
        QSqlQuery q(m_watch);
        q.prepare(QStringLiteral("SELECT text FROM messages WHERE id = ?"));
        q.addBindValue(id);
        return q.exec() && q.next() ? q.value(0).toString() : QString();
    }

    void watchPrefixCache() {
        const QString index = m_kvDir + QStringLiteral("/prefix-index.sqlite");
        if (!m_prefix.isOpen()) {
            if (!QFile::exists(index)) return;
            m_prefix = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("crash-driver-prefix"));
            m_prefix.setDatabaseName(index);
            if (!m_prefix.open()) return;
        }
        QSqlQuery q(m_prefix);
        // Once the budget is full a write evicts as much as it adds: the newest row tells it apart.
        if (!q.exec(QStringLiteral(
                "SELECT (SELECT used FROM totals WHERE id = 0), (SELECT COUNT(*) FROM blocks), (SELECT MAX(rowid) FROM blocks)")) ||
            !q.next()) {
            return;
        }
        const QString state =
            QStringLiteral("%1 %2 %3").arg(q.value(0).toLongLong()).arg(q.value(1).toLongLong()).arg(q.value(2).toLongLong());
        if (state != m_prefixState) say(QStringLiteral("prefix ") + state);
        m_prefixState = state;
    }

    void onReplying(bool replying) {
        const auto & rows = m_controller.messages()->messages();
        if (replying) {
            const MessageRecord & reply = rows.back();
            const MessageRecord & user = rows[rows.size() - 2];
            say(QStringLiteral("user %1 %2 %3").arg(user.conversationId).arg(user.id).arg(user.text.size()));
            say(QStringLiteral("reply-started %1 %2 %3").arg(reply.conversationId).arg(reply.id).arg(m_summary ? "summary" : "chat"));
            m_replyId = reply.id;
            m_streamed = m_flushed = 0;
            return;
        }
        if (m_replyId == 0) return;
        QSqlQuery q(m_watch);
        q.prepare(QStringLiteral("SELECT conversation_id, text, state FROM messages WHERE id = ?"));
        q.addBindValue(m_replyId);
        if (q.exec() && q.next()) {
            say(QStringLiteral("reply-finished %1 %2 %3 %4")
                    .arg(q.value(0).toLongLong())
                    .arg(m_replyId)
                    .arg(q.value(1).toString().size())
                    .arg(q.value(2).toString()));
        }
        m_replyId = 0;
    }

    void onDocument(const DocumentState & state) {
        if (state.phase == m_phase && state.conversationId == m_phaseConversation) return;
        m_phase = state.phase;
        m_phaseConversation = state.conversationId;
        if (state.phase == DocumentPhase::reading) {
            QSqlQuery q(m_watch);
            q.prepare(QStringLiteral("SELECT id, length(text) FROM documents WHERE conversation_id = ? ORDER BY id DESC LIMIT 1"));
            q.addBindValue(state.conversationId);
            if (q.exec() && q.next()) {
                say(QStringLiteral("doc-stored %1 %2 %3")
                        .arg(state.conversationId)
                        .arg(q.value(0).toLongLong())
                        .arg(q.value(1).toLongLong()));
            }
            say(QStringLiteral("doc-reading %1").arg(state.conversationId));
        } else if (state.phase != DocumentPhase::loading && state.phase != DocumentPhase::none) {
            say(QStringLiteral("doc-ready %1 %2 %3 %4")
                    .arg(state.conversationId)
                    .arg(QLatin1String(phaseName(state.phase)))
                    .arg(state.tokens)
                    .arg(state.restoredTokens));
        }
    }

    // The next action of the workload, when the app is idle.
    void step() {
        if (!m_controller.isModelReady() || m_controller.isReplying() || m_controller.isEngineBusy()) return;
        const DocumentPhase phase = m_controller.document().phase;
        if (phase == DocumentPhase::loading || phase == DocumentPhase::reading) return;
        switch (m_next++) {
            case 0: openConversation(); break;
            case 1:
                if (phase == DocumentPhase::none) attach();
                break;
            case 2: ask(); break;
            case 3:
                if (m_rng.bounded(2) == 0) ask();
                break;
            case 4:
                if (m_rng.bounded(2) == 0 && m_controller.canSummarize()) {
                    m_summary = true;
                    m_controller.summarizeDocument();
                }
                break;
            default: m_next = 0; break;
        }
    }

    void openConversation() {
        const int n = m_controller.conversations()->rowCount();
        if (n > 1 && m_rng.bounded(4) == 0) {
            m_controller.selectConversation(m_controller.conversations()->idAt(int(m_rng.bounded(n))));
        } else {
            m_controller.newConversation();
        }
        say(QStringLiteral("conv %1").arg(m_controller.currentConversation()));
    }

    // One of the folder's documents (read before: restored), or a new one of their paragraphs.
    void attach() {
        const QStringList docs = QDir(m_documents).entryList({QStringLiteral("doc-*.txt")}, QDir::Files, QDir::Name);
        if (docs.isEmpty()) return;
        const QString source = m_documents + QLatin1Char('/') + docs[int(m_rng.bounded(docs.size()))];
        if (m_rng.bounded(2) == 0) {
            m_controller.attachDocument(source);
            return;
        }
        QFile in(source);
        if (!in.open(QIODevice::ReadOnly)) return;
        QStringList paragraphs = QString::fromUtf8(in.readAll()).split(QStringLiteral("\n\n"), Qt::SkipEmptyParts);
        for (qsizetype i = paragraphs.size() - 1; i > 0; --i) paragraphs.swapItemsAt(i, qsizetype(m_rng.bounded(quint32(i + 1))));
        const QString fresh = QStringLiteral("%1/fresh-%2-%3.txt").arg(m_documents).arg(m_seed).arg(++m_fresh);
        QFile out(fresh);
        if (!out.open(QIODevice::WriteOnly)) return;
        out.write(paragraphs.join(QStringLiteral("\n\n")).toUtf8());
        out.close();
        m_controller.attachDocument(fresh);
    }

    void ask() {
        if (m_controller.currentConversation() == 0) return;
        m_summary = false;
        m_controller.sendMessage(kQuestions[int(m_rng.bounded(kQuestions.size()))]);
    }

    QString m_documents;
    QRandomGenerator m_rng;
    quint32 m_seed;
    Database & m_db;
    SessionController & m_controller;
    QString m_kvDir;
    QTimer m_tick;
    QSqlDatabase m_watch;
    QSqlDatabase m_prefix;
    QString m_prefixState;
    uint64_t m_faults = 0;
    int m_next = 0;
    int m_fresh = 0;
    bool m_summary = false;
    qint64 m_replyId = 0;
    qsizetype m_streamed = 0;
    qsizetype m_flushed = 0;
    DocumentPhase m_phase = DocumentPhase::none;
    qint64 m_phaseConversation = -1;
};

}  // namespace

int main(int argc, char ** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("Longread"));
    QCoreApplication::setOrganizationName(QStringLiteral("Longread"));
    const QStringList args = QCoreApplication::arguments();
    if (args.size() != 3) {
        std::fprintf(stderr, "usage: longread_crash_driver <documents folder> <seed>\n");
        return 2;
    }

    AppSettings settings(AppSettings::userStore());
    Database db(settings.databasePath());
    if (!db.open()) {
        say(QStringLiteral("db-error ") + db.errorMessage());
        return 1;
    }
    EngineHost engine([] { return std::make_unique<LlmEngine>(); });
    SessionController controller(db, engine, settings);
    const QString kvDir = QString::fromStdString(lr::resolve_kv_dir(settings.engineDefaults().kv));
    CrashDriver driver(args[1], args[2].toUInt(), db, controller, kvDir);
    controller.start();
    return QCoreApplication::exec();
}
