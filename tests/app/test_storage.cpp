// The conversation database: migrations from an empty file and from the previous schemas,
// WAL, the repositories, and the failures that must never lose data silently: a corrupt
// file, one locked by another Longread, one from a newer Longread, and a program killed
// while writing (a child process SIGKILLed mid-write leaves every finished message).
#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>

#include "app/core/conversation_repository.h"
#include "app/core/database.h"
#include "app/core/document_repository.h"
#include "app/core/message_repository.h"
#include "app/core/settings_repository.h"

using namespace lr::app;

namespace {

// Schemas 1 and 2 exactly as the previous Longreads wrote them (independent of the migration
// files, so that a change to them that breaks old files fails here), with their messages.
const QList<const char *> kSchema1Tables = {
    "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)",
    "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE, "
    "role TEXT NOT NULL, text TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE INDEX messages_by_conversation ON messages(conversation_id, id)",
};
const QList<const char *> kSchema1Rows = {
    "INSERT INTO conversations VALUES (1, 'Old chat', 1000, 2000)",
    "INSERT INTO messages VALUES (1, 1, 'user', 'What is in the report?', 'finished', 1000)",
    "INSERT INTO messages VALUES (2, 1, 'assistant', 'A summary of sales.', 'finished', 1500)",
    "INSERT INTO messages VALUES (3, 1, 'assistant', 'Half a rep', 'streaming', 1900)",
    "PRAGMA user_version = 1",
};
const QList<const char *> kSchema2Tables = {
    "ALTER TABLE messages ADD COLUMN stop_reason TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE messages ADD COLUMN note TEXT NOT NULL DEFAULT ''",
    "CREATE TABLE documents (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE, "
    "path TEXT NOT NULL, title TEXT NOT NULL, format TEXT NOT NULL, sha256 TEXT NOT NULL, file_bytes INTEGER NOT NULL, "
    "token_count INTEGER NOT NULL DEFAULT -1, text TEXT NOT NULL, added_at INTEGER NOT NULL)",
    "CREATE INDEX documents_by_conversation ON documents(conversation_id)",
    "CREATE TABLE conversation_settings (conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE, "
    "json TEXT NOT NULL)",
};
const QList<const char *> kSchema2Rows = {
    "INSERT INTO conversations VALUES (1, 'Sales report', 1000, 2000)",
    "INSERT INTO messages VALUES (1, 1, 'user', 'What is in the report?', 'finished', 1000, '', '')",
    "INSERT INTO messages VALUES (2, 1, 'assistant', 'A summary of sales.', 'finished', 1500, 'end', '5 tokens, 20.0 tok/s')",
    "INSERT INTO messages VALUES (3, 1, 'assistant', 'Half a rep', 'stopped', 1900, 'stopped', '')",
    "INSERT INTO documents VALUES (1, 1, '/r.txt', 'r.txt', 'txt', 'ab', 5, 2, 'sales', 900)",
    "PRAGMA user_version = 2",
};

QString scalar(Database & db, const QString & sql) {
    QSqlQuery q(db.connection());
    if (!q.exec(sql) || !q.next()) return QStringLiteral("<error>");
    return q.value(0).toString();
}

// The child process of killDuringAWriteKeepsFinishedMessages: writes replies as the app
// does (insert streaming, update the text, finish), printing each finished id, until killed.
int runWriter(const QString & path) {
    Database db(path);
    if (!db.open()) {
        std::fprintf(stderr, "writer: %s\n", qPrintable(db.errorMessage()));
        return 2;
    }
    ConversationRepository conversations(db);
    MessageRepository messages(db);
    const qint64 conversation = conversations.create(QStringLiteral("written until killed"))->id;
    const QString chunk = QString(400, QLatin1Char('x'));
    for (int i = 0;; ++i) {
        std::optional<MessageRecord> m = messages.insert(
            {.conversationId = conversation, .role = QStringLiteral("assistant"), .state = MessageState::streaming});
        QString text;
        for (int k = 0; k < 5; ++k) {
            text += chunk;
            messages.updateText(m->id, text, QString());
        }
        text += QStringLiteral(" end %1").arg(i);
        messages.finish(m->id, {.text = text, .stopReason = QStringLiteral("end")});
        std::printf("finished %lld\n", static_cast<long long>(m->id));
        std::fflush(stdout);
    }
}

}  // namespace

