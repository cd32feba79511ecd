// `longread-cli summarize` runs the same summarizer headless: map-reduce on a text longer
// than the context, one pass on a short one, JSON output, and clear errors.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "support/reference_data.h"

class TestCliSummarize : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    struct Run {
        int code = -1;
        QString out, err;
    };
    static Run run(const QStringList & args) {
        QProcess p;
        p.start(QStringLiteral(LONGREAD_CLI), args);
        p.waitForFinished(120000);
        return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }
    QString write(const QString & name, const QByteArray & bytes) {
        QFile f(m_dir.filePath(name));
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return f.fileName();
    }

private slots:
    // The prefix cache writes under $XDG_CACHE_HOME: keep it in the test's folder.
    void initTestCase() { qputenv("XDG_CACHE_HOME", m_dir.filePath(QStringLiteral("cache")).toUtf8()); }

    void mapReduceWhenTheTextDoesNotFit() {
        QFile src(lr::test::shared_path(QStringLiteral("data/text/tinystories_style_eval.txt")));
        QVERIFY(src.open(QIODevice::ReadOnly));
        const QString path = write(QStringLiteral("stories.txt"), src.read(2600));
        const Run r = run({"summarize", "-f", path, "-c", "512", "-n", "32", "--temp", "0", "-t", "1", "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject json = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(json.value("method").toString(), QStringLiteral("map-reduce"));
        QVERIFY(json.value("chunks").toInt() > 1);
        QVERIFY(json.value("levels").toInt() >= 1);
        QVERIFY(json.value("passes").toInt() > json.value("chunks").toInt());
        QVERIFY(r.err.contains(QStringLiteral("method: map-reduce over")));
        QVERIFY(r.err.contains(QStringLiteral("map-reduce: pass 1 of")));
    }

    void onePassWhenItFits() {
        const QString path = write(QStringLiteral("short.txt"), "Lily found a red ball in the park. She gave it to her friend Tom.");
        const Run r = run({"summarize", "-f", path, "-n", "24", "--temp", "0", "-t", "1"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(!r.out.trimmed().isEmpty());
        QVERIFY2(r.err.contains(QStringLiteral("method: one pass over")), qPrintable(r.err));
    }

    void clearErrors_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no file") << QStringList{"summarize"} << "give the document with -f FILE";
        QTest::newRow("missing file") << QStringList{"summarize", "-f", "/nonexistent.txt"} << "/nonexistent.txt";
        QTest::newRow("tiny context") << QStringList{"summarize", "-f", "SHORT", "-c", "64"} << "too small to summarize";
    }
    void clearErrors() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        args.replaceInStrings(QStringLiteral("SHORT"), write(QStringLiteral("s.txt"), "A short text."));
        const Run r = run(args);
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith(QStringLiteral("error: ")) && r.err.contains(message), qPrintable(r.err));
    }

    void emptyFileIsRefused() {
        const Run r = run({"summarize", "-f", write(QStringLiteral("blank.txt"), "  \n\n ")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains(QStringLiteral("no text to summarize")));
    }
};

QTEST_GUILESS_MAIN(TestCliSummarize)
#include "test_cli_summarize.moc"
