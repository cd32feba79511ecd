// The automatic prefill chunk (--chunk auto, SessionOptions::chunk_tokens = kAutoChunk): the
// chunk each prompt length resolves to and its bounds, and a session reading a prompt with
// it computes exactly what a session with that fixed chunk computes (the cache is lossless
// under policy none), within the bounds of a one-batch prefill.
#include <QtTest>

#include <cstring>
#include <random>

#include "engine/api/prefill_chunk.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

class TestPrefillChunk : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    std::shared_ptr<const Model> model_;

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        model_ = *m;
    }

    // max(64, length / 16), at most what a quarter of a second reads at the measured rate
    // (in steps of 32), at most 512; before any measurement, the floor.
    void theChunkFollowsTheLengthAndTheRate_data() {
        QTest::addColumn<uint32_t>("length");
        QTest::addColumn<double>("rate");
        QTest::addColumn<uint32_t>("chunk");
        QTest::newRow("one token") << 1u << 0.0 << 64u;
        QTest::newRow("not measured yet: the floor") << 100000u << 0.0 << 64u;
        QTest::newRow("short: the floor") << 300u << 1e6 << 64u;
        QTest::newRow("length / 16 under the rate's bound") << 1600u << 10000.0 << 100u;
        QTest::newRow("a fast machine, long prompt: 512") << 1000000u << 10000.0 << 512u;
        QTest::newRow("1000 tok/s: 250 -> 224") << 8000u << 1000.0 << 224u;
        QTest::newRow("a slow machine: the floor") << 8000u << 85.0 << 64u;
        QTest::newRow("exactly 512 in time") << 100000u << 2048.0 << 512u;
    }
    void theChunkFollowsTheLengthAndTheRate() {
        QFETCH(uint32_t, length);
        QFETCH(double, rate);
        QFETCH(uint32_t, chunk);
        QCOMPARE(prefill_chunk(kAutoChunk, length, rate), chunk);
        QCOMPARE(prefill_chunk(96, length, rate), 96u);  // a fixed chunk stays fixed
    }

    void theBounds() {
        const AutoChunkBounds b = auto_chunk_bounds();
        QCOMPARE(b.min_tokens, 64u);   // the starting design's max(64, length / 16)
        QCOMPARE(b.max_tokens, 512u);  // llama.cpp's ubatch
        QCOMPARE(b.seconds, 0.25);
        QCOMPARE(chunk_capacity(kAutoChunk), b.max_tokens);
        QCOMPARE(chunk_capacity(32), 32u);
    }

    // A session measures its rate on the chunks it reads: the first chunk is the floor, the
    // later ones what the rate allows, never past length / 16 (how far they grow depends on
    // the machine's speed, which a test does not assume).
    void aSessionsChunksGrowWithTheMeasuredRate() {
        std::mt19937 rng(5);
        const std::vector<int32_t> prompt = random_prompt(rng, 1600, int32_t(model_->hparams().n_vocab));
        SessionConfig automatic{.n_ctx = 2048, .chunk_tokens = kAutoChunk};
        automatic.kv.prefix_cache = false;
        auto a = std::move(Session::create(model_, automatic)).value();
        std::vector<uint32_t> done;
        QVERIFY(a->append(prompt, [&](const PrefillProgress & p) { done.push_back(p.n_done); }).ok());
        QVERIFY(done.size() >= 2);
        QCOMPARE(done[0], 64u);  // nothing measured yet
        for (size_t i = 1; i + 1 < done.size(); ++i) {
            const uint32_t chunk = done[i] - done[i - 1];
            QVERIFY2(chunk == 64 || chunk == 96 || chunk == 100, qPrintable(QString::number(chunk)));
        }
        QCOMPARE(done.back(), uint32_t(prompt.size()));
    }

    void autoReadsAsTheFixedChunkItResolvesTo() {
        std::mt19937 rng(3);
        const std::vector<int32_t> prompt = random_prompt(rng, 300, int32_t(model_->hparams().n_vocab));
        const uint32_t chunk = prefill_chunk(kAutoChunk, uint32_t(prompt.size()));
        SessionConfig automatic{.n_ctx = 512, .chunk_tokens = kAutoChunk};
        automatic.kv.prefix_cache = false;
        SessionConfig fixed = automatic;
        fixed.chunk_tokens = chunk;
        SessionConfig whole = automatic;
        whole.chunk_tokens = 512;

        auto a = std::move(Session::create(model_, automatic)).value();
        int calls = 0;
        QVERIFY(a->append(prompt, [&](const PrefillProgress &) { ++calls; }).ok());
        QCOMPARE(calls, int((prompt.size() + chunk - 1) / chunk));
        const SessionRun f = run_session(model_, prompt, 0, fixed);
        QVERIFY(f.status.ok());
        QCOMPARE(a->logits().size(), f.logits[0].size());
        QVERIFY(std::memcmp(a->logits().data(), f.logits[0].data(), f.logits[0].size() * sizeof(float)) == 0);
        // Chunking changes the matmul order (gemm vs gemv): near a one-batch prefill.
        const SessionRun w = run_session(model_, prompt, 0, whole);
        QVERIFY(w.status.ok());
        QVERIFY(max_abs_diff(a->logits().data(), w.logits[0]) < 5e-3f);
        // Decoding after it and a second prompt read with its own length's chunk.
        const int32_t next = 100;
        QVERIFY(a->append(std::span(&next, 1)).ok());
        QVERIFY(a->append(std::span(prompt).first(100)).ok());
        QCOMPARE(a->tokens().size(), size_t(401));
    }

    void theSettingIsChecked() {
        const ModelHParams & hp = model_->hparams();
        QVERIFY(validate(SessionConfig{.chunk_tokens = kAutoChunk}, hp).ok());
        const Status st = validate(SessionConfig{.chunk_tokens = 8193}, hp);
        QCOMPARE(st.code(), StatusCode::invalid_argument);
        QVERIFY2(st.message().find("1 to 8192 tokens, or automatic") != std::string::npos, st.message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestPrefillChunk)
#include "test_prefill_chunk.moc"
