// Continuous batching (SequenceBatch): sequences that come and go while others generate
// get the tokens they get alone; prompts are read in chunks beside decode steps; a shared
// beginning is taken copy-on-write; admission waits or refuses by the reserved KV; a
// cancelled sequence frees its memory; KV blocks lost to a fault are read again.
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/sequence_batch.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

class TestSequenceBatch : public QObject {
    Q_OBJECT
    CpuBackend backend_{{.n_threads = 2}};
    // Quantized weights: a batch gives each sequence exactly its logits alone
    // (test_batched_forward), so greedy tokens compare exactly.
    std::shared_ptr<const Model> model_;

    static SessionConfig config() {
        SessionConfig c{.n_ctx = 512, .chunk_tokens = 32};
        c.kv.prefix_cache = false;
        return c;
    }

    static GenerateParams greedy(int32_t max_tokens) {
        GenerateParams p{.max_tokens = max_tokens};
        p.sampler.temperature = 0;
        return p;
    }

    std::vector<int32_t> alone(const std::vector<int32_t> & prompt, int32_t max_tokens) {
        auto session = Session::create(model_, config());
        if (!session.ok() || !(*session)->append(prompt).ok()) qFatal("session failed");
        auto r = generate(**session, greedy(max_tokens), {});
        if (!r.ok()) qFatal("generate failed");
        return r->tokens;
    }

    std::unique_ptr<SequenceBatch> batch(uint32_t n, SessionConfig c = config()) {
        auto b = SequenceBatch::create(model_, c, n);
        if (!b.ok()) qFatal("%s", b.status().message().c_str());
        return std::move(b).value();
    }

    uint64_t add(SequenceBatch & b, const std::vector<int32_t> & prompt, int32_t max_tokens, std::vector<int32_t> * streamed = nullptr) {
        BatchSequenceRequest r{.prompt = prompt, .params = greedy(max_tokens), .selection = b.config().kv};
        if (streamed) {
            r.sink = [streamed](int32_t token, std::string_view) {
                if (token >= 0) streamed->push_back(token);
                return true;
            };
        }
        auto reservation = b.reserve(r);
        if (!reservation.ok() || !b.fits_now(*reservation)) qFatal("does not fit");
        auto id = b.add(std::move(r), *reservation);
        if (!id.ok()) qFatal("%s", id.status().message().c_str());
        return *id;
    }

private slots:
    void initTestCase() {
        auto m = Model::load(shared_path("models/tiny/tiny-llama-Q4_K_M.gguf").toStdString(), backend_);
        QVERIFY2(m.ok(), m.status().message().c_str());
        model_ = *m;
    }

    void sequencesThatComeAndGoGetTheirTokensAlone() {
        std::mt19937 rng(3);
        const int32_t n_vocab = int32_t(model_->hparams().n_vocab);
        std::vector<std::vector<int32_t>> prompts;
        for (size_t n : {40, 75, 12, 130, 50}) prompts.push_back(random_prompt(rng, n, n_vocab));
        const std::vector<int32_t> limits = {20, 8, 30, 16, 12};
        auto b = batch(3);
        QCOMPARE(b->max_sequences(), 3u);
        std::map<uint64_t, size_t> which;
        std::map<size_t, std::vector<int32_t>> got, streamed;
        size_t next = 0;
        int steps = 0;
        size_t most_running = 0;
        while (got.size() < prompts.size()) {
            // A new sequence joins whenever there is room, between steps of the others.
            if (next < prompts.size() && b->running() < b->max_sequences()) {
                which[add(*b, prompts[next], limits[next], &streamed[next])] = next;
                ++next;
            }
            most_running = std::max(most_running, b->running());
            for (SequenceBatch::Finished & f : b->step()) {
                QVERIFY2(f.result.ok(), f.result.status().message().c_str());
                QCOMPARE(f.result->reason, StopReason::max_tokens);
                got[which.at(f.id)] = f.result->tokens;
            }
            QVERIFY(++steps < 1000);
        }
        QCOMPARE(most_running, size_t(3));
        for (size_t i = 0; i < prompts.size(); ++i) {
            QCOMPARE(got[i], alone(prompts[i], limits[i]));
            QCOMPARE(streamed[i], got[i]);
        }
        // Fewer steps than one sequence after another: the decode steps were shared.
        int sequential_steps = 0;
        for (size_t i = 0; i < prompts.size(); ++i) sequential_steps += int((prompts[i].size() + 31) / 32) + limits[i];
        qInfo("%d steps for what takes %d one at a time", steps, sequential_steps);
        QVERIFY(steps < sequential_steps);
        QCOMPARE(b->running(), size_t(0));
        QCOMPARE(b->reserved_bytes(), uint64_t(0));
        QCOMPARE(b->kv_stats().n_sequences, 0u);
    }

