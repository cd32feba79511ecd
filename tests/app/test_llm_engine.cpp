// The real engine behind the app (LlmEngine) on the bundled model: load, measure, read a
// document, reply reusing the document's KV, stop, retention, the cache snapshot's tiers;
// a thinking model's reply streamed apart through the engine thread, and past thinking
// reaching the template; and the GUI thread's event loop during a long prefill of a real
// model on the engine thread.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "app/core/engine_host.h"
#include "app/core/llm_engine.h"
#include "engine/backend/backend_factory.h"
#include "support/eventually.h"
#include "support/gguf_copy.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;
using namespace lr::app;

class TestLlmEngine : public QObject {
    Q_OBJECT

    LlmEngine m_engine;
    EngineSettings m_settings;
    QString m_text;
    QTemporaryDir m_cacheDir;

    // The bundled model under another chat template, written in `dir`.
    static QString withTemplate(const QTemporaryDir & dir, const std::string & jinja) {
        const QString path = dir.filePath(QStringLiteral("templated.gguf"));
        const Status copied =
            lr::test::copy_gguf_with_string(lr::test::shared_path(QStringLiteral("models/stories260K.gguf")).toStdString(),
                                            path.toStdString(), "tokenizer.chat_template", jinja);
        if (!copied.ok()) qFatal("%s", copied.message().c_str());
        return path;
    }

    ConversationContext withDocument(const QString & text) const {
        ConversationContext c;
        c.documentTitle = QStringLiteral("stories.txt");
        c.documentText = text;
        return c;
    }

private slots:
    void initTestCase() {
        // The prefix cache writes under $XDG_CACHE_HOME: keep it in the test's folder.
        qputenv("XDG_CACHE_HOME", m_cacheDir.path().toUtf8());
        QFile f(lr::test::shared_path(QStringLiteral("data/text/tinystories_style_eval.txt")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        m_text = QString::fromUtf8(f.readAll());
        m_settings.contextTokens = 512;
        m_settings.chunkTokens = 64;
        m_settings.sampler.temperature = 0;
        m_settings.maxReplyTokens = 24;
        auto info = m_engine.loadModel({.path = QString::fromLatin1(kBundledModelPath), .threads = 1}, {});
        QVERIFY2(info.ok(), info.status().message().c_str());
        QCOMPARE(info->architecture, QStringLiteral("llama"));
        QCOMPARE(info->nCtxTrain, 2048u);
        QVERIFY(!info->quantization.isEmpty());
        QVERIFY(info->shape.weight_bytes > 0);
        // CUDA when a device is usable; otherwise the CPU, silently when there is no GPU at all.
        const BackendInventory machine = probe_backends();
        if (machine.devices.empty()) {
            QCOMPARE(info->backend, QStringLiteral("CPU, 1 thread"));
            QVERIFY(info->backendNote.isEmpty());
        } else {
            QVERIFY2(info->backend.startsWith(QLatin1String("CUDA")) || !info->backendNote.isEmpty(), qPrintable(info->backend));
        }
        QVERIFY(m_engine.hasModel());
    }

    void missingModelFileIsNamed() {
        LlmEngine other;
        auto r = other.loadModel({.path = QStringLiteral("/nonexistent/model.gguf"), .threads = 1}, {});
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.status().message()).contains(QStringLiteral("/nonexistent/model.gguf")),
                 r.status().message().c_str());
        QVERIFY(!other.hasModel());
    }

