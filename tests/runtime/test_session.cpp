// Session and generation on the real stories260K model: 200 greedy tokens as llama.cpp
// produced them, chunked prefill equal to one-batch prefill, sync/truncate, context limits
// and stopping.
#include <QtTest>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/generator.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

class TestSession : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;

    std::unique_ptr<Session> new_session(SessionConfig config = {}) {
        auto s = Session::create(model_, config);
        if (!s.ok()) qFatal("%s", s.status().message().c_str());
        return std::move(s).value();
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        model_ = *m;
    }

    void greedy200MatchesLlamaCpp() {
        const QJsonObject ref = read_json(shared_path("reference/stories260K/stories260K_greedy200.json"));
        const std::vector<int32_t> prompt = to_ints(ref["prompt_tokens"].toArray());
        const std::vector<int32_t> expected = to_ints(ref["generated_tokens"].toArray());
        QCOMPARE(expected.size(), size_t(200));
        QCOMPARE(model_->tokenizer().encode("Once upon a time", true, false), prompt);

        auto session = new_session({.chunk_tokens = 4});
        QVERIFY(session->append(prompt).ok());
        GenerateParams params{.max_tokens = 200, .sampler = {.temperature = 0}};
        std::string streamed;
        auto result = generate(*session, params, [&](int32_t, std::string_view text) {
            streamed += text;
            return true;
        });
        QVERIFY2(result.ok(), result.status().message().c_str());
        QCOMPARE(result->tokens, expected);
        QCOMPARE(result->reason, StopReason::max_tokens);
        QCOMPARE(streamed, result->text);
        QFile text_file(shared_path("reference/stories260K/greedy200.txt"));
        QVERIFY(text_file.open(QIODevice::ReadOnly));
        const QString reference_text = QString::fromUtf8(text_file.readAll()).trimmed();
        QVERIFY2(reference_text.endsWith(QString::fromStdString(result->text).trimmed()),
                 qPrintable("generated: " + QString::fromStdString(result->text)));
    }

    void chunkedPrefillEqualsOneBatch_data() {
        QTest::addColumn<uint32_t>("chunk");
        QTest::newRow("1") << 1u;
        QTest::newRow("7") << 7u;
        QTest::newRow("256") << 256u;
    }
    void chunkedPrefillEqualsOneBatch() {
        QFETCH(uint32_t, chunk);
        const std::vector<int32_t> tokens =
            model_->tokenizer().encode("Lily and Tom went to the park. They saw a big dog and a little cat. The cat was sad.", true, false);
        auto whole = new_session({.chunk_tokens = 512});
        QVERIFY(whole->append(tokens).ok());
        auto chunked = new_session({.chunk_tokens = chunk});
        int calls = 0;
        uint32_t last_done = 0;
        QVERIFY(chunked
                    ->append(tokens,
                             [&](const PrefillProgress & p) {
                                 ++calls;
                                 QVERIFY(p.n_done > last_done);
                                 last_done = p.n_done;
                                 QCOMPARE(p.n_total, uint32_t(tokens.size()));
                             })
                    .ok());
        QCOMPARE(calls, int((tokens.size() + chunk - 1) / chunk));
        QCOMPARE(last_done, uint32_t(tokens.size()));
        // Chunking changes the matmul order (gemm vs gemv): near, not bit-identical.
        const auto a = whole->logits(), b = chunked->logits();
        QCOMPARE(a.size(), b.size());
        float max_diff = 0;
        for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
        QVERIFY2(max_diff < 5e-3f, qPrintable(QString::number(max_diff)));
        QCOMPARE(argmax(a, a.size()), argmax(b, b.size()));
    }

    void syncKeepsTheCommonPrefix() {
        auto session = new_session();
        const std::vector<int32_t> a = model_->tokenizer().encode("Once upon a time there was a cat", true, false);
        const std::vector<int32_t> b = model_->tokenizer().encode("Once upon a time there was a dog", true, false);
        QVERIFY(session->sync(a).ok());
        QCOMPARE(session->tokens(), a);
        int evaluated = 0;
        QVERIFY(session->sync(b, [&](const PrefillProgress & p) { evaluated = int(p.n_total); }).ok());
        QCOMPARE(session->tokens(), b);
        size_t common = 0;
        while (a[common] == b[common]) ++common;
        QCOMPARE(evaluated, int(b.size() - common));
        // Same logits as a fresh session.
        auto fresh = new_session();
        QVERIFY(fresh->append(b).ok());
        QCOMPARE(argmax(session->logits(), session->logits().size()), argmax(fresh->logits(), fresh->logits().size()));
        // Syncing to the same tokens re-evaluates only the last one, so logits stay valid.
        QVERIFY(session->sync(b, [&](const PrefillProgress & p) { evaluated = int(p.n_total); }).ok());
        QCOMPARE(evaluated, 1);
    }

    void contextFullIsRefusedWithoutChange() {
        auto session = new_session({.n_ctx = 16});
        const std::vector<int32_t> ten(10, 300);
        QVERIFY(session->append(ten).ok());
        Status s = session->append(ten);
        QCOMPARE(s.code(), StatusCode::context_full);
        QVERIFY(QString::fromStdString(s.message()).contains("16"));
        QCOMPARE(session->tokens().size(), size_t(10));
        // Generation stops at the limit instead of truncating.
        auto result = generate(*session, {.max_tokens = 100, .sampler = {.temperature = 0}}, {});
        QVERIFY(result.ok());
        QCOMPARE(result->reason, StopReason::context_full);
        QCOMPARE(session->tokens().size(), size_t(16));
    }

    void contextLargerThanTrainedIsRefused() {
        auto s = Session::create(model_, {.n_ctx = 4096});
        QCOMPARE(s.status().code(), StatusCode::invalid_argument);
        QVERIFY(QString::fromStdString(s.status().message()).contains("2048"));
    }

    // The streaming policy re-rotates cached keys with one rope; families whose keys it
    // cannot move (YaRN, LongRoPE, sliding layers with their own rope) are refused up front.
    void streamingRefusedWhereKeysCannotMove_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("refused");
        QTest::newRow("qwen3") << "tiny-qwen3-f32" << false;
        QTest::newRow("mistral3-yarn") << "tiny-mistral3-f32" << true;
        QTest::newRow("phi3-longrope") << "tiny-phi3-f32" << true;
        QTest::newRow("gemma3-sliding-rope") << "tiny-gemma3-f32" << true;
    }
    void streamingRefusedWhereKeysCannotMove() {
        QFETCH(QString, model);
        QFETCH(bool, refused);
        auto m = Model::load(shared_path("models/tiny-2026/" + model + ".gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        SessionConfig config{.n_ctx = 256};
        config.kv.policy = KvPolicy::streaming;
        config.kv.prefix_cache = false;
        auto s = Session::create(*m, config);
        QCOMPARE(!s.ok(), refused);
        if (refused) {
            QCOMPARE(s.status().code(), StatusCode::unsupported);
            QVERIFY(QString::fromStdString(s.status().message()).contains("choose another cache policy"));
        }
    }

    void stopTokenCancelsBetweenChunks() {
        auto session = new_session({.chunk_tokens = 2});
        const std::vector<int32_t> tokens(20, 300);
        std::stop_source stop;
        Status s = session->append(
            tokens,
            [&](const PrefillProgress & p) {
                if (p.n_done >= 6) stop.request_stop();
            },
            stop.get_token());
        QCOMPARE(s.code(), StatusCode::cancelled);
        QCOMPARE(session->tokens().size(), size_t(6));                // finished chunks stay
        QVERIFY(session->append(std::vector<int32_t>(4, 300)).ok());  // and the session is usable
        QCOMPARE(session->tokens().size(), size_t(10));
    }

    void sinkCanStopAndSeededSamplingRepeats() {
        auto run = [&](uint64_t seed) {
            auto session = new_session();
            (void)session->append(model_->tokenizer().encode("Once upon a time", true, false));
            int n = 0;
            auto r = generate(*session, {.max_tokens = 50, .sampler = {.temperature = 1.0f, .seed = seed}},
                              [&](int32_t, std::string_view) { return ++n < 20; });
            return std::move(r).value();
        };
        const GenerateResult a = run(42), b = run(42), c = run(7);
        QCOMPARE(a.reason, StopReason::sink);
        QCOMPARE(a.tokens.size(), size_t(20));
        QCOMPARE(a.tokens, b.tokens);
        QVERIFY(a.tokens != c.tokens);
    }

    void invalidTokensAreAnError() {
        auto session = new_session();
        const std::vector<int32_t> bad{1, 99999};
        Status s = session->append(bad);
        QCOMPARE(s.code(), StatusCode::invalid_argument);
        QVERIFY(session->tokens().empty());
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
