// Session and generation on the real stories260K model: 200 greedy tokens as llama.cpp
// produced them, chunked prefill equal to one-batch prefill, sync/truncate, context limits
// and stopping; on the tiny hybrids, edits that recompute at most one snapshot interval.
#include <QtTest>

#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/generator.h"
#include "support/reference_data.h"
#include "support/session_run.h"

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

    // A tiny hybrid (tiny-qwen35*: three Gated DeltaNet layers, one full attention) in a
    // session of 32-token chunks, without a prefix cache.
    std::unique_ptr<Session> hybrid_session(const QString & name) {
        auto m = Model::load(shared_path("models/tiny-2026/" + name + ".gguf").toStdString(), backend_);
        if (!m.ok()) qFatal("%s", m.status().message().c_str());
        SessionConfig config{.n_ctx = 1024, .chunk_tokens = 32};
        config.kv.prefix_cache = false;
        auto s = Session::create(*m, config);
        if (!s.ok()) qFatal("%s", s.status().message().c_str());
        return std::move(s).value();
    }

    // Syncs `session` to `tokens`: the tokens it evaluated, and how far its logits are from a
    // fresh session's on the same tokens.
    struct Synced {
        uint32_t computed = 0;
        float max_diff = 0;
    };
    Synced sync_against_fresh(Session & session, const QString & name, const std::vector<int32_t> & tokens) {
        Synced r;
        if (!session.sync(tokens, [&](const PrefillProgress & p) { r.computed = p.n_total; }).ok()) qFatal("sync failed");
        auto fresh = hybrid_session(name);
        if (!fresh->sync(tokens).ok()) qFatal("sync failed");
        r.max_diff = max_abs_diff(session.logits().data(), std::vector<float>(fresh->logits().begin(), fresh->logits().end()));
        return r;
    }

    static void hybrid_rows() {
        QTest::addColumn<QString>("name");
        QTest::newRow("qwen35") << "tiny-qwen35-f32";
        QTest::newRow("qwen35moe") << "tiny-qwen35moe-f32";
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

    // ---- Hybrids: rolling back to snapshots of the recurrent states ------------------------

    void aHybridEditRecomputesAtMostOneInterval_data() { hybrid_rows(); }
    void aHybridEditRecomputesAtMostOneInterval() {
        // Generate, cut at random positions, continue: the logits are a fresh session's on
        // the edited tokens (within 1e-5: the ubatches split elsewhere than a fresh run's, so
        // the delta rule's chunks round differently), and the old tokens recomputed are
        // those after the latest snapshot before the cut.
        QFETCH(QString, name);
        auto session = hybrid_session(name);
        std::mt19937 rng(21);
        std::vector<int32_t> held = random_prompt(rng, 500, int32_t(session->model().hparams().n_vocab));
        QVERIFY(session->sync(held).ok());
        for (int i = 0; i < 8; ++i) {
            held.push_back(argmax(session->logits(), session->logits().size()));
            QVERIFY(session->append(std::span(&held.back(), 1)).ok());
        }
        const uint32_t interval = session->kv_cache().snapshot_interval();
        QCOMPARE(interval, 128u);
        float worst = 0;
        for (int trial = 0; trial < 5; ++trial) {
            std::vector<int32_t> edited(held.begin(), held.begin() + 1 + rng() % (held.size() - 1));
            edited.insert(edited.end(), {7, 8, 9});
            size_t common = 0;
            while (common < session->tokens().size() && session->tokens()[common] == edited[common]) ++common;
            const Synced r = sync_against_fresh(*session, name, edited);
            const uint32_t recomputed = r.computed - uint32_t(edited.size() - common);
            QVERIFY2(recomputed <= interval, qPrintable(QString("%1 old tokens recomputed").arg(recomputed)));
            worst = std::max(worst, r.max_diff);
        }
        qInfo("max |d| against fresh sessions: %g", double(worst));
        QVERIFY(worst < 1e-5f);
    }

    void aHybridNewTurnRecomputesNoOldToken_data() { hybrid_rows(); }
    void aHybridNewTurnRecomputesNoOldToken() {
        // The prompt's end is a snapshot (kept while the reply crosses the interval at 384):
        // regenerating the reply returns there and computes nothing; a new turn after
        // another reply computes only its own tokens.
        QFETCH(QString, name);
        auto session = hybrid_session(name);
        std::mt19937 rng(22);
        const std::vector<int32_t> prompt = random_prompt(rng, 380, int32_t(session->model().hparams().n_vocab));
        QVERIFY(session->sync(prompt).ok());
        const std::vector<float> after_prompt(session->logits().begin(), session->logits().end());
        auto reply = [&] {
            for (int i = 0; i < 6; ++i) {
                const int32_t next = argmax(session->logits(), session->logits().size());
                QVERIFY(session->append(std::span(&next, 1)).ok());
            }
        };
        reply();
        uint32_t computed = 0;
        QVERIFY(session->sync(prompt, [&](const PrefillProgress & p) { computed = p.n_total; }).ok());
        QCOMPARE(computed, 0u);
        QCOMPARE(session->tokens().size(), prompt.size());
        QCOMPARE(std::vector<float>(session->logits().begin(), session->logits().end()), after_prompt);
        reply();
        std::vector<int32_t> turn = prompt;
        turn.insert(turn.end(), {3, 4, 5, 6, 20, 21, 22, 23, 24, 25});  // another reply, then the user
        const Synced r = sync_against_fresh(*session, name, turn);
        QCOMPARE(r.computed, uint32_t(turn.size() - prompt.size()));
        qInfo("max |d| against a fresh session: %g", double(r.max_diff));
        QVERIFY(r.max_diff < 1e-5f);
        const KvLayerKindStats recurrent = kind_row(session->kv_stats(), KvLayerKind::recurrent);
        QCOMPARE(recurrent.snapshots, uint64_t(390 / 128 + 1));  // the intervals and the turn's end
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