    void documentIsMeasuredReadAndReused() {
        const ConversationContext context = withDocument(m_text.left(500));
        auto m = m_engine.measure(context, m_settings);
        QVERIFY2(m.ok(), m.status().message().c_str());
        QVERIFY(m->fits);
        QCOMPARE(m->contextLimit, 512u);
        QVERIFY(m->documentTokens > 100 && m->promptTokens > m->documentTokens);

        uint32_t done = 0;
        int reports = 0;
        QVERIFY(m_engine
                    .prefill(context, m_settings,
                             [&](const PrefillProgress & p) {
                                 ++reports;
                                 done = p.n_done;
                             },
                             {})
                    .ok());
        QCOMPARE(done, m->promptTokens);
        QCOMPARE(reports, int((m->promptTokens + 63) / 64));

        const CacheSnapshot snap = m_engine.snapshot();
        QVERIFY(snap.hasSession);
        QCOMPARE(snap.contextUsed, m->promptTokens);
        QCOMPARE(snap.contextLimit, 512u);
        QVERIFY(snap.kv.tiers[0].present);
        QVERIFY(snap.kv.tiers[0].used_bytes > 0);
        // A tier the cache does not have is absent, with no numbers.
        for (const KvTierStats & t : snap.kv.tiers) {
            if (!t.present) QVERIFY(t.used_bytes == 0 && t.capacity_bytes == 0 && t.blocks == 0);
        }
        QCOMPARE(snap.codecs, QStringLiteral("K f16 / V f16"));
        QCOMPARE(snap.policy, QStringLiteral("none"));

        // A question after the document evaluates only the question: the KV is reused.
        uint32_t evaluated = 0;
        std::string streamed;
        auto r = m_engine.reply(
            context, QStringLiteral("Who is in the story?"), m_settings, [&](const PrefillProgress & p) { evaluated = p.n_total; },
            [&](int32_t, std::string_view piece) {
                streamed += piece;
                return true;
            },
            {}, {});
        QVERIFY2(r.ok(), r.status().message().c_str());
        QVERIFY2(evaluated < 40, qPrintable(QString::number(evaluated)));
        QCOMPARE(streamed, r->text);
        QVERIFY(r->tokens.size() <= 24);

        const RetentionSnapshot retention = m_engine.retention(context);
        QVERIFY(retention.inContext);
        QCOMPARE(retention.kept.size(), retention.tokenSpans.size());
        QCOMPARE(retention.kept.size(), size_t(m->documentTokens));
        QCOMPARE(retention.keptFraction(), 1.0);
        int last = 0;
        for (const auto & [begin, end] : retention.tokenSpans) {
            QVERIFY(begin >= last - 1 && end >= begin);
            last = end;
        }
        QVERIFY2(qAbs(last - int(context.documentText.size())) <= 2, qPrintable(QString::number(last)));
    }

    // Under H2O the retention view is the cache's own: per position, part of the document
    // forgotten, the start (sinks) and the end (recent window) kept.
    void evictionShowsInRetention() {
        LlmEngine engine;
        QVERIFY(engine.loadModel({.path = QString::fromLatin1(kBundledModelPath), .threads = 1}, {}).ok());
        EngineSettings settings = m_settings;
        settings.kv.policy = KvPolicy::h2o;
        settings.kv.keep_ratio = 0.3;
        settings.kv.sink_tokens = 4;
        settings.kv.prefix_cache = false;
        const ConversationContext context = withDocument(m_text.left(700));
        const Status read = engine.prefill(context, settings, {}, {});
        QVERIFY2(read.ok(), read.message().c_str());
        const RetentionSnapshot retention = engine.retention(context);
        QVERIFY(retention.inContext);
        QVERIFY(retention.perPosition);
        QVERIFY2(retention.keptFraction() > 0.1 && retention.keptFraction() < 0.6, qPrintable(QString::number(retention.keptFraction())));
        QVERIFY(retention.kept.back() > 0.99f);
        QVERIFY(engine.snapshot().policy.startsWith(QStringLiteral("h2o")));
        // Where the model looked comes with it, per document token, evicted as the cache says.
        QVERIFY(retention.attention);
        const AttentionMass & looked = *retention.attention;
        QCOMPARE(size_t(looked.n_positions), retention.kept.size());
        for (uint32_t p = 0; p < looked.n_positions; ++p) {
            double held = 0;
            for (size_t l = 0; l < looked.layers.size(); ++l) held += looked.held_at(l, p);
            QVERIFY(std::abs(held / double(looked.layers.size()) - retention.kept[p]) < 1e-6);
        }
    }

    void documentTooLongIsMeasuredNotRead() {
        const ConversationContext context = withDocument(m_text);
        auto m = m_engine.measure(context, m_settings);
        QVERIFY(m.ok());
        QVERIFY(!m->fits);
        QVERIFY(m->promptTokens > 512);
        Status s = m_engine.prefill(context, m_settings, {}, {});
        QCOMPARE(s.code(), StatusCode::context_full);
        // Not in the context: the retention view shows nothing remembered.
        const RetentionSnapshot retention = m_engine.retention(context);
        QVERIFY(!retention.inContext);
        QCOMPARE(retention.keptFraction(), 0.0);
    }

    // The KV of a document read once is persisted by the prefix cache: a new engine (the app
    // started again) restores it instead of computing it.
    void aDocumentReadAgainIsRestored() {
        const ConversationContext context = withDocument(m_text.mid(1000, 900));
        EngineSettings settings = m_settings;
        settings.contextTokens = 2048;
        uint32_t computedFirst = 0;
        {
            LlmEngine first;
            QVERIFY(first.loadModel({.path = QString::fromLatin1(kBundledModelPath), .threads = 1}, {}).ok());
            const Status s = first.prefill(context, settings, [&](const PrefillProgress & p) { computedFirst = p.n_done - p.n_restored; },
                                           {});
            QVERIFY2(s.ok(), s.message().c_str());
        }
        LlmEngine second;
        QVERIFY(second.loadModel({.path = QString::fromLatin1(kBundledModelPath), .threads = 1}, {}).ok());
        PrefillProgress last;
        QVERIFY(second.prefill(context, settings, [&](const PrefillProgress & p) { last = p; }, {}).ok());
        qInfo("first read computed %u tokens; the second restored %u of %u", computedFirst, last.n_restored, last.n_total);
        QVERIFY(computedFirst > 200);
        QVERIFY2(last.n_restored > last.n_total / 2, qPrintable(QString::number(last.n_restored)));
        QCOMPARE(second.snapshot().kv.restored_tokens, uint64_t(last.n_restored));
    }