class TestStorage : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString & name) const { return m_dir.filePath(name); }

    void writeFixture(const QString & file, const QList<const char *> & statements) {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("fixture"));
        db.setDatabaseName(file);
        QVERIFY(db.open());
        {
            QSqlQuery q(db);
            for (const char * sql : statements) QVERIFY2(q.exec(QString::fromLatin1(sql)), sql);
        }
        db.close();
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("fixture"));
    }

private slots:
    void freshFileGetsTheLatestSchemaInWalMode() {
        Database db(path("fresh/conversations.sqlite"));
        QVERIFY2(db.open(), qPrintable(db.errorMessage()));
        QCOMPARE(db.schemaVersion(), Database::latestVersion());
        QCOMPARE(Database::latestVersion(), 3);
        QCOMPARE(scalar(db, QStringLiteral("PRAGMA journal_mode")), QStringLiteral("wal"));
        QCOMPARE(scalar(db, QStringLiteral("PRAGMA foreign_keys")), QStringLiteral("1"));
        QCOMPARE(
            scalar(
                db,
                QStringLiteral(
                    "SELECT count(*) FROM sqlite_master WHERE name IN ('conversations','messages','documents','conversation_settings')")),
            QStringLiteral("4"));
    }

    void migratesStepByStep_data() {
        QTest::addColumn<int>("target");
        QTest::newRow("empty -> 1") << 1;
        QTest::newRow("empty -> 2") << 2;
        QTest::newRow("empty -> 3") << 3;
    }
    void migratesStepByStep() {
        QFETCH(int, target);
        const QString file = path(QStringLiteral("steps-%1.sqlite").arg(target));
        {
            Database db(file);
            QVERIFY2(db.open(target), qPrintable(db.errorMessage()));
            QCOMPARE(db.schemaVersion(), target);
        }
        Database db(file);
        QVERIFY2(db.open(), qPrintable(db.errorMessage()));
        QCOMPARE(db.schemaVersion(), Database::latestVersion());
    }

    void migratesThePreviousSchemaKeepingEveryMessage() {
        const QString file = path("schema1.sqlite");
        writeFixture(file, kSchema1Tables + kSchema1Rows);
        Database db(file);
        QVERIFY2(db.open(), qPrintable(db.errorMessage()));
        QCOMPARE(db.schemaVersion(), Database::latestVersion());
        ConversationRepository conversations(db);
        MessageRepository messages(db);
        const std::vector<ConversationRecord> list = conversations.list();
        QCOMPARE(list.size(), size_t(1));
        QCOMPARE(list[0].title, QStringLiteral("Old chat"));
        std::vector<MessageRecord> rows = messages.forConversation(1);
        QCOMPARE(rows.size(), size_t(3));
        QCOMPARE(rows[0].text, QStringLiteral("What is in the report?"));
        QCOMPARE(rows[1].state, MessageState::finished);
        QCOMPARE(rows[1].note, QString());
        QCOMPARE(rows[2].state, MessageState::streaming);
        // The reply the old program was writing when it ended is kept, marked interrupted.
        QCOMPARE(messages.markInterrupted(), 1);
        rows = messages.forConversation(1);
        QCOMPARE(rows[2].state, MessageState::interrupted);
        QCOMPARE(rows[2].text, QStringLiteral("Half a rep"));
        DocumentRepository documents(db);
        QVERIFY(!documents.forConversation(1).has_value());
    }

    // Schema 2 -> 3 adds the replies' thinking: every message is kept, with none.
    void migratesSchema2KeepingEveryMessageWithNoThinking() {
        const QString file = path("schema2.sqlite");
        writeFixture(file, kSchema1Tables + kSchema2Tables + kSchema2Rows);
        Database db(file);
        QVERIFY2(db.open(), qPrintable(db.errorMessage()));
        QCOMPARE(db.schemaVersion(), 3);
        MessageRepository messages(db);
        const std::vector<MessageRecord> rows = messages.forConversation(1);
        QCOMPARE(rows.size(), size_t(3));
        QCOMPARE(rows[0].text, QStringLiteral("What is in the report?"));
        QCOMPARE(rows[1].text, QStringLiteral("A summary of sales."));
        QCOMPARE(rows[1].stopReason, QStringLiteral("end"));
        QCOMPARE(rows[1].note, QStringLiteral("5 tokens, 20.0 tok/s"));
        QCOMPARE(rows[2].state, MessageState::stopped);
        for (const MessageRecord & m : rows) QCOMPARE(m.thinking, QString());
        QCOMPARE(ConversationRepository(db).list().front().title, QStringLiteral("Sales report"));
        QCOMPARE(DocumentRepository(db).forConversation(1)->tokenCount, qint64(2));
        // A reply written after the upgrade keeps its thinking.
        QVERIFY(messages.finish(3, {.text = QStringLiteral("Half a report."), .thinking = QStringLiteral("Finish the sentence.")}));
        QCOMPARE(messages.get(3)->thinking, QStringLiteral("Finish the sentence."));
    }

    void conversationsCreateRenameSearchDelete() {
        Database db(path("crud.sqlite"));
        QVERIFY(db.open());
        ConversationRepository conversations(db);
        MessageRepository messages(db);
        DocumentRepository documents(db);
        SettingsRepository settings(db);
        const ConversationRecord a = *conversations.create(QStringLiteral("Contract review"));
        QTest::qWait(2);
        const ConversationRecord b = *conversations.create(QStringLiteral("Server logs"));
        QVERIFY(a.id != b.id);
        QCOMPARE(conversations.list().front().id, b.id);  // newest first
        QTest::qWait(2);
        QVERIFY(messages.insert(
            {.conversationId = a.id, .role = QStringLiteral("user"), .text = QStringLiteral("What does clause 7 say? 100%")}));
        QCOMPARE(conversations.list().front().id, a.id);  // a message moves it to the top
        QVERIFY(conversations.rename(b.id, QStringLiteral("Nginx logs")));
        QCOMPARE(conversations.get(b.id)->title, QStringLiteral("Nginx logs"));
        QVERIFY(!conversations.rename(9999, QStringLiteral("nobody")));

        QCOMPARE(conversations.search(QStringLiteral("nginx")).size(), size_t(1));
        QCOMPARE(conversations.search(QStringLiteral("CLAUSE 7")).front().id, a.id);  // message text, any case
        QCOMPARE(conversations.search(QStringLiteral("100%")).size(), size_t(1));     // % is literal
        QCOMPARE(conversations.search(QStringLiteral("%")).size(), size_t(1));
        QCOMPARE(conversations.search(QStringLiteral("nothing like this")).size(), size_t(0));
        QCOMPARE(conversations.search(QString()).size(), size_t(2));

        QVERIFY(documents.attach({.conversationId = a.id,
                                  .path = QStringLiteral("/tmp/c.pdf"),
                                  .title = QStringLiteral("c.pdf"),
                                  .format = QStringLiteral("pdf"),
                                  .sha256 = QStringLiteral("ab"),
                                  .fileBytes = 10,
                                  .text = QStringLiteral("text")}));
        QVERIFY(settings.save(a.id, {{"contextTokens", 2048}}));
        QVERIFY(conversations.remove(a.id));
        QCOMPARE(messages.forConversation(a.id).size(), size_t(0));
        QVERIFY(!documents.forConversation(a.id));
        QVERIFY(!settings.load(a.id));
        QCOMPARE(scalar(db, QStringLiteral("SELECT count(*) FROM messages")), QStringLiteral("0"));
    }

    void messagesStreamThenFinish() {
        Database db(path("messages.sqlite"));
        QVERIFY(db.open());
        const qint64 c = ConversationRepository(db).create(QStringLiteral("t"))->id;
        MessageRepository messages(db);
        const std::optional<MessageRecord> inserted = messages.insert(
            {.conversationId = c, .role = QStringLiteral("user"), .text = QStringLiteral("hi")});
        QVERIFY2(inserted.has_value(), qPrintable(db.lastFailure()));
        const MessageRecord user = *inserted;
        const MessageRecord reply = *messages.insert(
            {.conversationId = c, .role = QStringLiteral("assistant"), .state = MessageState::streaming});
        QVERIFY(reply.id > user.id);
        QVERIFY(messages.updateText(reply.id, QString(), QStringLiteral("The user greets")));
        QCOMPARE(messages.get(reply.id)->thinking, QStringLiteral("The user greets"));
        QVERIFY(messages.updateText(reply.id, QStringLiteral("Hel"), QStringLiteral("The user greets me.")));
        QCOMPARE(messages.get(reply.id)->text, QStringLiteral("Hel"));
        QCOMPARE(messages.get(reply.id)->thinking, QStringLiteral("The user greets me."));
        QCOMPARE(messages.get(reply.id)->state, MessageState::streaming);
        QVERIFY(messages.finish(reply.id, {.text = QStringLiteral("Hello."),
                                           .thinking = QStringLiteral("The user greets me. Greet back."),
                                           .state = MessageState::stopped,
                                           .stopReason = QStringLiteral("stopped"),
                                           .note = QStringLiteral("3 tokens")}));
        const MessageRecord done = *messages.get(reply.id);
        QCOMPARE(done.text, QStringLiteral("Hello."));
        QCOMPARE(done.thinking, QStringLiteral("The user greets me. Greet back."));
        QCOMPARE(messages.forConversation(c).back().thinking, done.thinking);
        QCOMPARE(user.thinking, QString());
        QCOMPARE(done.state, MessageState::stopped);
        QCOMPARE(done.stopReason, QStringLiteral("stopped"));
        QCOMPARE(done.note, QStringLiteral("3 tokens"));
        QCOMPARE(messages.markInterrupted(), 0);
        QVERIFY(messages.remove(user.id));
        QCOMPARE(messages.forConversation(c).size(), size_t(1));
        const MessageRecord thought = *messages.insert({.conversationId = c,
                                                        .role = QStringLiteral("assistant"),
                                                        .text = QStringLiteral("Done."),
                                                        .thinking = QStringLiteral("A short one.")});
        QCOMPARE(messages.get(thought.id)->thinking, QStringLiteral("A short one."));
    }

    void documentsAndSettingsPerConversation() {
        Database db(path("docs.sqlite"));
        QVERIFY(db.open());
        const qint64 c = ConversationRepository(db).create(QStringLiteral("t"))->id;
        DocumentRepository documents(db);
        const DocumentRecord first = *documents.attach({.conversationId = c,
                                                        .path = QStringLiteral("/a.txt"),
                                                        .title = QStringLiteral("a.txt"),
                                                        .format = QStringLiteral("txt"),
                                                        .sha256 = QStringLiteral("aa"),
                                                        .fileBytes = 3,
                                                        .text = QStringLiteral("abc")});
        QCOMPARE(documents.forConversation(c)->tokenCount, qint64(-1));
        QVERIFY(documents.setTokenCount(first.id, 42));
        QCOMPARE(documents.forConversation(c)->tokenCount, qint64(42));
        documents.attach({.conversationId = c,
                          .path = QStringLiteral("/b.md"),
                          .title = QStringLiteral("b.md"),
                          .format = QStringLiteral("md"),
                          .sha256 = QStringLiteral("bb"),
                          .fileBytes = 4,
                          .text = QStringLiteral("# b")});
        QCOMPARE(documents.forConversation(c)->title, QStringLiteral("b.md"));  // replaced
        QCOMPARE(scalar(db, QStringLiteral("SELECT count(*) FROM documents")), QStringLiteral("1"));

        SettingsRepository settings(db);
        QVERIFY(!settings.load(c));
        QVERIFY(settings.save(c, {{"contextTokens", 1024}}));
        QVERIFY(settings.save(c, {{"contextTokens", 2048}}));
        QCOMPARE(settings.load(c)->value("contextTokens").toInt(), 2048);
    }

    void damagedFileIsReportedAndMovedAside_data() {
        QTest::addColumn<QString>("damage");
        QTest::newRow("not a database") << "text";
        QTest::newRow("overwritten pages") << "pages";
    }
    void damagedFileIsReportedAndMovedAside() {
        QFETCH(QString, damage);
        const QString file = path(QStringLiteral("damaged-%1.sqlite").arg(damage));
        if (damage == QLatin1String("text")) {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray("these are my notes, not a database\n").repeated(200));
        } else {
            {
                Database db(file);
                QVERIFY(db.open());
                ConversationRepository conversations(db);
                for (int i = 0; i < 300; ++i)
                    conversations.create(QStringLiteral("conversation %1 ").arg(i) + QString(200, QLatin1Char('y')));
                QSqlQuery(db.connection()).exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"));
            }
            QFile f(file);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.size() > 8 * 4096);
            f.seek(4096 * 2);
            f.write(QByteArray(4096 * 4, '\x5a'));
        }
        QFile original(file);
        QVERIFY(original.open(QIODevice::ReadOnly));
        const QByteArray bytes = original.readAll();
        original.close();

        Database db(file);
        QVERIFY(!db.open());
        QCOMPARE(db.error(), DatabaseError::corrupt);
        QVERIFY2(db.errorMessage().contains(file), qPrintable(db.errorMessage()));
        // The way out keeps the damaged file, byte for byte, next to a new database.
        QString why;
        const QString aside = Database::moveAside(file, &why);
        QVERIFY2(!aside.isEmpty(), qPrintable(why));
        QFile kept(aside);
        QVERIFY(kept.open(QIODevice::ReadOnly));
        QCOMPARE(kept.readAll(), bytes);
        Database fresh(file);
        QVERIFY2(fresh.open(), qPrintable(fresh.errorMessage()));
        QCOMPARE(ConversationRepository(fresh).list().size(), size_t(0));
    }

    void secondInstanceIsToldTheDatabaseIsInUse() {
        const QString file = path("locked.sqlite");
        Database first(file);
        QVERIFY(first.open());
        Database second(file);
        QVERIFY(!second.open());
        QCOMPARE(second.error(), DatabaseError::locked);
        QVERIFY2(second.errorMessage().contains(QStringLiteral("in use")), qPrintable(second.errorMessage()));
        first.close();
        QVERIFY2(second.open(), qPrintable(second.errorMessage()));  // "Try again" works once it is free
    }

    void newerSchemaIsRefusedUntouched() {
        const QString file = path("newer.sqlite");
        {
            Database db(file);
            QVERIFY(db.open());
            QVERIFY(QSqlQuery(db.connection()).exec(QStringLiteral("PRAGMA user_version = 99")));
        }
        Database db(file);
        QVERIFY(!db.open());
        QCOMPARE(db.error(), DatabaseError::newerSchema);
        QVERIFY(db.errorMessage().contains(QStringLiteral("newer Longread")));
        QVERIFY(QFile::exists(file));
    }

    void killDuringAWriteKeepsFinishedMessages() {
        const QString file = path("killed.sqlite");
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("LONGREAD_TEST_WRITER"), file);
        child.setProcessEnvironment(env);
        child.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY(child.waitForStarted(5000));
        QList<qint64> finished;
        QByteArray pending;
        QElapsedTimer clock;
        clock.start();
        while (finished.size() < 40 && clock.elapsed() < 20000) {
            child.waitForReadyRead(200);
            pending += child.readAllStandardOutput();
            while (pending.contains('\n')) {
                const qsizetype nl = pending.indexOf('\n');
                const QByteArray line = pending.left(nl);
                pending.remove(0, nl + 1);
                if (line.startsWith("finished ")) finished << line.mid(9).toLongLong();
            }
        }
        QVERIFY2(finished.size() >= 40, child.readAllStandardError().constData());
        child.kill();  // SIGKILL, in the middle of the next reply's writes
        QVERIFY(child.waitForFinished(5000));
        pending += child.readAllStandardOutput();
        for (const QByteArray & line : pending.split('\n')) {
            if (line.startsWith("finished ")) finished << line.mid(9).toLongLong();
        }

        Database db(file);
        QVERIFY2(db.open(), qPrintable(db.errorMessage()));  // the dead process's lock is stale
        QCOMPARE(scalar(db, QStringLiteral("PRAGMA integrity_check")), QStringLiteral("ok"));
        MessageRepository messages(db);
        for (qint64 id : finished) {
            const std::optional<MessageRecord> m = messages.get(id);
            QVERIFY2(m.has_value(), qPrintable(QStringLiteral("message %1 lost").arg(id)));
            QCOMPARE(m->state, MessageState::finished);
            QVERIFY(m->text.endsWith(QStringLiteral(" end %1").arg(finished.indexOf(id))));
        }
        // At most the reply being written is unfinished; it is kept as interrupted.
        QVERIFY(messages.markInterrupted() <= 1);
        qInfo("child killed after %lld finished messages", static_cast<long long>(finished.size()));
    }
};

int main(int argc, char ** argv) {
    QCoreApplication app(argc, argv);
    if (qEnvironmentVariableIsSet("LONGREAD_TEST_WRITER")) return runWriter(qEnvironmentVariable("LONGREAD_TEST_WRITER"));
    TestStorage test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_storage.moc"