    void aLongPromptDoesNotStallTheStreams() {
        // While a 300-token prompt is read (10 chunks of 32 tokens), the running sequence
        // gets a token at every step.
        std::mt19937 rng(4);
        const int32_t n_vocab = int32_t(model_->hparams().n_vocab);
        auto b = batch(2);
        std::vector<int32_t> streamed;
        add(*b, random_prompt(rng, 10, n_vocab), 40, &streamed);
        b->step();  // its prompt
        add(*b, random_prompt(rng, 300, n_vocab), 4);
        for (int i = 1; i <= 9; ++i) {
            b->step();
            QCOMPARE(streamed.size(), size_t(1 + i));
        }
    }

    void aCommonBeginningIsShared() {
        std::mt19937 rng(5);
        const int32_t n_vocab = int32_t(model_->hparams().n_vocab);
        const std::vector<int32_t> document = random_prompt(rng, 200, n_vocab);
        std::vector<int32_t> first = document, second = document;
        first.insert(first.end(), {10, 11, 12});
        second.insert(second.end(), {20, 21, 22, 23});
        auto b = batch(2);
        std::map<uint64_t, std::vector<int32_t>> got;
        const uint64_t a = add(*b, first, 10);
        for (int i = 0; i < 8; ++i) b->step();  // its prompt read, generating
        const uint64_t c = add(*b, second, 10);
        QVERIFY(b->kv_stats().shared_blocks > 0);
        uint32_t restored = 0;
        while (got.size() < 2) {
            for (SequenceBatch::Finished & f : b->step()) {
                QVERIFY(f.result.ok());
                got[f.id] = f.result->tokens;
                if (f.id == c) restored = f.restored_tokens;
            }
        }
        QCOMPARE(restored, 192u);  // 6 blocks of 32 of the document, taken from the first
        QCOMPARE(got[a], alone(first, 10));
        QCOMPARE(got[c], alone(second, 10));
    }

    void admissionWaitsOrRefuses() {
        // Budgets for two sequences of 256 tokens (about 264 KiB of KV each).
        SessionConfig c = config();
        c.kv.device_mib = 0.4;
        c.kv.host_mib = 0.2;
        c.kv.disk_mib = 0.001;
        auto b = batch(4, c);
        std::mt19937 rng(6);
        BatchSequenceRequest r{.prompt = random_prompt(rng, 200, int32_t(model_->hparams().n_vocab)),
                               .params = greedy(56),
                               .selection = c.kv};
        auto reservation = b->reserve(r);
        QVERIFY2(reservation.ok(), reservation.status().message().c_str());
        qInfo("%llu bytes reserved of %llu", (unsigned long long)*reservation, (unsigned long long)b->capacity_bytes());
        int admitted = 0;
        while (b->fits_now(*reservation)) {
            QVERIFY(b->add(r, *reservation).ok());
            ++admitted;
        }
        QCOMPARE(admitted, 2);
        // The others run to their end: nothing fails for want of memory.
        while (b->running() > 0) {
            for (SequenceBatch::Finished & f : b->step()) QVERIFY2(f.result.ok(), f.result.status().message().c_str());
        }
        QVERIFY(b->fits_now(*reservation));
        // One that could never fit is refused, saying what to change: here a request without
        // the policy the server's budgets were planned for.
        BatchSequenceRequest huge = r;
        huge.params.max_tokens = 0;  // the whole context
        huge.prompt.resize(500, 7);
        c.kv.device_mib = 0.1;
        c.kv.policy = KvPolicy::h2o;
        auto small = batch(4, c);
        const Result<uint64_t> refused = small->reserve(huge);
        QCOMPARE(refused.status().code(), StatusCode::out_of_memory);
        QVERIFY2(QString::fromStdString(refused.status().message()).contains("cache policy"), refused.status().message().c_str());
        // So is a prompt longer than the context, and an empty one.
        huge.prompt.resize(600, 7);
        QCOMPARE(b->reserve(huge).status().code(), StatusCode::context_full);
        huge.prompt.clear();
        QCOMPARE(b->reserve(huge).status().code(), StatusCode::invalid_argument);
    }

