#pragma once
// The conversation database: one SQLite file (Qt Sql), WAL, foreign keys, schema migrations
// numbered by PRAGMA user_version (resources/sql/NNN_*.sql, each applied in a transaction).
//
// open() never loses data silently: a file that is not a database or fails the integrity
// check is reported as corrupt, one held by another Longread as locked, one written by a
// newer Longread as newerSchema; the caller shows the message and the way out (moveAside
// keeps the damaged file next to the new one; nothing is deleted).

#include <QLockFile>
#include <QSqlDatabase>
#include <QString>

#include <memory>

namespace lr::app {

enum class DatabaseError { none, corrupt, locked, newerSchema, io };

class Database {
public:
    explicit Database(QString path);
    ~Database();
    Database(const Database &) = delete;
    Database & operator=(const Database &) = delete;

    // Opens or creates the file, checks it, migrates it to the latest schema (or to
    // `targetVersion`, for tests of older schemas). False with error() set on failure.
    bool open(int targetVersion = -1);
    void close();
    bool isOpen() const;

    const QString & path() const { return m_path; }
    QSqlDatabase connection() const;
    int schemaVersion() const;
    static int latestVersion();

    DatabaseError error() const { return m_error; }
    const QString & errorMessage() const { return m_errorMessage; }

    // The last failed statement's message (repositories report through it).
    void noteFailure(const QString & what) { m_lastFailure = what; }
    const QString & lastFailure() const { return m_lastFailure; }

    // Renames a damaged database (and its -wal and -shm files) to <path>.damaged-<time>,
    // so a new one can be created. Returns the new name, or an empty string with `error` set.
    static QString moveAside(const QString & path, QString * error);

private:
    bool openChecked(int targetVersion);
    bool fail(DatabaseError kind, const QString & message);  // records the error, returns false
    bool exec(const QString & sql);
    bool migrate(int from, int to);

    QString m_path;
    QString m_connectionName;
    std::unique_ptr<QLockFile> m_lock;
    DatabaseError m_error = DatabaseError::none;
    QString m_errorMessage;
    QString m_lastFailure;
};

}  // namespace lr::app
