// longread-cli eval-kv --task summary|retrieval on stories260K: the JSON and the tables it
// promises, and a one-line error for each kind of bad input.
#include <QtTest>

#include "support/cli_process.h"
#include "support/reference_data.h"

using namespace lr::test;

namespace {

QStringList eval(const QStringList & more) {
    return QStringList{"eval-kv", "-m", shared_path("models/stories260K.gguf"), "-f", shared_path("data/text/tinystories_style_eval.txt")} +
           more;
}

}  // namespace

class TestCliEvalTasks : public QObject {
    Q_OBJECT
private slots:
    void badInputIsAOneLineError_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown task") << eval({"--task", "qa"}) << "--task: 'qa' is not a task (ppl, summary or retrieval)";
        QTest::newRow("no -f") << QStringList{"eval-kv", "--task", "summary"} << "eval-kv needs a text file (-f FILE)";
        QTest::newRow("missing file") << QStringList{"eval-kv", "--task", "retrieval", "-f", "/nonexistent/x.txt"} << "/nonexistent/x.txt";
        QTest::newRow("length past the context") << eval({"--task", "retrieval", "--lengths", "256,2040"})
                                                 << "a haystack of 2040 tokens with its question and answer (24 more) exceeds the model's "
                                                    "trained context of 2048 tokens; the longest length it allows is 2024";
        QTest::newRow("bad length") << eval({"--task", "retrieval", "--lengths", "256,x"}) << "--lengths: 'x' is not a token count";
        QTest::newRow("bad depth") << eval({"--task", "retrieval", "--depths", "0,150"})
                                   << "--depths: '150' is not a percentage (0 to 100)";
        QTest::newRow("retrieval flag without the task") << eval({"--lengths", "256"}) << "--lengths needs --task retrieval";
        QTest::newRow("summary flag on retrieval")
            << eval({"--task", "retrieval", "--reference", "r.txt"}) << "--reference needs --task summary";
        QTest::newRow("context with retrieval") << eval({"--task", "retrieval", "-c", "512"}) << "-c is not for --task retrieval";
        QTest::newRow("sweep with a task") << eval({"--task", "summary", "--sweep"}) << "--sweep is for --task ppl";
        QTest::newRow("context past the trained one")
            << eval({"--task", "summary", "-c", "4096"}) << "a context of 4096 tokens exceeds the model's trained context of 2048";
        QTest::newRow("missing reference") << eval({"--task", "summary", "--reference", "/nonexistent/ref.txt"}) << "/nonexistent/ref.txt";
    }
    void badInputIsAOneLineError() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const CliRun r = run_cli(args);
        QCOMPARE(r.status, QProcess::NormalExit);
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
        QVERIFY2(r.err.trimmed().count('\n') == 0, r.err.constData());
        QVERIFY(r.out.isEmpty());
    }

    void summaryJsonCarriesRougeAndSaysAgreement() {
        QTemporaryFile reference;
        QVERIFY(reference.open());
        reference.write("Lily and Tom play in the park and find a red ball.");
        reference.close();
        const CliRun r = run_cli(eval({"--task", "summary", "--kv-policy", "h2o", "--keep-ratio", "0.2", "--summary-tokens", "48", "-c",
                                       "512", "--reference", reference.fileName(), "--json"}));
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["task"].toString(), QString("summary"));
        QVERIFY(o["policy"].toString().startsWith("h2o 20%"));
        QCOMPARE(o["chat_template"].toBool(), false);
        QCOMPARE(o["agreement_only"].toBool(), true);
        QVERIFY(o["note"].toString().contains("agreement"));
        QVERIFY(o["document_tokens_used"].toInt() < o["document_tokens"].toInt());
        QVERIFY(!o["summary_full"].toString().isEmpty());
        for (const char * key : {"rouge_vs_full", "rouge_full_vs_reference", "rouge_vs_reference"}) {
            for (const char * n : {"rouge1", "rouge2", "rougeL"}) {
                const QJsonObject s = o[key].toObject()[n].toObject();
                for (const char * f : {"precision", "recall", "f1"}) {
                    QVERIFY2(s.contains(f) && s[f].toDouble() >= 0 && s[f].toDouble() <= 1, qPrintable(QString(key) + "." + n + "." + f));
                }
            }
        }
        QVERIFY(o["kv_ratio"].toDouble() > 0 && o["kv_ratio"].toDouble() < 1);
    }

    void summaryOfTheFullCacheAgainstItselfIsOne() {
        const CliRun r = run_cli(eval({"--task", "summary", "--summary-tokens", "32", "-c", "512"}));
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.out.contains("| policy vs full cache     | 1.0000 | 1.0000 | 1.0000 |"), r.out.constData());
        QVERIFY2(r.out.contains("plain \"Summary:\" prompt"), r.out.constData());
        QVERIFY2(r.out.contains("note: this model has no chat template"), r.out.constData());
    }

    void retrievalPrintsTablesByDepthAndLength() {
        const CliRun r = run_cli(eval({"--task", "retrieval", "--kv-policy", "streaming", "--keep-ratio", "0.5", "--lengths", "128,200",
                                       "--depths", "0,50,100", "--trials", "1"}));
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QString out = QString::fromUtf8(r.out);
        QVERIFY2(out.contains("| depth |           128 |           200 |"), r.out.constData());
        for (const char * row : {"|    0% |", "|   50% |", "|  100% |"}) QCOMPARE(out.count(row), 2);  // recall and agreement
        QVERIFY2(out.contains("all 6 questions: recall"), r.out.constData());
        QVERIFY2(QRegularExpression("note: the full cache recalls \\d+% of the facts").match(out).hasMatch(), r.out.constData());
    }

    void retrievalJsonHasOneCellPerDepthAndLength() {
        const CliRun r = run_cli(eval({"--task", "retrieval", "--lengths", "128", "--depths", "25,75", "--trials", "2", "--json"}));
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["task"].toString(), QString("retrieval"));
        const QJsonArray cells = o["cells"].toArray();
        QCOMPARE(cells.size(), 2);
        QCOMPARE(cells[0].toObject()["depth"].toDouble(), 0.25);
        QCOMPARE(cells[1].toObject()["length"].toInt(), 128);
        QCOMPARE(cells[1].toObject()["asked"].toInt(), 2);
        const QJsonArray questions = o["questions"].toArray();
        QCOMPARE(questions.size(), 4);
        for (const QJsonValue & q : questions) {
            QCOMPARE(q.toObject()["value"].toString().size(), 4);
            QCOMPARE(q.toObject()["answer"].toString(), q.toObject()["answer_full"].toString());
        }
        // No policy: the full cache against itself.
        QCOMPARE(o["agreement"].toDouble(), 1.0);
        QCOMPARE(o["recall"].toDouble(), o["recall_full"].toDouble());
        QCOMPARE(o["agreement_only"].toBool(), o["recall_full"].toDouble() < 0.5);
        QVERIFY(o.contains("note"));
    }
};

QTEST_GUILESS_MAIN(TestCliEvalTasks)
#include "test_cli_eval_tasks.moc"
