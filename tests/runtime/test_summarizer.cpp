// The summarizer on the real stories260K model (trained context 512): one pass when the
// text fits, map-reduce over chunks when it does not, nothing dropped when cutting, stop
// between and inside passes, and a clear error when the context is too small.
#include <QtTest>

#include <set>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/summarizer.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

class TestSummarizer : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;
    std::string long_text_;    // 9 KB, about 4600 tokens
    std::string medium_text_;  // its first paragraphs, about 1200 tokens: map-reduce at 512, quickly

    std::unique_ptr<Session> new_session(uint32_t n_ctx) {
        auto s = Session::create(model_, {.n_ctx = n_ctx, .chunk_tokens = 64});
        if (!s.ok()) qFatal("%s", s.status().message().c_str());
        return std::move(s).value();
    }
    uint32_t count(std::string_view text) const { return uint32_t(model_->tokenizer().encode(text, false, false).size()); }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        model_ = *m;
        QFile f(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        long_text_ = f.readAll().toStdString();
        QVERIFY(long_text_.size() > 5000);
        medium_text_ = long_text_.substr(0, long_text_.find("\n\n", 2400));
    }

    void splitKeepsEveryByteAndRespectsTheLimit_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<uint32_t>("maxTokens");
        QTest::newRow("paragraphs 200") << "eval" << 200u;
        QTest::newRow("paragraphs 40") << "eval" << 40u;
        QTest::newRow("one long sentence") << "sentence" << 30u;
        QTest::newRow("no spaces") << "nospace" << 25u;
        QTest::newRow("multi-byte UTF-8") << "utf8" << 12u;
        QTest::newRow("fits whole") << "short" << 100u;
    }
    void splitKeepsEveryByteAndRespectsTheLimit() {
        QFETCH(QString, kind);
        QFETCH(uint32_t, maxTokens);
        std::string text;
        if (kind == "eval") text = long_text_;
        if (kind == "sentence")
            for (int i = 0; i < 60; ++i) text += "the little dog ran to the park and ";
        if (kind == "nospace") text = std::string(700, 'x') + "yz";
        if (kind == "utf8")
            for (int i = 0; i < 80; ++i) text += "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC\xF0\x9F\x98\x80";
        if (kind == "short") text = "Lily saw a cat.";
        const auto counter = [this](std::string_view t) { return count(t); };
        const std::vector<std::string_view> chunks = split_text(text, maxTokens, counter);
        std::string joined;
        for (std::string_view c : chunks) {
            QVERIFY(!c.empty());
            QVERIFY2(count(c) <= maxTokens, qPrintable(QString("chunk of %1 tokens").arg(count(c))));
            joined += c;
        }
        QCOMPARE(joined, text);
        if (kind == "short") QCOMPARE(chunks.size(), size_t(1));
        if (kind != "short") QVERIFY(chunks.size() > 1);
    }

    void planChoosesTheMethod_data() {
        QTest::addColumn<bool>("longText");
        QTest::addColumn<uint32_t>("nCtx");
        QTest::addColumn<int>("method");
        QTest::newRow("short text fits 512") << false << 512u << int(SummaryMethod::one_pass);
        QTest::newRow("9 KB in 512") << true << 512u << int(SummaryMethod::map_reduce);
    }
    void planChoosesTheMethod() {
        QFETCH(bool, longText);
        QFETCH(uint32_t, nCtx);
        QFETCH(int, method);
        const std::string text = longText ? long_text_ : "Lily and Tom went to the park. They saw a big dog.";
        auto plan = plan_summary(*model_, nCtx, text, {});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        QCOMPARE(int(plan->method), method);
        QCOMPARE(plan->document_tokens, count(text));
        QVERIFY(plan->answer_tokens >= 16 && plan->answer_tokens <= nCtx / 4);
        if (plan->method == SummaryMethod::map_reduce) {
            QVERIFY(plan->n_chunks > 1);
            QVERIFY(uint64_t(plan->n_chunks) * plan->chunk_tokens >= plan->document_tokens);
        } else {
            QVERIFY(plan->prompt_tokens + plan->answer_tokens <= nCtx);
        }
    }

    void onePassStreamsTheSummary() {
        auto session = new_session(512);
        std::string streamed;
        int reports = 0;
        auto r = summarize(
            *session, "Lily and Tom went to the park. They saw a big dog and a little cat.",
            {.title = "park.txt", .sampler = {.temperature = 0}},
            [&](const SummaryProgress & p) {
                ++reports;
                QCOMPARE(p.method, SummaryMethod::one_pass);
                QCOMPARE(p.passes_total, 1u);
            },
            [&](int32_t, std::string_view piece) {
                streamed += piece;
                return true;
            });
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->method, SummaryMethod::one_pass);
        QCOMPARE(r->n_passes, 1u);
        QCOMPARE(r->n_chunks, 1u);
        QCOMPARE(r->n_levels, 0u);
        QCOMPARE(streamed, r->text);
        QVERIFY(reports > 0);
        QVERIFY(QString::fromStdString(r->describe()).startsWith("one pass over"));
    }

    void mapReduceReadsEveryChunk() {
        auto session = new_session(512);
        std::string streamed;
        uint32_t last_done = 0;
        std::set<uint32_t> map_chunks_seen;
        auto r = summarize(
            *session, medium_text_, {.title = "stories.txt", .answer_tokens = 48, .sampler = {.temperature = 0}},
            [&](const SummaryProgress & p) {
                QCOMPARE(p.method, SummaryMethod::map_reduce);
                QVERIFY(p.passes_done >= last_done);
                QVERIFY(p.passes_done <= p.passes_total);
                last_done = p.passes_done;
                if (p.stage == SummaryStage::map) map_chunks_seen.insert(p.index);
            },
            [&](int32_t, std::string_view piece) {
                streamed += piece;
                return true;
            });
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->method, SummaryMethod::map_reduce);
        QVERIFY(r->n_chunks > 1);
        QVERIFY(r->n_levels >= 1);
        QCOMPARE(r->chunk_summaries.size(), size_t(r->n_chunks));
        QCOMPARE(map_chunks_seen.size(), size_t(r->n_chunks));
        QVERIFY(r->n_passes > r->n_chunks);
        QCOMPARE(last_done + 1, r->n_passes);  // the last report comes before the final pass ends
        QCOMPARE(streamed, r->text);           // only the final pass is streamed
        QVERIFY(QString::fromStdString(r->describe()).contains("chunks"));
        qInfo("map-reduce of %u tokens: %s", r->document_tokens, r->describe().c_str());
    }

    void stopsBetweenAndInsidePasses_data() {
        QTest::addColumn<int>("stopAfterReports");
        QTest::newRow("at once") << 0;
        QTest::newRow("during the first map pass") << 3;
        QTest::newRow("later") << 40;
    }
    void stopsBetweenAndInsidePasses() {
        QFETCH(int, stopAfterReports);
        auto session = new_session(512);
        std::stop_source stop;
        if (stopAfterReports == 0) stop.request_stop();
        int reports = 0;
        auto r = summarize(
            *session, medium_text_, {.answer_tokens = 48, .sampler = {.temperature = 0}},
            [&](const SummaryProgress &) {
                if (++reports == stopAfterReports) stop.request_stop();
            },
            {}, stop.get_token());
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->reason, StopReason::cancelled);
        QCOMPARE(r->method, SummaryMethod::map_reduce);
        QVERIFY(r->chunk_summaries.size() < r->n_chunks);
    }

    void tooSmallAContextIsAClearError() {
        auto session = new_session(64);
        auto r = summarize(*session, long_text_, {});
        QVERIFY(!r.ok());
        QCOMPARE(r.status().code(), StatusCode::context_full);
        QVERIFY2(QString::fromStdString(r.status().message()).contains("too small"), r.status().message().c_str());
    }

    void invalidParamsNameTheSetting() {
        auto session = new_session(512);
        auto r = summarize(*session, "text", {.answer_tokens = 2});
        QVERIFY(!r.ok());
        QVERIFY(QString::fromStdString(r.status().message()).contains("summary length"));
    }
};

QTEST_GUILESS_MAIN(TestSummarizer)
#include "test_summarizer.moc"
