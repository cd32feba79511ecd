// The tiered KV cache against the all-in-RAM cache, its oracle: whatever the budgets, the
// block sizes and the faults, logits are bit-identical; and the prefix cache restores a
// prompt across sessions (and processes) without changing a bit.
#include <QtTest>

#include <cstring>
#include <random>
#include <thread>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/session.h"
#include "support/faulty_file_io.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

class TestKvTiers : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};
    std::map<QString, std::shared_ptr<const Model>> models_;
    QTemporaryDir dir_;

    std::shared_ptr<const Model> model(const QString & name) {
        auto & m = models_[name];
        if (!m) {
            auto loaded = Model::load(shared_path(name).toStdString(), backend_);
            if (!loaded.ok()) qFatal("%s", loaded.status().message().c_str());
            m = *loaded;
        }
        return m;
    }

    // A 256-token session whose prefix cache lives in its own directory `name`.
    SessionConfig restoring_config(const QString & name) const {
        SessionConfig c{.n_ctx = 256, .chunk_tokens = 64};
        c.kv.dir = (dir_.path() + "/" + name).toStdString();
        c.kv.disk_mib = 64;
        return c;
    }

    SessionConfig all_in_ram(uint32_t n_ctx, uint32_t chunk, uint32_t bt) {
        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = chunk};
        c.kv.block_tokens = bt;
        c.kv.prefix_cache = false;
        c.kv.dir = (dir_.path() + "/ram").toStdString();
        c.kv.disk_mib = 0.001;  // no room: nothing spills
        return c;
    }

