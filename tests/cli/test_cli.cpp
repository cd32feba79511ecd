// longread-cli end to end: outputs in the promised formats, and bad input gives a
// one-line error and a non-zero exit, never a crash.
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/cli_process.h"
#include "support/gguf_copy.h"
#include "support/reference_data.h"

using namespace lr::test;

using Run = CliRun;

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void versionAndLicences() {
        const Run v = run_cli({"--version"});
        QCOMPARE(v.exit_code, 0);
        QVERIFY2(QRegularExpression("^longread-cli \\d+\\.\\d+\\.\\d+\n$").match(v.out).hasMatch(), qPrintable(v.out));
        const Run l = run_cli({"--licenses"});
        QCOMPARE(l.exit_code, 0);
        for (const char * expected : {"MIT licence", "stories260K", "SQLite: public domain", "Qt 6: LGPL-3.0"}) {
            QVERIFY2(l.out.contains(expected), l.out.constData());
        }
    }

    void serveRefusesUnsafeOrContradictoryFlags() {
        Run r = run_cli({"serve", "--host", "0.0.0.0"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("needs an API key"), r.err.constData());
        r = run_cli({"serve", "--kv-policy", "h2o", "--kv-cache-policy", "h2o"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("--kv-cache-policy"), r.err.constData());
        r = run_cli({"serve", "--h2o-keep-ratio", "2"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("--keep-ratio"), r.err.constData());
    }

    void serveListensAndStopsOnSigterm() {
        // A port the system just handed out (and took back) is free.
        const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::bind(probe, reinterpret_cast<const sockaddr *>(&addr), sizeof addr), 0);
        socklen_t len = sizeof addr;
        ::getsockname(probe, reinterpret_cast<sockaddr *>(&addr), &len);
        ::close(probe);
        QProcess p;
        p.setReadChannel(QProcess::StandardError);
        p.start(QStringLiteral(LONGREAD_CLI), {"serve", "--port", QString::number(ntohs(addr.sin_port)), "--h2o-keep-ratio", "0.5"});
        QByteArray err;
        while (!err.contains("Ctrl-C stops") && p.waitForReadyRead(-1)) err += p.readAllStandardError();
        QVERIFY2(err.contains("Longread serving"), err.constData());
        p.terminate();
        p.waitForFinished(-1);
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
    }

    void generateJsonIsGreedyAndWellFormed() {
        const Run r = run_cli({"generate", "-p", "Once upon a time", "-n", "20", "--temp", "0", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(to_ints(o["prompt_tokens"].toArray()), (std::vector<int32_t>{1, 403, 407, 261, 378}));
        const std::vector<int32_t> expected = to_ints(
            read_json(shared_path("reference/stories260K/stories260K_greedy200.json"))["generated_tokens"].toArray());
        const std::vector<int32_t> got = to_ints(o["generated_tokens"].toArray());
        QCOMPARE(got, std::vector<int32_t>(expected.begin(), expected.begin() + 20));
        QVERIFY(o["text"].toString().startsWith(", there was a little girl"));
    }

    void logitsFollowTheReferenceSchema() {
        const Run r = run_cli({"logits", "-n", "2", "-p", "Once upon a time", "-p", "The little dog was sad because"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["n_vocab"].toInt(), 512);
        const QJsonArray results = o["results"].toArray();
        QCOMPARE(results.size(), 2);
        const QJsonObject first = results[0].toObject();
        QCOMPARE(first["prompt_position_logits"].toArray().size(), 5);
        QCOMPARE(first["prompt_position_logits"].toArray()[0].toArray().size(), 512);
        QCOMPARE(first["steps"].toArray().size(), 3);
        QCOMPARE(first["generated_tokens"].toArray().size(), 2);
        // The same numbers as llama.cpp's reference (within the engine's tolerance).
        const std::vector<ReferenceRun> ref = read_reference_logits(shared_path("reference/stories260K/stories260K_logits.json"));
        const std::vector<float> ours = to_floats(first["prompt_position_logits"].toArray()[4].toArray());
        QVERIFY(max_abs_diff(ours.data(), ref[0].prompt_position_logits[4]) < 6e-3f);
        QCOMPARE(to_ints(first["generated_tokens"].toArray()),
                 std::vector<int32_t>(ref[0].generated.begin(), ref[0].generated.begin() + 2));
    }

    void perplexityPrintsTheFinalEstimate() {
        const Run r = run_cli({"perplexity", "-f", shared_path("data/text/tinystories_style_eval.txt"), "-c", "512"});
        QCOMPARE(r.exit_code, 0);
        QVERIFY2(r.out.contains("Final estimate: PPL = 4.24"), r.out.constData());
    }

    void tokenizePrintsIds() {
        const Run r = run_cli({"tokenize", "-p", "Once upon a time", "--ids"});
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.out.trimmed(), QByteArray("[1, 403, 407, 261, 378]"));
    }

    // llama-tokenize's use: a vocabulary-only GGUF of any architecture. The last (longest)
    // input of each of llama.cpp's vector files gives llama.cpp's ids.
    void tokenizeVocabularyOnlyFiles_data() {
        QTest::addColumn<QString>("vocab");
        for (const char * v : {"gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2", "gemma3", "gpt-oss"}) {
            QTest::newRow(v) << QString("data/tokenizer/ggml-vocab-%1.gguf").arg(v);
        }
    }
    void tokenizeVocabularyOnlyFiles() {
        QFETCH(QString, vocab);
        QFile inp(shared_path(vocab + ".inp")), out(shared_path(vocab + ".out"));
        QVERIFY(inp.open(QIODevice::ReadOnly) && out.open(QIODevice::ReadOnly));
        const QByteArray input = inp.readAll();
        const QByteArray separator = "\n__ggml_vocab_test__\n";
        const QByteArray last = input.mid(input.lastIndexOf(separator, input.size() - separator.size() - 1) + separator.size());
        const QByteArray text = last.left(last.size() - separator.size());
        const QList<QByteArray> lines = out.readAll().trimmed().split('\n');
        QTemporaryDir dir;
        QFile file(dir.filePath("input.txt"));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(text) == text.size());
        file.close();
        const Run r = run_cli({"tokenize", "-m", shared_path(vocab), "-f", file.fileName(), "--no-bos", "--ids"});
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.out.trimmed(), "[" + lines.back().trimmed().split(' ').join(", ") + "]");
    }

    void tokenizeVocabularyOnlyWithSpecials() {
        // BOS as the vocabulary asks, special texts parsed, pieces printed.
        const Run bos = run_cli({"tokenize", "-m", shared_path("data/tokenizer/ggml-vocab-llama-bpe.gguf"), "-p", "Hi", "--ids"});
        QCOMPARE(bos.exit_code, 0);
        QCOMPARE(bos.out.trimmed(), QByteArray("[128000, 13347]"));
        const Run turn = run_cli(
            {"tokenize", "-m", shared_path("data/tokenizer/ggml-vocab-gemma3.gguf"), "-p", "<start_of_turn>user\nHi", "--parse-special"});
        QCOMPARE(turn.exit_code, 0);
        QCOMPARE(turn.out, QByteArray("     2 -> \"<bos>\"\n   105 -> \"<start_of_turn>\"\n  2364 -> \"user\"\n   107 -> \"\\n\"\n"
                                      " 10979 -> \"Hi\"\n"));
    }

    void infoDescribesTheModel() {
        const Run r = run_cli({"info", "-m", shared_path("models/tiny/tiny-qwen2-Q8_0.gguf"), "-c", "1024"});
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.out.contains("architecture:  qwen2"));
        QVERIFY(r.out.contains("Q8_0 x"));
        QVERIFY(r.out.contains("memory at -c 1024"));
        QVERIFY2(r.out.contains("    full attn   2 layers, "), r.out.constData());  // the plan per layer kind
        QVERIFY(r.out.contains("largest context that fits"));
        QVERIFY(r.out.contains("fits"));
        QVERIFY2(r.out.contains("tool calls:    none"), r.out.constData());  // a builtin template shows no tools
    }

    // How many sequences of -c tokens the KV budgets admit at once, per policy: the budget
    // over what each reserves (no policy: the whole context; h2o at 25%: about a quarter).
    void infoCountsTheSequencesThatFit() {
        const Run r = run_cli({"info", "-m", shared_path("models/tiny/tiny-qwen2-Q8_0.gguf"), "-c", "1024", "--keep-ratio", "0.25",
                               "--kv-device-mib", "8", "--kv-host-mib", "0.001", "--kv-disk-mib", "0.001"});
        QCOMPARE(r.exit_code, 0);
        const QRegularExpression line(
            R"(sequences of 1024 tokens the KV budgets hold at once \(serve --parallel\): none (\d+), h2o 25% (\d+), )"
            R"(snapkv 25% (\d+), streaming 25% (\d+))");
        const QRegularExpressionMatch m = line.match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), r.out.constData());
        const int none = m.captured(1).toInt(), h2o = m.captured(2).toInt();
        QVERIFY2(none >= 1 && h2o >= 2 * none && h2o <= 4 * none + 4, qPrintable(QString("none %1, h2o %2").arg(none).arg(h2o)));
    }

    // A mixture of experts: the experts' bytes and what a token reads, apart.
    void infoShowsTheExperts() {
        const Run r = run_cli({"info", "-m", shared_path("models/tiny-2026/tiny-qwen3moe-Q8_0.gguf"), "-c", "512"});
        QCOMPARE(r.exit_code, 0);
        QVERIFY2(r.out.contains("experts:       2 of 8 per token, width 32"), r.out.constData());
        QVERIFY2(r.out.contains("    experts     ") && r.out.contains("(8 per layer, 2 chosen per token)"), r.out.constData());
        QVERIFY2(r.out.contains("    per token   ") && r.out.contains(" active"), r.out.constData());
    }

    // bench reports what decode reads per token: of a mixture's experts only the chosen ones.
    void benchReportsBytesReadPerToken() {
        const Run r = run_cli(
            {"bench", "-m", shared_path("models/tiny-2026/tiny-qwen3moe-f32.gguf"), "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const double per_token = o["bytes_read_per_token"].toDouble(), weights = o["weight_bytes"].toDouble();
        qInfo("bytes read per token %.0f of %.0f", per_token, weights);
        // 2 of 8 experts in each of 2 layers (3 x 32 x 128 floats each), not the embedding table.
        const double experts = 2 * 8 * 3 * 32 * 128 * 4, embd = 512 * 128 * 4;
        QCOMPARE(per_token, weights - experts * 6 / 8 - embd + 128 * 4);
    }

    // bench's cache takes the codecs of the flags (llama-bench's -ctk / -ctv): q8 rows past
    // the full-precision window hold about half the bytes of f16 ones; a width the cache
    // has not is an error.
    void benchTakesTheKvCodecs() {
        auto kv_bytes = [](const QJsonObject & o) {
            double bytes = 0;
            for (const QJsonValue & kind : o["depths"].toArray()[0].toObject()["kv_by_kind"].toArray()) bytes += kind["bytes"].toDouble();
            return bytes;
        };
        const QString model = shared_path("models/tiny/tiny-llama-Q4_0.gguf");
        const Run f16 = run_cli({"bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "--depth", "256", "--json"});
        const Run q8 = run_cli({"bench", "-m",    model,     "-p",  "8",           "-n", "2",           "-r", "1",
                                "-t",    "1",     "--depth", "256", "--kv-k-bits", "8",  "--kv-v-bits", "8",  "--kv-residual",
                                "0",     "--json"});
        QCOMPARE(f16.exit_code, 0);
        QCOMPARE(q8.exit_code, 0);
        const QJsonObject a = QJsonDocument::fromJson(f16.out).object(), b = QJsonDocument::fromJson(q8.out).object();
        QCOMPARE(a["kv_k"].toString(), QString("f16"));
        QCOMPARE(b["kv_k"].toString(), QString("q8"));
        QCOMPARE(b["kv_v"].toString(), QString("q8"));
        qInfo("KV at depth 256: f16 %.0f bytes, q8 %.0f", kv_bytes(a), kv_bytes(b));
        QVERIFY(kv_bytes(b) > 0.4 * kv_bytes(a) && kv_bytes(b) < 0.65 * kv_bytes(a));
        const Run bad = run_cli({"bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--kv-k-bits", "5"});
        QVERIFY(bad.exit_code != 0);
        QVERIFY2(bad.err.contains("KV bits must be 16, 8 or 4"), bad.err.constData());
    }

    // The rope's scaling and the sliding layers as each family's file sets them.
    void infoNamesRopeScalingAndLayerKinds_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QStringList>("lines");
        QTest::newRow("mistral3") << "tiny-mistral3-f32" << QStringList{"rope base 1e+06, YaRN x16 from 64,"};
        QTest::newRow("phi3") << "tiny-phi3-f32" << QStringList{"LongRoPE from 256"};
        QTest::newRow("gemma3") << "tiny-gemma3-f32"
                                << QStringList{"linear scaling x8", "sliding window 32 tokens on 3 of 4 layers (rope base 10000)"};
        QTest::newRow("gpt-oss") << "tiny-gpt-oss-f32"
                                 << QStringList{"YaRN x32 from 4096", "sliding window 32 tokens on 1 of 2 layers (rope base 150000)"};
        QTest::newRow("qwen35") << "tiny-qwen35-f32"
                                << QStringList{"recurrent:     3 of 4 layers Gated DeltaNet",
                                               "keeps 3 of 4 layers as a fixed-size state; eviction, Quest and the KV codecs apply "
                                               "to the other 1"};
    }
    void infoNamesRopeScalingAndLayerKinds() {
        QFETCH(QString, model);
        QFETCH(QStringList, lines);
        const Run r = run_cli({"info", "-m", shared_path("models/tiny-2026/" + model + ".gguf")});
        QCOMPARE(r.exit_code, 0);
        for (const QString & line : lines) QVERIFY2(r.out.contains(line.toUtf8()), r.out.constData());
        QVERIFY(!r.out.contains("sliding window") || model == "tiny-gemma3-f32" || model == "tiny-gpt-oss-f32");
    }

    // make-model writes the hybrids: info shows their layer kinds and generate runs them;
    // --layers keeps the period of three recurrent layers to one attention layer, --dense
    // turns qwen35moe into qwen35.
    void makeModelWritesHybrids_data() {
        QTest::addColumn<QStringList>("flags");
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("recurrent");
        QTest::newRow("qwen35") << QStringList{"--preset", "tiny-qwen35"} << "qwen35"
                                << "3 of 4 layers";
        QTest::newRow("qwen35moe") << QStringList{"--preset", "tiny-qwen35moe", "--type", "Q8_0"} << "qwen35moe"
                                   << "3 of 4 layers";
        QTest::newRow("qwen35 8 layers") << QStringList{"--preset", "tiny-qwen35", "--layers", "8"} << "qwen35"
                                         << "6 of 8 layers";
        QTest::newRow("qwen35moe dense") << QStringList{"--preset", "tiny-qwen35moe", "--dense"} << "qwen35"
                                         << "3 of 4 layers";
    }
    void makeModelWritesHybrids() {
        QFETCH(QStringList, flags);
        QFETCH(QString, arch);
        QFETCH(QString, recurrent);
        QTemporaryDir dir;
        const QString file = dir.filePath("hybrid.gguf");
        const Run made = run_cli(QStringList{"make-model", "-o", file, "-t", "2"} + flags);
        QVERIFY2(made.exit_code == 0, made.err.constData());
        const Run info = run_cli({"info", "-m", file, "-c", "1024"});
        QCOMPARE(info.exit_code, 0);
        QVERIFY2(info.out.contains(("architecture:  " + arch + "\n").toUtf8()), info.out.constData());
        QVERIFY2(info.out.contains(("recurrent:     " + recurrent + " Gated DeltaNet").toUtf8()), info.out.constData());
        const Run gen = run_cli({"generate", "-m", file, "-p", "Once upon a time", "-n", "8", "--temp", "0", "--json"});
        QVERIFY2(gen.exit_code == 0, gen.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(gen.out).object();
        QVERIFY(o["prompt_tokens"].toArray().size() > 1);
        QCOMPARE(o["generated_tokens"].toArray().size(), 8);
    }

    // Process A prefills a prompt and exits; process B with the same prompt restores its KV
    // from the prefix cache on disk (a hybrid: and the recurrent states at its end) and
    // generates the same tokens.
    void prefixCacheSurvivesTheProcess_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("chars");
        QTest::addColumn<int>("states");
        QTest::newRow("stories260K") << QString() << 3000 << 0;
        QTest::newRow("qwen35") << shared_path("models/tiny-2026/tiny-qwen35-f32.gguf") << 1500 << 1;
    }

    void prefixCacheSurvivesTheProcess() {
        QFETCH(QString, model);
        QFETCH(int, chars);
        QFETCH(int, states);
        QTemporaryDir dir;
        QFile text(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(text.open(QIODevice::ReadOnly));
        const QString prompt = QString::fromUtf8(text.read(chars));
        const QStringList on_model = model.isEmpty() ? QStringList{} : QStringList{"-m", model};
        auto generate = [&](const QString & stats) {
            return run_cli(QStringList{"generate", "-p", prompt, "-n", "16", "--temp", "0", "--json", "--kv-dir", dir.path(),
                                       "--kv-disk-mib", "64", "--kv-stats-json", stats} +
                           on_model);
        };
        const Run a = generate(dir.path() + "/a.json");
        QVERIFY2(a.exit_code == 0, a.err.constData());
        const Run b = generate(dir.path() + "/b.json");
        QCOMPARE(b.exit_code, 0);
        const QJsonObject sa = read_json(dir.path() + "/a.json"), sb = read_json(dir.path() + "/b.json");
        QCOMPARE(sa["restored_tokens"].toInt(), 0);
        QVERIFY2(sb["restored_tokens"].toInt() > 300, qPrintable(QString::number(sb["restored_tokens"].toInt())));
        QCOMPARE(sb["restored_states"].toInt(), states);
        QVERIFY(sb["tiers"].toArray().size() >= 2);
        QCOMPARE(QJsonDocument::fromJson(b.out).object()["generated_tokens"], QJsonDocument::fromJson(a.out).object()["generated_tokens"]);
        // Without the prefix cache nothing is restored.
        const Run c = run_cli(QStringList{"generate", "-p", prompt, "-n", "4", "--temp", "0", "--kv-dir", dir.path(), "--no-prefix-cache",
                                          "--kv-stats-json", dir.path() + "/c.json"} +
                              on_model);
        QCOMPARE(c.exit_code, 0);
        QCOMPARE(read_json(dir.path() + "/c.json")["restored_tokens"].toInt(), 0);
    }

    // bench-parallel runs N sequences at once and reports their aggregate decode rate.
    void benchParallelRunsSequencesTogether() {
        const Run r = run_cli({"bench-parallel", "-m", shared_path("models/tiny/tiny-llama-Q4_0.gguf"), "--parallel", "1,3", "-p", "8",
                               "-n", "8", "-r", "1", "-t", "1", "--json"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonArray rows = QJsonDocument::fromJson(r.out).object()["rows"].toArray();
        QCOMPARE(rows.size(), 2);
        QCOMPARE(rows[1].toObject()["parallel"].toInt(), 3);
        QCOMPARE(rows[1].toObject()["most_running"].toInt(), 3);
        QCOMPARE(rows[1].toObject()["refused"].toInt(), 0);
        QVERIFY(rows[1].toObject()["decode_tok_s"].toDouble() > 0);
        QVERIFY(rows[1].toObject()["kv_bytes_per_sequence"].toDouble() > 0);
        const Run bad = run_cli({"bench-parallel", "--parallel", "x"});
        QCOMPARE(bad.exit_code, 1);
        QVERIFY2(bad.err.contains("--parallel: 'x'"), bad.err.constData());
    }

    // bench-turns on a hybrid: the reopened conversation restores blocks and states up to
    // its last block boundary with a snapshot (the prompt of turn 2 ends at 312 tokens).
    void benchTurnsRestoresAHybridConversation() {
        const Run r = run_cli({"bench-turns", "-m", shared_path("models/tiny-2026/tiny-qwen35-f32.gguf"), "--doc", "300", "-n", "4", "-q",
                               "8", "-t", "1", "--json"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject d = QJsonDocument::fromJson(r.out).object()["docs"].toArray()[0].toObject();
        QCOMPARE(d["conversation_tokens"].toInt(), 312);
        QCOMPARE(d["restored_tokens"].toInt(), 288);  // 9 blocks of 32: the states of turn 2's prompt at 288
        QCOMPARE(d["restored_states"].toInt(), 1);
        QCOMPARE(d["snapshot_interval"].toInt(), 128);
        QCOMPARE(d["snapshot_bytes"].toInt(), 3 * 19456);
        QVERIFY(d["store_mib"].toDouble() > 0);
        const Run bad = run_cli({"bench-turns", "--doc", "0"});
        QCOMPARE(bad.exit_code, 1);
        QVERIFY2(bad.err.contains("--doc: '0'"), bad.err.constData());
    }

    void chatAnswersFromStdin() {
        const Run r = run_cli({"chat", "--temp", "0", "-n", "12"}, "Once upon a time\n/exit\n");
        QCOMPARE(r.exit_code, 0);
        QVERIFY(!r.out.trimmed().isEmpty());
    }

    // A thinking model's thinking is printed only with --show-thinking (the template leaves
    // stories260K's reply inside "<think>", which it never closes: all thinking), and
    // --thinking off reaches the template (which then closes the thinking at once).
    void chatShowsThinkingOnlyWhenAsked() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("thinking.gguf").toStdString();
        const lr::Status s = copy_gguf_with_string(
            shared_path("models/stories260K.gguf").toStdString(), path, "tokenizer.chat_template",
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
            "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% else %}<think>\n{% endif %}");
        QVERIFY2(s.ok(), s.message().c_str());
        const QStringList args{"chat", "-m", QString::fromStdString(path), "--temp", "0", "-n", "12"};
        const Run hidden = run_cli(args, "Once upon a time\n/exit\n");
        QCOMPARE(hidden.exit_code, 0);
        QCOMPARE(hidden.out.trimmed(), QByteArray());
        const Run shown = run_cli(args + QStringList{"--show-thinking"}, "Once upon a time\n/exit\n");
        QCOMPARE(shown.exit_code, 0);
        QVERIFY2(shown.out.startsWith("Thinking: ") && shown.out.trimmed().size() > 20, shown.out.constData());
        const Run off = run_cli(args + QStringList{"--show-thinking", "--thinking", "off"}, "Once upon a time\n/exit\n");
        QCOMPARE(off.exit_code, 0);
        QVERIFY2(!off.out.contains("Thinking") && !off.out.trimmed().isEmpty(), off.out.constData());  // an answer, at once
    }

    // The issue's --quest-blocks is --quest-pages; both reach the cache, with --quest-page.
    void questFlagsReachTheCache() {
        QTemporaryDir dir;
        for (const char * flag : {"--quest-pages", "--quest-blocks"}) {
            const QString stats = dir.filePath("stats.json");
            const Run r = run_cli({"generate", "-p", "Once upon a time", "-n", "8", "--temp", "0", "--kv-policy", "quest", flag, "3",
                                   "--quest-page", "8", "--kv-stats-json", stats});
            QCOMPARE(r.exit_code, 0);
            QFile f(stats);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
            QCOMPARE(o["policy"].toString(), QString("quest 3 pages of 8 tokens per head, K f16 / V f16"));
            QVERIFY(o["rows_read"].toDouble() > 0);
        }
    }

    // --layer-budget reaches the cache (its description in the stats) for the policies it shapes.
    void layerBudgetFlagReachesTheCache() {
        QTemporaryDir dir;
        const QString stats = dir.filePath("stats.json");
        const Run r = run_cli({"generate", "-p", "Once upon a time", "-n", "8", "--temp", "0", "--kv-policy", "h2o", "--kv-budget", "16",
                               "--layer-budget", "pyramid", "--kv-stats-json", stats});
        QCOMPARE(r.exit_code, 0);
        QFile f(stats);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(o["policy"].toString(), QString("h2o 16 tokens (recent 50%, 4 sinks), pyramid layers, warm-up 100 tokens, K f16 / V f16"));
    }

    // Warm-up and the automatic chunk reach the cache; the stats carry the monitoring figures.
    void warmupAndAutoChunkReachTheCache() {
        QTemporaryDir dir;
        const QString stats = dir.filePath("stats.json");
        const Run r = run_cli({"generate", "-p", "Once upon a time", "-n", "8", "--temp", "0", "--kv-policy", "h2o", "--warmup-tokens",
                               "64", "--chunk", "auto", "--kv-stats-json", stats});
        QCOMPARE(r.exit_code, 0);
        QFile f(stats);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(o["policy"].toString(), QString("h2o 20% (recent 50%, 4 sinks), inverse layers, warm-up 64 tokens, K f16 / V f16"));
        QCOMPARE(o["retention_ratio"].toDouble(), 1.0);  // a short sequence, still warming up
        QCOMPARE(o["evictions_per_1k"].toDouble(), 0.0);
        QVERIFY(o["tokens_written"].toDouble() > 8);
        QCOMPARE(o["refusals"].toDouble(), 0.0);
        QVERIFY(o["selection_ms"].toObject().isEmpty());
    }

    void badInputGivesOneLineError_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no command") << QStringList{} << "usage";
        QTest::newRow("unknown command") << QStringList{"fly"} << "unknown command 'fly'";
        QTest::newRow("unknown flag") << QStringList{"generate", "--fast"} << "unknown option '--fast'";
        QTest::newRow("missing value") << QStringList{"generate", "-n"} << "-n needs a value";
        QTest::newRow("bad number") << QStringList{"generate", "-p", "x", "-n", "many"} << "expects an integer";
        QTest::newRow("missing model") << QStringList{"generate", "-m", "/nonexistent.gguf", "-p", "x"} << "/nonexistent.gguf: cannot open";
        QTest::newRow("not a gguf") << QStringList{"info", "-m", shared_path("data/text/tinystories_style_eval.txt")} << "not a GGUF file";
        QTest::newRow("vocab only") << QStringList{"info", "-m", shared_path("data/tokenizer/ggml-vocab-qwen2.gguf")} << "is missing";
        QTest::newRow("thinking") << QStringList{"chat", "--thinking", "maybe"} << "--thinking must be on or off, got 'maybe'";
        QTest::newRow("effort") << QStringList{"serve", "--reasoning-effort", "max"} << "--reasoning-effort must be low, medium or high";
        QTest::newRow("unknown arch") << QStringList{"info", "-m", shared_path("data/tokenizer/ggml-vocab-gpt-2.gguf")}
                                      << "architecture 'gpt2' is not supported";
        QTest::newRow("context too big") << QStringList{"generate", "-p", "x", "-c", "100000"} << "trained for";
        QTest::newRow("prompt too long") << QStringList{"generate", "-p", QString("word ").repeated(100), "-c", "32"}
                                         << "shorten it or raise -c";
        QTest::newRow("missing file") << QStringList{"perplexity", "-f", "/nonexistent.txt"} << "cannot open";
        QTest::newRow("bad temperature") << QStringList{"generate", "-p", "x", "--temp", "-1"} << "--temp must be between";
        QTest::newRow("make-model no output") << QStringList{"make-model", "--preset", "tiny"} << "needs an output file";
        QTest::newRow("quest page") << QStringList{"generate", "-p", "x", "--kv-policy", "quest", "--quest-page", "24"}
                                    << "Quest page (24 tokens)";
        QTest::newRow("make-model hybrid without attention")
            << QStringList{"make-model", "--preset", "qwen3.6-27b", "--layers", "2", "-o", "/tmp/x.gguf"}
            << "at least full_attention_interval (4) layers";
        QTest::newRow("layer budget") << QStringList{"generate", "-p", "x", "--layer-budget", "steep"}
                                      << "unknown --layer-budget 'steep' (uniform, pyramid or inverse)";
        QTest::newRow("make-model bad type") << QStringList{"make-model", "--type", "Q9", "-o", "/tmp/x.gguf"} << "unknown weight type";
        QTest::newRow("warm-up negative") << QStringList{"generate", "-p", "x", "--warmup-tokens", "-1"}
                                          << "--warmup-tokens must be between 0 and 1048576";
        QTest::newRow("warm-up not a number") << QStringList{"generate", "-p", "x", "--warmup-tokens", "many"}
                                              << "--warmup-tokens expects an integer";
        QTest::newRow("chunk neither a size nor auto")
            << QStringList{"generate", "-p", "x", "--chunk", "big"} << "--chunk expects 1 to 8192 tokens or auto, got 'big'";
    }
    void badInputGivesOneLineError() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = run_cli(args);
        QCOMPARE(r.status, QProcess::NormalExit);
        QVERIFY(r.exit_code != 0);
        const QString text = QString::fromUtf8(args.isEmpty() ? r.out : r.err).trimmed();
        QVERIFY2(text.contains(message), qPrintable(text));
        if (!args.isEmpty()) QVERIFY2(!text.contains('\n'), qPrintable(text));
    }

    // health: findings as text and JSON, the exit code a script reads (0 healthy, 2 a
    // warning, 3 critical, 1 could not check), without a model and with one.
    void healthReportsAndExitsBySeverity() {
        QTemporaryDir dir;
        auto check = [](const Run & r) {
            QVERIFY2(r.status == QProcess::NormalExit, r.err.constData());
            const QJsonObject o = QJsonDocument::fromJson(r.out).object();
            QVERIFY2(o["findings"].isArray(), r.out.constData());
            const QString status = o["status"].toString();
            const int expected = status == "healthy" ? 0 : status == "warning" ? 2 : status == "critical" ? 3 : -1;
            QCOMPARE(r.exit_code, expected);
        };
        auto checks_of = [](const Run & r) {
            QStringList out;
            for (const QJsonValue & f : QJsonDocument::fromJson(r.out).object()["findings"].toArray()) {
                out << f["check"].toString() + " " + f["severity"].toString() + ": " + f["message"].toString();
            }
            return out.join("\n");
        };
        const Run empty = run_cli({"health", "--kv-dir", dir.path(), "--json"});
        check(empty);
        QVERIFY(QJsonDocument::fromJson(empty.out).object()["model"].isNull());
        QVERIFY2(checks_of(empty).contains("prefix_cache info: there is no prefix cache"), qPrintable(checks_of(empty)));

        // A prefix cache written by generate is found and sized.
        QFile text(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(text.open(QIODevice::ReadOnly));
        const Run gen = run_cli(
            {"generate", "-p", QString::fromUtf8(text.read(800)), "-n", "4", "--temp", "0", "--kv-dir", dir.path(), "--kv-disk-mib", "64"});
        QCOMPARE(gen.exit_code, 0);
        const Run stored = run_cli({"health", "--kv-dir", dir.path(), "--kv-disk-mib", "64", "--json"});
        check(stored);
        QVERIFY2(QRegularExpression("prefix_cache info: the prefix cache holds \\d+ blocks").match(checks_of(stored)).hasMatch(),
                 qPrintable(checks_of(stored)));

        // A disk budget far beyond the free disk: a warning (or worse), in plain words.
        const Run huge = run_cli({"health", "--kv-dir", dir.path(), "--kv-disk-mib", "1000000000"});
        QVERIFY2(huge.exit_code == 2 || huge.exit_code == 3, huge.out.constData());
        QVERIFY2(huge.out.contains("disk space: ") && huge.out.contains("KV cache health in"), huge.out.constData());

        // With a model: its session's cache is checked too.
        const Run with_model = run_cli(
            {"health", "-m", shared_path("models/stories260K.gguf"), "-c", "128", "--kv-dir", dir.path(), "--kv-disk-mib", "64", "--json"});
        check(with_model);
        QVERIFY(QJsonDocument::fromJson(with_model.out).object()["model"].toString().endsWith("stories260K.gguf"));

        const Run bad = run_cli({"health", "--kv-disk-mib", "lots"});
        QCOMPARE(bad.exit_code, 1);
        QVERIFY(bad.err.startsWith("error: "));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
