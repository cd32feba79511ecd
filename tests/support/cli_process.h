#pragma once
// Runs longread-cli (the LONGREAD_CLI path the test target defines) to its end and keeps
// what it printed, for the tests that drive the command line.

#include <QByteArray>
#include <QProcess>
#include <QStringList>

namespace lr::test {

struct CliRun {
    int exit_code = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QByteArray out;
    QByteArray err;
};

inline CliRun run_cli(const QStringList & args, const QByteArray & input = {}) {
    QProcess p;
    p.start(QStringLiteral(LONGREAD_CLI), args);
    p.waitForStarted();
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(-1);
    return {p.exitCode(), p.exitStatus(), p.readAllStandardOutput(), p.readAllStandardError()};
}

}  // namespace lr::test