private slots:
    // Random budgets, block sizes, chunks and prompts: blocks are forced through the host
    // and disk tiers, and every logit stays bit-identical to the all-in-RAM cache.
    void tieredEqualsAllInRam_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("seed");
        for (int seed = 1; seed <= 5; ++seed) {
            QTest::newRow(qPrintable(QString("stories-%1").arg(seed))) << "models/stories260K.gguf" << seed;
            QTest::newRow(qPrintable(QString("tiny-q8-%1").arg(seed))) << "models/tiny/tiny-llama-Q8_0.gguf" << seed;
        }
        QTest::newRow("qwen2-f32") << "models/tiny/tiny-qwen2-f32.gguf" << 11;
    }
    void tieredEqualsAllInRam() {
        QFETCH(QString, model);
        QFETCH(int, seed);
        auto m = this->model(model);
        std::mt19937 rng{uint32_t(seed)};
        const uint32_t bt = std::array{4u, 8u, 16u, 32u}[rng() % 4];
        const uint32_t chunk = 5 + rng() % 60;
        const std::vector<int32_t> prompt = random_prompt(rng, 60 + rng() % 200, int32_t(m->hparams().n_vocab));
        const int steps = 6;
        const uint32_t n_ctx = uint32_t(prompt.size()) + steps + 1;

        const SessionRun reference = run_session(m, prompt, steps, all_in_ram(n_ctx, chunk, bt));
        QVERIFY2(reference.status.ok(), reference.status.message().c_str());

        SessionConfig tiered{.n_ctx = n_ctx, .chunk_tokens = chunk};
        tiered.kv.block_tokens = bt;
        tiered.kv.prefix_cache = false;
        const double layer = layer_mib(*m, n_ctx, bt);
        const double block = layer_mib(*m, bt, bt);
        // The device holds one to one and a half layers, the host less than a layer (at
        // least two blocks): the rest goes to disk.
        tiered.kv.device_mib = layer * (1.0 + double(rng() % 50) / 100.0);
        tiered.kv.host_mib = std::max(2 * block, layer * (0.3 + double(rng() % 60) / 100.0));
        // Together they hold less than the model's KV (two layers of a tiny model are
        // less than the budgets above): the rest has to go to disk.
        tiered.kv.host_mib = std::max(2 * block, std::min(tiered.kv.host_mib, 0.95 * layer * m->hparams().n_layer - tiered.kv.device_mib));
        tiered.kv.disk_mib = 64;
        tiered.kv.dir = (dir_.path() + "/tiered-" + QString::number(seed)).toStdString();
        const SessionRun r = run_session(m, prompt, steps, tiered);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        QVERIFY2(identical(reference, r), "logits differ from the all-in-RAM cache");

        const KvStats & s = r.stats;
        qInfo("block %u, chunk %u, %zu tokens: hits %llu/%llu, moved %.2f MiB, host in %.2f MiB, disk in %.2f MiB", bt, chunk,
              prompt.size(), (unsigned long long)s.block_hits, (unsigned long long)s.block_reads, double(s.bytes_moved) / (1 << 20),
              double(s.tiers[1].bytes_in) / (1 << 20), double(s.tiers[2].bytes_in) / (1 << 20));
        QVERIFY(s.tiers[1].bytes_in > 0);  // blocks went through RAM
        QVERIFY(s.tiers[2].bytes_in > 0);  // and through disk
        QVERIFY(s.block_hits < s.block_reads);
        QVERIFY(s.tiers[0].used_bytes <= uint64_t(tiered.kv.device_mib * (1 << 20)));
        QCOMPARE(s.faults, uint64_t(0));
    }

    // Per-tier codecs: aged blocks that move down take the lower tier's codec (RAM q8, disk
    // q4), the full-precision window never does, the lower tiers hold fewer bytes per block,
    // and the logits stay close to the all-in-RAM cache's (lossy, unlike placement alone).
    void lowerTiersNarrowAgedBlocks() {
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(91);
        const std::vector<int32_t> prompt = random_prompt(rng, 260, int32_t(m->hparams().n_vocab));
        const uint32_t n_ctx = 280, bt = 16;
        const SessionRun reference = run_session(m, prompt, 8, all_in_ram(n_ctx, 32, bt));
        QVERIFY(reference.status.ok());

        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 32};
        c.kv.block_tokens = bt;
        c.kv.prefix_cache = false;
        c.kv.residual_tokens = 48;
        c.kv.host_bits = 8;
        c.kv.disk_bits = 4;
        c.kv.device_mib = layer_mib(*m, n_ctx, bt) * 1.2;
        c.kv.host_mib = layer_mib(*m, n_ctx, bt) * 0.2;
        c.kv.disk_mib = 64;
        c.kv.dir = (dir_.path() + "/narrowed").toStdString();
        auto session = std::move(Session::create(m, c)).value();
        QVERIFY(session->append(prompt).ok());
        std::vector<std::vector<float>> logits{{session->logits().begin(), session->logits().end()}};
        for (int32_t next : reference.tokens) {  // teacher-forced: the same tokens as the oracle
            QVERIFY(session->append(std::span(&next, 1)).ok());
            logits.emplace_back(session->logits().begin(), session->logits().end());
        }
        const KvStats s = session->kv_stats();
        qInfo("narrowed %llu blocks; host %llu blocks in %.1f KiB, disk %llu blocks in %.1f KiB", (unsigned long long)s.narrowed_blocks,
              (unsigned long long)s.tiers[1].blocks, double(s.tiers[1].used_bytes) / 1024, (unsigned long long)s.tiers[2].blocks,
              double(s.tiers[2].used_bytes) / 1024);
        QVERIFY(s.narrowed_blocks > 0);
        const KvBlockLayout f16{{bt, m->hparams().n_head_kv, m->hparams().head_dim}, KvCodec::f16, KvCodec::f16};
        QVERIFY(s.tiers[1].blocks > 0 && s.tiers[1].used_bytes < s.tiers[1].blocks * f16.block_bytes());
        QVERIFY(s.tiers[2].bytes_in > 0);  // and some went on to disk (the q4 blocks below)
        // Which codecs each block has: narrower only past the window, q4 only via the disk.
        const uint32_t n_tokens = uint32_t(prompt.size() + reference.tokens.size());
        bool saw_q8 = false, saw_q4 = false;
        for (uint32_t il = 0; il < m->hparams().n_layer; ++il) {
            const auto codecs = session->kv_cache().layer_codecs(0, il);
            for (size_t b = 0; b < codecs.size(); ++b) {
                const auto [k, v] = codecs[b];
                QCOMPARE(k, v);
                if ((b + 1) * bt + c.kv.residual_tokens > n_tokens - 8) QCOMPARE(k, KvCodec::f16);  // in the window when it left
                saw_q8 |= k == KvCodec::q8;
                saw_q4 |= k == KvCodec::q4;
            }
        }
        QVERIFY(saw_q8 && saw_q4);
        // Close to the oracle: the same greedy token at every step whose top two differ by more
        // than 1e-2 (random weights leave near-ties: step 1's two best are 1.3e-3 apart), small KL.
        double kl = 0;
        for (size_t i = 0; i < logits.size(); ++i) {
            if (top2_gap(reference.logits[i]) > 1e-2f) {
                QCOMPARE(argmax(logits[i], logits[i].size()), argmax(reference.logits[i], reference.logits[i].size()));
            }
            kl += kl_divergence(probabilities(reference.logits[i]), probabilities(logits[i]));
        }
        kl /= double(logits.size());
        qInfo("mean KL from the all-in-RAM cache: %.6f", kl);
        QVERIFY(kl > 0 && kl < 0.01);
    }

    // Each fault is reported once in plain words, and the output stays exactly right.
    void faultsKeepTheOutputRight_data() {
        QTest::addColumn<int>("fault");
        QTest::addColumn<int>("after");
        QTest::addColumn<QString>("words");
        QTest::newRow("disk full") << int(FaultyFileIo::Fault::disk_full) << 3 << "No space left";
        QTest::newRow("write error") << int(FaultyFileIo::Fault::write_error) << 5 << "Input/output error";
        QTest::newRow("read error") << int(FaultyFileIo::Fault::read_error) << 2 << "Input/output error";
        QTest::newRow("checksum mismatch") << int(FaultyFileIo::Fault::corrupt_read) << 1 << "checksum";
        QTest::newRow("truncated file") << int(FaultyFileIo::Fault::truncated_read) << 1 << "truncated";
    }
    void faultsKeepTheOutputRight() {
        QFETCH(int, fault);
        QFETCH(int, after);
        QFETCH(QString, words);
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(77);
        const std::vector<int32_t> prompt = random_prompt(rng, 220, int32_t(m->hparams().n_vocab));
        const uint32_t n_ctx = 240;
        const SessionRun reference = run_session(m, prompt, 8, all_in_ram(n_ctx, 32, 16));
        QVERIFY(reference.status.ok());

        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 32};
        c.kv.block_tokens = 16;
        c.kv.prefix_cache = false;
        c.kv.device_mib = layer_mib(*m, n_ctx, 16) * 1.2;
        c.kv.host_mib = layer_mib(*m, n_ctx, 16) * 0.5;
        c.kv.disk_mib = 64;
        c.kv.dir = (dir_.path() + "/fault-" + QString::number(fault)).toStdString();
        auto io = std::make_shared<FaultyFileIo>(FaultyFileIo::Fault(fault), after);
        c.io = io;
        const SessionRun r = run_session(m, prompt, 8, c);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        QVERIFY(io->faults_injected() > 0);
        QVERIFY2(identical(reference, r), "a fault changed the output");
        QVERIFY(r.stats.faults >= 1);
        QVERIFY2(QString::fromStdString(r.stats.last_fault).contains(words), r.stats.last_fault.c_str());
    }

    void unwritableDirectoryDisablesTheDiskTier() {
        auto m = model("models/stories260K.gguf");
        std::mt19937 rng(5);
        const std::vector<int32_t> prompt = random_prompt(rng, 100, 512);
        const SessionRun reference = run_session(m, prompt, 3, all_in_ram(128, 64, 32));
        SessionConfig c{.n_ctx = 128, .chunk_tokens = 64};
        c.kv.dir = "/proc/longread-kv-test";  // cannot be created, even as root
        c.kv.disk_mib = 16;
        const SessionRun r = run_session(m, prompt, 3, c);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        QVERIFY(identical(reference, r));
        QVERIFY(!r.stats.tiers[2].present);
        QVERIFY2(QString::fromStdString(r.stats.last_fault).contains("/proc/longread-kv-test"), r.stats.last_fault.c_str());
    }

    // Session A prefills and goes away; session B with the same prompt restores the KV
    // instead of computing it, and continues exactly as A did.
    void prefixCacheRestoresAcrossSessions() {
        auto m = model("models/stories260K.gguf");
        std::mt19937 rng(9);
        const std::vector<int32_t> prompt = random_prompt(rng, 203, 512);
        const SessionConfig c = restoring_config("prefix");
        const SessionRun a = run_session(m, prompt, 5, c);
        QVERIFY(a.status.ok());
        QCOMPARE(a.stats.restored_tokens, uint64_t(0));
        const SessionRun b = run_session(m, prompt, 5, c);
        QVERIFY(b.status.ok());
        QCOMPARE(b.stats.restored_tokens, uint64_t(192));  // 6 blocks of 32; 11 tokens computed
        QVERIFY(b.stats.prefix_hits > 0);
        QVERIFY(identical(a, b));
        // A longer prompt with the same beginning restores that beginning.
        std::vector<int32_t> longer = prompt;
        longer.insert(longer.end(), {300, 301, 302, 303});
        const SessionRun longer_run = run_session(m, longer, 0, c);
        QCOMPARE(longer_run.stats.restored_tokens, uint64_t(192));
    }

    // A hybrid (tiny-qwen35: three Gated DeltaNet layers, one full-attention layer) restores
    // nothing without the recurrent states at the end of what it restores: session A
    // persists them with the blocks at every snapshot interval (128 tokens here) and at the
    // prompt's last block boundary; session B restores blocks and states up to that boundary
    // and continues exactly as A did.
    void hybridPrefixRestoresStatesAcrossSessions() {
        auto m = model("models/tiny-2026/tiny-qwen35-f32.gguf");
        std::mt19937 rng(12);
        const std::vector<int32_t> prompt = random_prompt(rng, 300, int32_t(m->hparams().n_vocab));
        SessionConfig c = restoring_config("hybrid");
        c.n_ctx = 512;
        const SessionRun a = run_session(m, prompt, 5, c);
        QVERIFY2(a.status.ok(), a.status.message().c_str());
        QCOMPARE(a.stats.restored_tokens, uint64_t(0));
        const SessionRun b = run_session(m, prompt, 5, c);
        QVERIFY2(b.status.ok(), b.status.message().c_str());
        QCOMPARE(b.stats.restored_tokens, uint64_t(288));  // 9 blocks of 32; 12 tokens computed
        QCOMPARE(b.stats.restored_states, uint64_t(1));
        QVERIFY(identical(a, b));
        // A prompt that parts from it after 200 tokens goes back to the states at 128, and
        // continues as a session of its own with the cache would.
        std::vector<int32_t> parted(prompt.begin(), prompt.begin() + 200);
        parted.insert(parted.end(), {300, 301, 302, 303});
        const SessionRun restored = run_session(m, parted, 3, c);
        QCOMPARE(restored.stats.restored_tokens, uint64_t(128));
        SessionConfig own_cache = restoring_config("hybrid-own");
        own_cache.n_ctx = 512;
        const SessionRun own = run_session(m, parted, 3, own_cache);
        QCOMPARE(own.stats.restored_tokens, uint64_t(0));
        QVERIFY(identical(restored, own));
    }

    // Quest ranks pages by key bounds, which a restored block does not bring along: they are
    // computed when the block is first needed, so that the restored session reads the same
    // pages, and gives the same logits, as the one that computed its prompt.
    void questRanksRestoredBlocksLikeComputedOnes() {
        auto m = model("models/stories260K.gguf");
        std::mt19937 rng(11);
        const std::vector<int32_t> prompt = random_prompt(rng, 203, 512);
        SessionConfig c = restoring_config("quest");
        c.kv.policy = KvPolicy::quest;
        c.kv.quest_pages = 5;  // the sinks' page, the new token's and three by their bounds
        const SessionRun a = run_session(m, prompt, 8, c);
        QVERIFY(a.status.ok());
        QCOMPARE(a.stats.restored_tokens, uint64_t(0));
        const SessionRun b = run_session(m, prompt, 8, c, a.tokens);
        QVERIFY(b.status.ok());
        QCOMPARE(b.stats.restored_tokens, uint64_t(192));
        QVERIFY(identical(a, b));
    }

    void changedModelOrCodecRestoresNothing() {
        std::mt19937 rng(10);
        const std::vector<int32_t> prompt = random_prompt(rng, 150, 512);
        SessionConfig c{.n_ctx = 160, .chunk_tokens = 64};
        c.kv.dir = (dir_.path() + "/changed").toStdString();
        c.kv.disk_mib = 64;
        // Two files with the same shapes and vocabulary but different weights.
        QVERIFY(run_session(model("models/tiny/tiny-llama-f32.gguf"), prompt, 0, c).status.ok());
        QCOMPARE(run_session(model("models/tiny/tiny-llama-f32.gguf"), prompt, 0, c).stats.restored_tokens, uint64_t(128));
        QCOMPARE(run_session(model("models/tiny/tiny-llama-F16.gguf"), prompt, 0, c).stats.restored_tokens, uint64_t(0));
        SessionConfig f32 = c;
        f32.kv.k_bits = 32;
        f32.kv.v_bits = 32;
        QCOMPARE(run_session(model("models/tiny/tiny-llama-f32.gguf"), prompt, 0, f32).stats.restored_tokens, uint64_t(0));
        SessionConfig other_block = c;
        other_block.kv.block_tokens = 16;
        QCOMPARE(run_session(model("models/tiny/tiny-llama-f32.gguf"), prompt, 0, other_block).stats.restored_tokens, uint64_t(0));
    }

    // Prefix files deleted, truncated or damaged between sessions: what cannot be read
    // back is recomputed, and the output is the same.
    void damagedPrefixFilesAreRecomputed_data() {
        QTest::addColumn<QString>("damage");
        QTest::newRow("deleted") << "delete";
        QTest::newRow("truncated") << "truncate";
        QTest::newRow("flipped") << "flip";
    }
    void damagedPrefixFilesAreRecomputed() {
        QFETCH(QString, damage);
        auto m = model("models/stories260K.gguf");
        std::mt19937 rng(12);
        const std::vector<int32_t> prompt = random_prompt(rng, 170, 512);
        SessionConfig c{.n_ctx = 192, .chunk_tokens = 64};
        const QString kv_dir = dir_.path() + "/damaged-" + damage;
        c.kv.dir = kv_dir.toStdString();
        c.kv.disk_mib = 64;
        const SessionRun a = run_session(m, prompt, 4, c);
        QVERIFY(a.status.ok());
        for (const QFileInfo & f : QDir(kv_dir).entryInfoList({"prefix-*.bin"})) {
            QFile file(f.filePath());
            if (damage == "delete") {
                QVERIFY(file.remove());
            } else if (damage == "truncate") {
                QVERIFY(file.resize(f.size() / 3));
            } else {
                QVERIFY(file.open(QIODevice::ReadWrite));
                for (qint64 at = 100; at < f.size(); at += 997) {
                    file.seek(at);
                    char b = 0;
                    file.getChar(&b);
                    file.seek(at);
                    file.putChar(char(b ^ 0x21));
                }
            }
        }
        const SessionRun b = run_session(m, prompt, 4, c);
        QVERIFY2(b.status.ok(), b.status.message().c_str());
        QVERIFY2(identical(a, b), "a damaged cache changed the output");
        QVERIFY(b.stats.faults >= 1);
        QVERIFY(!b.stats.last_fault.empty());
    }

    // Two caches sharing one directory at the same time, both spilling and persisting.
    void concurrentInstancesShareADirectory() {
        const QString name = "models/tiny/tiny-llama-Q8_0.gguf";
        auto m = model(name);
        std::mt19937 rng(21);
        const std::vector<int32_t> p1 = random_prompt(rng, 180, 512), p2 = random_prompt(rng, 200, 512);
        const SessionRun r1 = run_session(m, p1, 4, all_in_ram(224, 32, 16)), r2 = run_session(m, p2, 4, all_in_ram(224, 32, 16));
        SessionConfig c{.n_ctx = 224, .chunk_tokens = 32};
        c.kv.block_tokens = 16;
        c.kv.device_mib = layer_mib(*m, 224, 16) * 1.3;
        c.kv.host_mib = layer_mib(*m, 224, 16) * 0.5;
        c.kv.disk_mib = 64;
        c.kv.dir = (dir_.path() + "/shared").toStdString();
        // Each instance has its own backend and model, as two processes would.
        auto instance = [&](const std::vector<int32_t> & prompt, SessionRun & out) {
            CpuBackend backend({.n_threads = 1});
            auto own = Model::load(shared_path(name).toStdString(), backend);
            out = run_session(*own, prompt, 4, c);
        };
        SessionRun a, b;
        std::thread ta([&] { instance(p1, a); });
        std::thread tb([&] { instance(p2, b); });
        ta.join();
        tb.join();
        QVERIFY2(a.status.ok(), a.status.message().c_str());
        QVERIFY2(b.status.ok(), b.status.message().c_str());
        // Neither instance lost its prefix cache to the other one creating the index.
        QVERIFY2(a.stats.faults == 0, a.stats.last_fault.c_str());
        QVERIFY2(b.stats.faults == 0, b.stats.last_fault.c_str());
        QVERIFY(identical(a, r1));
        QVERIFY(identical(b, r2));
        // The shared index holds both prefixes intact.
        const SessionRun again1 = run_session(m, p1, 4, c), again2 = run_session(m, p2, 4, c);
        QVERIFY(again1.stats.restored_tokens > 0 && again2.stats.restored_tokens > 0);
        QVERIFY(identical(again1, r1));
        QVERIFY(identical(again2, r2));
    }

    // A stop between chunks leaves the tiered cache consistent: finishing the prompt later
    // gives the same logits.
    void cancelledPrefillLeavesTheCacheConsistent() {
        auto m = model("models/stories260K.gguf");
        std::mt19937 rng(31);
        const std::vector<int32_t> prompt = random_prompt(rng, 190, 512);
        const SessionRun reference = run_session(m, prompt, 3, all_in_ram(200, 16, 8));
        SessionConfig c{.n_ctx = 200, .chunk_tokens = 16};
        c.kv.block_tokens = 8;
        c.kv.prefix_cache = false;
        c.kv.device_mib = layer_mib(*m, 200, 8) * 1.1;
        c.kv.host_mib = layer_mib(*m, 200, 8);
        c.kv.disk_mib = 16;
        c.kv.dir = (dir_.path() + "/cancel").toStdString();
        auto session = Session::create(m, c);
        QVERIFY(session.ok());
        std::stop_source stop;
        Status s = (*session)->append(
            prompt,
            [&](const PrefillProgress & p) {
                if (p.n_done >= 64) stop.request_stop();
            },
            stop.get_token());
        QCOMPARE(s.code(), StatusCode::cancelled);
        const size_t done = (*session)->tokens().size();
        QCOMPARE(done, size_t(64));
        QVERIFY((*session)->append(std::span(prompt).subspan(done)).ok());
        const auto l = (*session)->logits();
        QVERIFY(std::memcmp(l.data(), reference.logits[0].data(), l.size() * sizeof(float)) == 0);
    }
};

QTEST_GUILESS_MAIN(TestKvTiers)
#include "test_kv_tiers.moc"
