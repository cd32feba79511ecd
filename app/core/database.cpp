#include "database.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>
#include <QUuid>

namespace lr::app {
namespace {

// The migrations, in order: migration i takes the schema from version i to i + 1.
const char * const kMigrations[] = {
    ":/sql/001_initial.sql",
    ":/sql/002_documents_settings.sql",
    ":/sql/003_message_thinking.sql",
};

bool looksCorrupt(const QSqlError & e) {
    const QString t = e.text().toLower();
    return t.contains(QLatin1String("not a database")) || t.contains(QLatin1String("malformed")) || t.contains(QLatin1String("corrupt"));
}

bool looksLocked(const QSqlError & e) {
    const QString t = e.text().toLower();
    return t.contains(QLatin1String("locked")) || t.contains(QLatin1String("busy"));
}

}  // namespace

Database::Database(QString path)
    : m_path(std::move(path)), m_connectionName(QStringLiteral("longread-") + QUuid::createUuid().toString(QUuid::WithoutBraces)) {}

Database::~Database() { close(); }

int Database::latestVersion() { return int(std::size(kMigrations)); }

QSqlDatabase Database::connection() const { return QSqlDatabase::database(m_connectionName, false); }

bool Database::isOpen() const { return QSqlDatabase::contains(m_connectionName) && connection().isOpen(); }

void Database::close() {
    if (QSqlDatabase::contains(m_connectionName)) {
        {
            QSqlDatabase db = QSqlDatabase::database(m_connectionName, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connectionName);
    }
    if (m_lock) m_lock->unlock();
    m_lock.reset();
}

bool Database::fail(DatabaseError kind, const QString & message) {
    m_error = kind;
    m_errorMessage = message;
    return false;
}

bool Database::exec(const QString & sql) {
    QSqlQuery q(connection());
    if (q.exec(sql)) return true;
    m_lastFailure = q.lastError().text();
    return false;
}

int Database::schemaVersion() const {
    QSqlQuery q(connection());
    if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) return -1;
    return q.value(0).toInt();
}

bool Database::open(int targetVersion) {
    close();
    // The queries of openChecked() are gone when it returns: the connection can be removed.
    if (openChecked(targetVersion)) return true;
    close();
    return false;
}

bool Database::openChecked(int targetVersion) {
    m_error = DatabaseError::none;
    m_errorMessage.clear();
    if (targetVersion < 0) targetVersion = latestVersion();
    const QString where = QDir::toNativeSeparators(m_path);
    if (const QString dir = QFileInfo(m_path).absolutePath(); !QDir().mkpath(dir)) {
        return fail(DatabaseError::io, QStringLiteral("Cannot create the folder %1 for the conversation database.").arg(dir));
    }

    // One Longread per database: SQLite would let two write, and each would show a stale list.
    m_lock = std::make_unique<QLockFile>(m_path + QStringLiteral(".lock"));
    m_lock->setStaleLockTime(0);
    if (!m_lock->tryLock(100)) {
        qint64 pid = 0;
        QString host, app;
        m_lock->getLockInfo(&pid, &host, &app);
        return fail(DatabaseError::locked,
                    QStringLiteral("The conversation database %1 is in use by another Longread (process %2). Close it and try again.")
                        .arg(where)
                        .arg(pid));
    }

    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connectionName);
    db.setDatabaseName(m_path);
    db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=3000"));
    if (!db.open()) {
        return fail(DatabaseError::io, QStringLiteral("Cannot open the conversation database %1: %2").arg(where, db.lastError().text()));
    }

    // Reading the schema is the first thing that touches the file's contents.
    QSqlQuery check(db);
    if (!check.exec(QStringLiteral("PRAGMA quick_check")) || !check.next()) {
        const QSqlError e = check.lastError();
        if (looksLocked(e)) {
            return fail(DatabaseError::locked,
                        QStringLiteral("The conversation database %1 is locked by another program: %2").arg(where, e.text()));
        }
        return fail(DatabaseError::corrupt, QStringLiteral("The conversation database %1 cannot be read (%2).").arg(where, e.text()));
    }
    if (const QString verdict = check.value(0).toString(); verdict != QLatin1String("ok")) {
        return fail(DatabaseError::corrupt, QStringLiteral("The conversation database %1 is damaged (%2).").arg(where, verdict));
    }
    check.finish();

