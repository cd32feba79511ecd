// The model catalog on a made-up home folder with the layouts of LM Studio, GPT4All,
// Ollama (manifests naming blobs), the Hugging Face cache, ~/models and an added folder:
// every model is found once, with its header facts, and files the engine cannot run are
// listed with the reason.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "app/core/engine_requests.h"
#include "app/core/model_catalog.h"
#include "engine/gguf/gguf_writer.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::app;

class TestModelCatalog : public QObject {
    Q_OBJECT

    QTemporaryDir m_home;
    QString m_extra;

    static QString model(const QString & name) { return lr::test::shared_path(QStringLiteral("models/") + name); }
    void copy(const QString & from, const QString & to) {
        QDir().mkpath(QFileInfo(to).absolutePath());
        QVERIFY2(QFile::copy(from, to), qPrintable(to));
    }
    void link(const QString & from, const QString & to) {
        QDir().mkpath(QFileInfo(to).absolutePath());
        QVERIFY(QFile::link(from, to));
    }

private slots:
    void initTestCase() {
        const QString h = m_home.path();
        copy(model("tiny/tiny-llama-Q8_0.gguf"), h + "/.lmstudio/models/someone/tiny/tiny-llama-Q8_0.gguf");
        copy(model("tiny/tiny-qwen2-Q8_0.gguf"), h + "/.local/share/nomic.ai/GPT4All/tiny-qwen2-Q8_0.gguf");
        // Ollama: a blob named by its digest, and the manifest that names it.
        copy(model("tiny/tiny-llama-Q4_0.gguf"), h + "/.ollama/models/blobs/sha256-abc123");
        QDir().mkpath(h + "/.ollama/models/manifests/registry.ollama.ai/library/tinyllama");
        QFile manifest(h + "/.ollama/models/manifests/registry.ollama.ai/library/tinyllama/q4");
        QVERIFY(manifest.open(QIODevice::WriteOnly));
        manifest.write(R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:abc123"},
                                     {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:def"}]})");
        manifest.close();
        // Hugging Face: the snapshot links to a blob.
        copy(model("tiny/tiny-llama-F16.gguf"), h + "/.cache/huggingface/hub/models--org--tiny-GGUF/blobs/0123");
        link(h + "/.cache/huggingface/hub/models--org--tiny-GGUF/blobs/0123",
             h + "/.cache/huggingface/hub/models--org--tiny-GGUF/snapshots/rev1/tiny-F16.gguf");
        // ~/models: a good one, the same file linked again, a broken file and a partial download.
        copy(model("stories260K.gguf"), h + "/models/stories.gguf");
        link(h + "/models/stories.gguf", h + "/models/again/stories-link.gguf");
        QFile broken(h + "/models/broken.gguf");
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(QByteArray("GGUF\x03\x00\x00\x00", 8) + QByteArray(20, '\xff'));
        broken.close();
        QFile partial(h + "/models/partial.gguf");
        QVERIFY(partial.open(QIODevice::WriteOnly));
        partial.write(QByteArray(1000, '\0'));
        partial.close();
        // An added folder with a model of an architecture the engine does not run.
        m_extra = h + "/extra";
        QDir().mkpath(m_extra);
        gguf::GgufWriter w;
        w.set_string("general.architecture", "mamba");
        w.set_string("general.name", "Some Mamba");
        w.add_tensor("token_embd.weight", DType::F32, {4, 4});
        QVERIFY(w.write_file((m_extra + "/mamba.gguf").toStdString(), [](size_t, uint64_t, std::span<uint8_t> dst) {
                     std::fill(dst.begin(), dst.end(), uint8_t(0));
                     return Status{};
                 }).ok());
    }

    void findsEachModelOnceWithItsFacts() {
        const std::vector<ModelLocation> locations = ModelCatalog::standardLocations(m_home.path(), {m_extra});
        QStringList sources;
        for (const ModelLocation & l : locations) sources << l.source;
        for (const char * s : {"LM Studio", "GPT4All", "Ollama", "Hugging Face cache", "~/models", "Added folder"}) {
            QVERIFY2(sources.contains(QLatin1String(s)), s);
        }
        const std::vector<ModelEntry> entries = ModelCatalog::scan(locations);
        QMap<QString, ModelEntry> byName;
        for (const ModelEntry & e : entries) byName[QFileInfo(e.path).fileName() + QLatin1Char('|') + e.source] = e;
        QCOMPARE(entries.size(), size_t(8));  // stories once (the link is the same file)

        const ModelEntry lm = byName.value("tiny-llama-Q8_0.gguf|LM Studio");
        QVERIFY(lm.supported);
        QCOMPARE(lm.architecture, QStringLiteral("llama"));
        QCOMPARE(lm.quantization, QStringLiteral("Q8_0"));
        QCOMPARE(lm.nCtxTrain, 2048u);
        QVERIFY(lm.shape.weight_bytes > 0 && lm.shape.n_layer == 2);

        QCOMPARE(byName.value("tiny-qwen2-Q8_0.gguf|GPT4All").architecture, QStringLiteral("qwen2"));
        const ModelEntry ollama = byName.value("sha256-abc123|Ollama");
        QCOMPARE(ollama.name, QStringLiteral("tinyllama:q4"));
        QCOMPARE(ollama.quantization, QStringLiteral("Q4_0"));
        QVERIFY(ollama.supported);
        const ModelEntry hf = byName.value("tiny-F16.gguf|Hugging Face: org/tiny-GGUF");
        QVERIFY2(hf.supported, qPrintable(hf.problem));
        QCOMPARE(hf.quantization, QStringLiteral("F16"));

        const ModelEntry broken = byName.value("broken.gguf|~/models");
        QVERIFY(!broken.supported);
        QVERIFY2(broken.problem.startsWith(QStringLiteral("not a readable GGUF file")), qPrintable(broken.problem));
        const ModelEntry partial = byName.value("partial.gguf|~/models");
        QVERIFY(!partial.supported);
        QVERIFY(partial.problem.contains(QStringLiteral("no GGUF signature")));
        const ModelEntry mamba = byName.value("mamba.gguf|Added folder");
        QVERIFY(!mamba.supported);
        QCOMPARE(mamba.architecture, QStringLiteral("mamba"));
        QVERIFY2(mamba.problem.contains(QStringLiteral("mamba")), qPrintable(mamba.problem));
    }

    void missingFoldersAreSkipped() {
        QTemporaryDir empty;
        QCOMPARE(ModelCatalog::standardLocations(empty.path(), {empty.path() + "/nope"}).size(), size_t(0));
    }

    void theBundledModelIsAlwaysThere() {
        const ModelEntry e = ModelCatalog::bundled();
        QVERIFY2(e.supported, qPrintable(e.problem));
        QCOMPARE(e.path, QString::fromLatin1(kBundledModelPath));
        QCOMPARE(e.source, QStringLiteral("Bundled"));
        QCOMPARE(e.nCtxTrain, 2048u);
    }

    void scanStops() {
        std::stop_source stop;
        stop.request_stop();
        QCOMPARE(ModelCatalog::scan(ModelCatalog::standardLocations(m_home.path(), {}), stop.get_token()).size(), size_t(0));
    }
};

QTEST_GUILESS_MAIN(TestModelCatalog)
#include "test_model_catalog.moc"