    void aCancelledSequenceFreesItsMemory() {
        std::mt19937 rng(7);
        auto b = batch(2);
        const uint64_t id = add(*b, random_prompt(rng, 100, int32_t(model_->hparams().n_vocab)), 50);
        for (int i = 0; i < 5; ++i) b->step();
        QVERIFY(b->kv_stats().tiers[0].used_bytes > 0);
        b->cancel(id);
        const std::vector<SequenceBatch::Finished> done = b->step();
        QCOMPARE(done.size(), size_t(1));
        QCOMPARE(done[0].result->reason, StopReason::cancelled);
        QCOMPARE(b->running(), size_t(0));
        QCOMPARE(b->kv_stats().tiers[0].used_bytes, uint64_t(0));
        QCOMPARE(b->kv_cache().pinned_blocks(), size_t(0));
    }

    void lostBlocksAreReadAgain() {
        // The prefix cache's files lose their bytes after a first run: a sequence that
        // restores its prompt from them finds its blocks gone mid-step, reads them again and
        // still gets its tokens alone; the sequence beside it never notices.
        std::mt19937 rng(11);
        const int32_t n_vocab = int32_t(model_->hparams().n_vocab);
        const std::vector<int32_t> document = random_prompt(rng, 96, n_vocab);
        std::vector<int32_t> question = document;
        for (int32_t t : random_prompt(rng, 9, n_vocab)) question.push_back(t);
        const std::vector<int32_t> other = random_prompt(rng, 40, n_vocab);
        QTemporaryDir dir;
        SessionConfig c = config();
        c.kv.prefix_cache = true;
        c.kv.dir = dir.path().toStdString();
        c.kv.block_tokens = 16;
        {
            auto first = Session::create(model_, c);
            QVERIFY(first.ok() && (*first)->append(document).ok());
            (*first)->kv_cache().flush();
        }
        int emptied = 0;
        for (const QFileInfo & fi : QDir(dir.path()).entryInfoList({"*.dat", "*.bin", "*.kv"}, QDir::Files)) {
            QFile f(fi.filePath());
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.resize(0));
            ++emptied;
        }
        QVERIFY(emptied > 0);

        auto b = batch(2, c);
        std::vector<int32_t> streamed_question, streamed_other;
        const uint64_t asked = add(*b, question, 12, &streamed_question);
        const uint64_t beside = add(*b, other, 12, &streamed_other);
        std::map<uint64_t, SequenceBatch::Finished> finished;
        while (b->running() > 0) {
            for (SequenceBatch::Finished & f : b->step()) finished.emplace(f.id, std::move(f));
        }
        QVERIFY2(finished.at(asked).result.ok(), finished.at(asked).result.status().message().c_str());
        QVERIFY2(finished.at(beside).result.ok(), finished.at(beside).result.status().message().c_str());
        QVERIFY(finished.at(asked).restored_tokens > 0);
        QVERIFY(b->kv_stats().faults > 0);
        QCOMPARE(streamed_question, alone(question, 12));
        QCOMPARE(streamed_other, alone(other, 12));
        QCOMPARE(b->kv_cache().pinned_blocks(), size_t(0));
    }
};

QTEST_GUILESS_MAIN(TestSequenceBatch)
#include "test_sequence_batch.moc"