    void stopDuringAPrefill() {
        const ConversationContext context = withDocument(m_text.left(800) + QStringLiteral(" fresh"));
        std::stop_source stop;
        int reports = 0;
        Status s = m_engine.prefill(
            context, m_settings,
            [&](const PrefillProgress &) {
                if (++reports == 1) stop.request_stop();
            },
            stop.get_token());
        QCOMPARE(s.code(), StatusCode::cancelled);
        QCOMPARE(reports, 1);
    }

    // A template that leaves the reply inside "<think>\n" makes the whole reply of stories260K
    // (which never closes the tag) thinking: the job streams it on `thinking`, nothing on
    // `token`, and the result carries it apart from the (empty) answer. A past turn's
    // thinking reaches the template, which here shows it.
    void aThinkingModelsReplyStreamsApart() {
        QTemporaryDir dir;
        const QString path =
            withTemplate(dir,
                         "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                         "{% if m.reasoning_content %}[thought: {{ m.reasoning_content }}]{% endif %}<|im_end|>\n{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}");
        EngineSettings settings = m_settings;
        settings.maxReplyTokens = 12;
        settings.kv.prefix_cache = false;

        EngineHost host([] { return std::make_unique<LlmEngine>(); });
        QSignalSpy loaded(host.loadModel({.path = path, .threads = 1}), &EngineJob::finished);
        QVERIFY(loaded.wait(kEventuallyMs));
        EngineJob * job = host.chat({.conversationId = 1, .userText = QStringLiteral("Once upon a time"), .settings = settings});
        QSignalSpy thinking(job, &EngineJob::thinking);
        QSignalSpy tokens(job, &EngineJob::token);
        QSignalSpy finished(job, &EngineJob::finished);
        QSignalSpy failed(job, &EngineJob::failed);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, kEventuallyMs);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(0).value<JobError>().message));
        const JobResult result = finished.first().at(0).value<JobResult>();
        QString thought;
        for (const QList<QVariant> & args : thinking) thought += args.at(0).toString();
        QCOMPARE(tokens.count(), 0);
        QVERIFY(thinking.count() > 1);
        QVERIFY(!result.thinking.isEmpty());
        QCOMPARE(thought, result.thinking);
        QCOMPARE(result.text, QString());
        QCOMPARE(result.generatedTokens, 12u);

        LlmEngine engine;
        QVERIFY(engine.loadModel({.path = path, .threads = 1}, {}).ok());
        ConversationContext past;
        past.turns = {{QStringLiteral("user"), QStringLiteral("Hi")},
                      {QStringLiteral("assistant"), QStringLiteral("Hello."), QStringLiteral("greet back")}};
        const Result<ContextMeasure> withThinking = engine.measure(past, settings);
        past.turns[1].thinking.clear();
        const Result<ContextMeasure> without = engine.measure(past, settings);
        QVERIFY(withThinking.ok() && without.ok());
        QVERIFY2(withThinking->promptTokens > without->promptTokens + 3,
                 qPrintable(QStringLiteral("%1 vs %2").arg(withThinking->promptTokens).arg(without->promptTokens)));
    }

    // A template with enable_thinking: the model info says so, and the setting's "off"
    // reaches it (the reply is all answer where by default it is all thinking).
    void theThinkingSettingReachesTheTemplate() {
        QTemporaryDir dir;
        const QString path = withTemplate(
            dir,
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% if enable_thinking is defined and enable_thinking is false %}<think></think>{% else %}<think>\n{% endif %}{% endif %}");
        EngineHost host([] { return std::make_unique<LlmEngine>(); });
        QSignalSpy loaded(host.loadModel({.path = path, .threads = 1}), &EngineJob::finished);
        QVERIFY(loaded.wait(kEventuallyMs));
        const ModelInfo info = loaded.first().at(0).value<JobResult>().model;
        QVERIFY(info.thinkingSwitch);
        QVERIFY(!info.reasoningEffort);
        const Result<ModelInfo> bundled = LlmEngine().loadModel({.path = QString::fromLatin1(kBundledModelPath), .threads = 1}, {});
        QVERIFY(bundled.ok() && !bundled->thinkingSwitch && !bundled->reasoningEffort);  // its plain template has neither

        for (const bool thinking : {true, false}) {
            EngineSettings settings = m_settings;
            settings.maxReplyTokens = 8;
            settings.kv.prefix_cache = false;
            if (!thinking) settings.thinking.enabled = false;
            EngineJob * job = host.chat({.conversationId = 1, .userText = QStringLiteral("Once upon a time"), .settings = settings});
            QSignalSpy finished(job, &EngineJob::finished);
            QSignalSpy failed(job, &EngineJob::failed);
            QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, kEventuallyMs);
            QVERIFY(failed.isEmpty());
            const JobResult result = finished.first().at(0).value<JobResult>();
            QCOMPARE(result.thinking.isEmpty(), !thinking);
            QCOMPARE(result.text.isEmpty(), thinking);
        }
    }

    void settingsAreAppliedAtTheNextTurn() {
        EngineSettings s = m_settings;
        s.contextTokens = 256;
        QVERIFY(m_engine.measure(withDocument(QStringLiteral("short")), s).ok());
        QCOMPARE(m_engine.snapshot().contextLimit, 256u);
        s.contextTokens = 100000;  // beyond the trained 2048
        auto m = m_engine.measure(withDocument(QStringLiteral("short")), s);
        QVERIFY(!m.ok());
        QVERIFY2(QString::fromStdString(m.status().message()).contains(QStringLiteral("2048")), m.status().message().c_str());
    }

    void summarizeTheWholeDocument() {
        SummarizeRequest request{.title = QStringLiteral("stories.txt"), .text = m_text.left(1200), .settings = m_settings};
        request.settings.summaryTokens = 32;
        int progress = 0;
        auto r = m_engine.summarize(request, [&](const SummaryProgress &) { ++progress; }, {}, {});
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->method, SummaryMethod::map_reduce);
        QVERIFY(progress > 0);
    }

    // A long prefill of a real model on the engine thread (about 1400 tokens in chunks of 16);
    // the GUI thread's 5 ms timer keeps firing while it runs. The worst gap is reported, not
    // asserted; what is asserted is that the loop ran between the engine's progress reports.
    void guiEventLoopDuringARealPrefill() {
        EngineHost host([] { return std::make_unique<LlmEngine>(); });
        QSignalSpy loaded(host.loadModel({.path = lr::test::shared_path(QStringLiteral("models/tiny/tiny-llama-f32.gguf")), .threads = 1}),
                          &EngineJob::finished);
        QVERIFY(loaded.wait(kEventuallyMs));
        EngineSettings s = m_settings;
        s.contextTokens = 2048;
        s.chunkTokens = 16;
        s.kv.prefix_cache = false;  // computed, not restored
        PrefillRequest request{.conversationId = 1, .context = withDocument(m_text.left(2800)), .settings = s};

        QTimer ticker;
        ticker.setInterval(5);
        int ticksDuringPrefill = 0;
        int reports = 0;
        bool prefilling = false;
        qint64 worstGapMs = 0;
        QElapsedTimer sinceTick, total;
        connect(&ticker, &QTimer::timeout, this, [&] {
            if (prefilling) {
                ++ticksDuringPrefill;
                worstGapMs = std::max(worstGapMs, sinceTick.elapsed());
            }
            sinceTick.restart();
        });
        ticker.start();
        sinceTick.start();
        total.start();
        EngineJob * job = host.prefill(request);
        QSignalSpy finished(job, &EngineJob::finished);
        QSignalSpy failed(job, &EngineJob::failed);
        connect(job, &EngineJob::progress, this, [&](const JobProgress & p) {
            ++reports;
            prefilling = p.prefill.done < p.prefill.total;
        });
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() == 1, kEventuallyMs);
        ticker.stop();
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(0).value<JobError>().message));
        const JobResult result = finished.last().at(0).value<JobResult>();
        QCOMPARE(result.kind, JobKind::prefill);
        QVERIFY(result.measure.fits);
        qInfo("real prefill of %u tokens in %lld ms (%d progress reports); GUI timer: %d ticks during it, worst gap %lld ms",
              result.measure.promptTokens, total.elapsed(), reports, ticksDuringPrefill, worstGapMs);
        QCOMPARE(reports, int((result.measure.promptTokens + 15) / 16));  // one per chunk
        QVERIFY2(ticksDuringPrefill >= 2, qPrintable(QString::number(ticksDuringPrefill)));
    }
};

QTEST_GUILESS_MAIN(TestLlmEngine)
#include "test_llm_engine.moc"