    const int version = schemaVersion();
    if (version > latestVersion()) {
        return fail(DatabaseError::newerSchema,
                    QStringLiteral("The conversation database %1 was written by a newer Longread (schema %2; this one knows up to %3). "
                                   "Update Longread to open it.")
                        .arg(where)
                        .arg(version)
                        .arg(latestVersion()));
    }
    QSqlQuery wal(db);
    if (!wal.exec(QStringLiteral("PRAGMA journal_mode=WAL"))) {
        const QSqlError e = wal.lastError();
        if (looksCorrupt(e))
            return fail(DatabaseError::corrupt, QStringLiteral("The conversation database %1 is damaged (%2).").arg(where, e.text()));
        if (looksLocked(e))
            return fail(DatabaseError::locked, QStringLiteral("The conversation database %1 is locked: %2").arg(where, e.text()));
        return fail(DatabaseError::io, QStringLiteral("Cannot use the conversation database %1: %2").arg(where, e.text()));
    }
    wal.finish();
    // WAL with synchronous=NORMAL: a committed transaction survives the program being
    // killed (the OS has it); only a power cut may lose the last ones.
    if (!exec(QStringLiteral("PRAGMA synchronous=NORMAL")) || !exec(QStringLiteral("PRAGMA foreign_keys=ON"))) {
        return fail(DatabaseError::io, QStringLiteral("Cannot configure the conversation database %1: %2").arg(where, m_lastFailure));
    }
    if (version < targetVersion && !migrate(version, targetVersion)) {
        return fail(DatabaseError::io, QStringLiteral("Cannot upgrade the conversation database %1 from schema %2: %3 "
                                                      "(the file is unchanged).")
                                           .arg(where)
                                           .arg(version)
                                           .arg(m_lastFailure));
    }
    return true;
}

bool Database::migrate(int from, int to) {
    QSqlDatabase db = connection();
    for (int v = from; v < to; ++v) {
        QFile file(QString::fromLatin1(kMigrations[v]));
        if (!file.open(QIODevice::ReadOnly)) {
            m_lastFailure = QStringLiteral("migration %1 is missing from the program").arg(file.fileName());
            return false;
        }
        const QString script = QString::fromUtf8(file.readAll());
        if (!db.transaction()) {
            m_lastFailure = db.lastError().text();
            return false;
        }
        // Statements end with ';' at the end of a line; comments start with '--'.
        QString statement;
        bool ok = true;
        for (const QString & rawLine : script.split(QLatin1Char('\n'))) {
            const QString line = rawLine.section(QStringLiteral("--"), 0, 0).trimmed();
            if (line.isEmpty()) continue;
            statement += line + QLatin1Char(' ');
            if (line.endsWith(QLatin1Char(';'))) {
                if (!exec(statement)) {
                    ok = false;
                    break;
                }
                statement.clear();
            }
        }
        ok = ok && exec(QStringLiteral("PRAGMA user_version = %1").arg(v + 1));
        if (!ok) {
            const QString why = m_lastFailure;
            db.rollback();
            m_lastFailure = QStringLiteral("schema %1: %2").arg(v + 1).arg(why);
            return false;
        }
        if (!db.commit()) {
            m_lastFailure = db.lastError().text();
            return false;
        }
    }
    return true;
}

QString Database::moveAside(const QString & path, QString * error) {
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    const QString target = path + QStringLiteral(".damaged-") + stamp;
    for (const QString & suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")}) {
        if (!QFile::exists(path + suffix)) continue;
        if (!QFile::rename(path + suffix, target + suffix)) {
            if (error) *error = QStringLiteral("Cannot rename %1 to %2.").arg(path + suffix, target + suffix);
            return {};
        }
    }
    return target;
}

}  // namespace lr::app
