// The pieces of the tiered KV cache on their own: memory and disk tiers, the prefix store,
// the I/O thread, the settings and the memory planner.
#include <QtTest>

#include <numeric>
#include <thread>

#include "engine/api/kv_settings.h"
#include "engine/api/memory_plan.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "kvcache/disk_tier.h"
#include "kvcache/io_thread.h"
#include "kvcache/memory_tier.h"
#include "kvcache/prefix_store.h"
#include "support/faulty_file_io.h"

using namespace lr;
using namespace lr::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
    return v;
}

}  // namespace

class TestKvStores : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void memoryTierAccountsAndRecycles() {
        CpuBackend backend({.n_threads = 1});
        auto tier = MemoryTier::device(backend, 3000);
        QVERIFY(tier->host_addressable());
        auto a = tier->allocate(1000);
        auto b = tier->allocate(1000);
        QVERIFY(a.ok() && b.ok());
        QCOMPARE(tier->used_bytes(), uint64_t(2000));
        QCOMPARE(tier->n_blocks(), uint64_t(2));
        QCOMPARE(tier->allocate(1500).status().code(), StatusCode::out_of_memory);
        QCOMPARE(tier->used_bytes(), uint64_t(2000));  // a refusal changes nothing
        const std::vector<uint8_t> bytes = pattern(1000, 3);
        QVERIFY(tier->write(*a, bytes.data(), 1000).ok());
        std::vector<uint8_t> back(1000);
        QVERIFY(tier->read(*a, back.data(), 1000).ok());
        QCOMPARE(back, bytes);
        uint8_t * recycled = a->data;
        tier->release(*a, 1000);
        QCOMPARE(tier->used_bytes(), uint64_t(1000));
        auto c = tier->allocate(1000);
        QCOMPARE(c->data, recycled);  // slots of a size are reused
        QCOMPARE(tier->reserved_bytes(), uint64_t(2000));
        // Blocks of another size (another codec) take the memory of recycled ones: what the
        // tier holds from the allocator stays within its budget.
        tier->release(*b, 1000);
        tier->release(*c, 1000);
        std::vector<TierSlot> small;
        for (int i = 0; i < 5; ++i) {
            auto s = tier->allocate(600);
            QVERIFY(s.ok());
            small.push_back(*s);
            QVERIFY2(tier->reserved_bytes() <= 3000, qPrintable(QString::number(tier->reserved_bytes())));
        }
        QCOMPARE(tier->used_bytes(), uint64_t(3000));
        QCOMPARE(tier->reserved_bytes(), uint64_t(3000));
    }

    void diskTierRoundTripsAndVerifies() {
        auto disk = DiskTier::create((dir_.path() + "/disk").toStdString(), 10000);
        QVERIFY2(disk.ok(), disk.status().message().c_str());
        QVERIFY(!(*disk)->host_addressable());
        std::vector<TierSlot> written;
        for (uint8_t i = 0; i < 4; ++i) {
            auto s = (*disk)->allocate(2048);
            QVERIFY(s.ok());
            const std::vector<uint8_t> bytes = pattern(2048, i);
            QVERIFY((*disk)->write(*s, bytes.data(), 2048).ok());
            written.push_back(*s);
        }
        QCOMPARE((*disk)->allocate(2048).status().code(), StatusCode::out_of_memory);  // 5 x 2048 > 10000
        for (uint8_t i = 0; i < 4; ++i) {
            std::vector<uint8_t> back(2048);
            QVERIFY((*disk)->read(written[i], back.data(), 2048).ok());
            QCOMPARE(back, pattern(2048, i));
        }
        // The spill files are private: nothing is visible in the directory.
        QVERIFY(QDir(dir_.path() + "/disk").entryList(QDir::Files).isEmpty());
        (*disk)->release(written[1], 2048);
        QCOMPARE((*disk)->used_bytes(), uint64_t(3 * 2048));
        std::vector<uint8_t> back(2048);
        QCOMPARE((*disk)->read(written[1], back.data(), 2048).code(), StatusCode::corrupt_data);  // released: never readable
    }

    void diskTierDetectsCorruptionAndErrors_data() {
        QTest::addColumn<int>("fault");
        QTest::addColumn<int>("code");
        QTest::newRow("checksum") << int(FaultyFileIo::Fault::corrupt_read) << int(StatusCode::corrupt_data);
        QTest::newRow("read error") << int(FaultyFileIo::Fault::read_error) << int(StatusCode::io_error);
        QTest::newRow("truncated") << int(FaultyFileIo::Fault::truncated_read) << int(StatusCode::corrupt_data);
    }
    void diskTierDetectsCorruptionAndErrors() {
        QFETCH(int, fault);
        QFETCH(int, code);
        auto io = std::make_shared<FaultyFileIo>(FaultyFileIo::Fault(fault));
        auto disk = DiskTier::create((dir_.path() + "/faulty").toStdString(), 1 << 20, io);
        QVERIFY(disk.ok());
        auto s = (*disk)->allocate(512);
        const std::vector<uint8_t> bytes = pattern(512, 1);
        QVERIFY((*disk)->write(*s, bytes.data(), 512).ok());
        std::vector<uint8_t> back(512);
        QCOMPARE(int((*disk)->read(*s, back.data(), 512).code()), code);
    }

    void diskTierRefusesAnUnwritableDirectory() {
        auto disk = DiskTier::create("/proc/no-such-kv-dir", 1 << 20);
        QVERIFY(!disk.ok());
        QVERIFY(QString::fromStdString(disk.status().message()).contains("/proc/no-such-kv-dir"));
    }

    void prefixStoreStoresAndEvictsLeastRecentlyUsed() {
        const std::string d = (dir_.path() + "/prefix").toStdString();
        auto store = PrefixStore::open(d, 3 * 1024);
        QVERIFY2(store.ok(), store.status().message().c_str());
        const std::vector<int32_t> t1{1, 2, 3}, t2{4, 5, 6};
        const uint64_t c1 = PrefixStore::chain_next(42, t1), c2 = PrefixStore::chain_next(c1, t2);
        QVERIFY(c1 != c2 && c1 != PrefixStore::chain_next(43, t1));
        QVERIFY((*store)->write(c1, 0, 0, pattern(1024, 1).data(), 1024).ok());
        QVERIFY((*store)->write(c1, 1, 0, pattern(1024, 2).data(), 1024).ok());
        QVERIFY((*store)->contains(c1, 2));
        QVERIFY(!(*store)->contains(c1, 3));
        QCOMPARE((*store)->used_bytes(), uint64_t(2048));
        std::vector<uint8_t> back(1024);
        QVERIFY((*store)->read(c1, 1, back.data(), 1024).ok());
        QCOMPARE(back, pattern(1024, 2));
        QCOMPARE((*store)->read(c2, 0, back.data(), 1024).code(), StatusCode::not_found);
        // Writing past the budget evicts the least recently used entries first.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        QVERIFY((*store)->write(c2, 0, 1, pattern(1024, 3).data(), 1024).ok());
        QVERIFY((*store)->write(c2, 1, 1, pattern(1024, 4).data(), 1024).ok());
        QVERIFY((*store)->used_bytes() <= 3 * 1024);
        QVERIFY((*store)->contains(c2, 2));
        QVERIFY(!(*store)->contains(c1, 2));
        // The index survives reopening (another process, or tomorrow).
        store->reset();
        auto reopened = PrefixStore::open(d, 3 * 1024);
        QVERIFY(reopened.ok());
        QVERIFY((*reopened)->contains(c2, 2));
        QVERIFY((*reopened)->read(c2, 1, back.data(), 1024).ok());
        QCOMPARE(back, pattern(1024, 4));
    }

    // A recurrent model's states after a chain's block: stored beside its blocks, counted in
    // the budget, not counted as a layer, and evicted with the chain's blocks.
    void prefixStoreKeepsStatesWithTheirBlocks() {
        auto store = PrefixStore::open((dir_.path() + "/states").toStdString(), 8 * 1024);
        QVERIFY(store.ok());
        const std::vector<int32_t> t1{1, 2, 3}, t2{4, 5, 6};
        const uint64_t c1 = PrefixStore::chain_next(42, t1), c2 = PrefixStore::chain_next(c1, t2);
        const uint32_t states = PrefixStore::kStatesLayer;
        const std::vector<uint8_t> block1 = pattern(1024, 1), states1 = pattern(3000, 2), block2 = pattern(4096, 3);
        const PrefixBlockWrite first[] = {{c1, 0, 0, block1}, {c1, states, 0, states1}};
        QVERIFY((*store)->write(first).ok());
        QVERIFY((*store)->contains(c1, 1));  // one layer: the states are not one
        QCOMPARE((*store)->used_bytes(), uint64_t(1024 + 3000));
        std::vector<uint8_t> back(3000);
        QVERIFY((*store)->read(c1, states, back.data(), back.size()).ok());
        QCOMPARE(back, states1);
        // c2's block pushes c1's out of the budget: c1's states go with it.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const PrefixBlockWrite second[] = {{c2, 0, 1, block2}};
        QVERIFY((*store)->write(second).ok());
        (*store)->evict_to(5000);
        QVERIFY(!(*store)->contains(c1, 1));
        QCOMPARE((*store)->read(c1, states, back.data(), back.size()).code(), StatusCode::not_found);
        QCOMPARE((*store)->used_bytes(), uint64_t(4096));
    }

    void prefixStoreDropsDamagedEntries() {
        const QString d = dir_.path() + "/damaged";
        auto store = PrefixStore::open(d.toStdString(), 1 << 20);
        QVERIFY(store.ok());
        QVERIFY((*store)->write(7, 0, 0, pattern(4096, 9).data(), 4096).ok());
        QFile data(d + "/prefix-4096.bin");
        QVERIFY(data.open(QIODevice::ReadWrite));
        data.seek(100);
        data.putChar(0x7f);
        data.close();
        std::vector<uint8_t> back(4096);
        QCOMPARE((*store)->read(7, 0, back.data(), 4096).code(), StatusCode::corrupt_data);
        QVERIFY(!(*store)->contains(7, 1));  // dropped: never read twice
        QCOMPARE((*store)->used_bytes(), uint64_t(0));
    }

    // A ubatch's blocks go in one transaction: a refused write leaves none of them, and the
    // slots it took are handed out again.
    void prefixStoreWritesABatchWhollyOrNotAtAll() {
        const std::string d = (dir_.path() + "/batch").toStdString();
        auto io = std::make_shared<FaultyFileIo>(FaultyFileIo::Fault::write_error, 2);  // the third write fails
        auto store = PrefixStore::open(d, 1 << 20, io);
        QVERIFY(store.ok());
        std::vector<std::vector<uint8_t>> bytes;
        std::vector<PrefixBlockWrite> batch;
        for (uint32_t i = 0; i < 4; ++i) bytes.push_back(pattern(1024, uint8_t(i)));
        for (uint32_t i = 0; i < 4; ++i) batch.push_back({.chain = 77, .layer = i, .depth = 0, .bytes = bytes[i]});
        QCOMPARE((*store)->write(batch).code(), StatusCode::io_error);
        QCOMPARE((*store)->n_blocks(), uint64_t(0));
        QCOMPARE((*store)->used_bytes(), uint64_t(0));
        store = PrefixStore::open(d, 1 << 20);  // a disk that writes again
        QVERIFY(store.ok());
        QVERIFY((*store)->write(batch).ok());
        QVERIFY((*store)->contains(77, 4));
        QCOMPARE((*store)->used_bytes(), uint64_t(4096));
        QCOMPARE(QFileInfo(QString::fromStdString(d + "/prefix-1024.bin")).size(), qint64(4096));  // slots 0-3 reused
        std::vector<uint8_t> back(1024);
        for (uint32_t i = 0; i < 4; ++i) {
            QVERIFY((*store)->read(77, i, back.data(), 1024).ok());
            QCOMPARE(back, bytes[i]);
        }
        QVERIFY((*store)->write(batch).ok());  // stored already: nothing changes
        QCOMPARE((*store)->used_bytes(), uint64_t(4096));
    }

    // A write that evicts an entry reuses its slot before the transaction commits. When the
    // transaction does not commit (a failed write here; a SIGKILL in test_crash_recovery),
    // the evicted entry comes back pointing at bytes that are no longer its own: its checksum
    // refuses them, so it is dropped and never restored.
    void prefixStoreNeverRestoresASlotARolledBackWriteReused() {
        const std::string d = (dir_.path() + "/rollback").toStdString();
        auto io = std::make_shared<FaultyFileIo>(FaultyFileIo::Fault::write_error, 3);  // the fourth write fails
        auto store = PrefixStore::open(d, 2 * 1024, io);
        QVERIFY(store.ok());
        const std::vector<uint8_t> a0 = pattern(1024, 1), a1 = pattern(1024, 2), b0 = pattern(1024, 3), b1 = pattern(1024, 4);
        const PrefixBlockWrite first[] = {{.chain = 5, .layer = 0, .depth = 0, .bytes = a0},
                                          {.chain = 5, .layer = 1, .depth = 0, .bytes = a1}};
        QVERIFY((*store)->write(first).ok());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        // Chain 6 evicts chain 5 block by block: its layer 0 lands in layer 0's slot, its layer 1 fails.
        const PrefixBlockWrite second[] = {{.chain = 6, .layer = 0, .depth = 0, .bytes = b0},
                                           {.chain = 6, .layer = 1, .depth = 0, .bytes = b1}};
        QCOMPARE((*store)->write(second).code(), StatusCode::io_error);
        QVERIFY((*store)->contains(5, 2));  // rolled back: chain 5 is indexed again
        QVERIFY(!(*store)->contains(6, 1));
        std::vector<uint8_t> back(1024);
        QCOMPARE((*store)->read(5, 0, back.data(), 1024).code(), StatusCode::corrupt_data);  // its slot holds chain 6's bytes
        QVERIFY(!(*store)->contains(5, 2));
        QVERIFY((*store)->read(5, 1, back.data(), 1024).ok());
        QCOMPARE(back, a1);
        QCOMPARE((*store)->used_bytes(), uint64_t(1024));
    }

    // The byte total lives in the index, so a process sees what another one wrote and
    // evicted, and a reopened index starts from it.
    void prefixStoreTotalIsSharedBetweenProcesses() {
        const std::string d = (dir_.path() + "/totals").toStdString();
        auto a = PrefixStore::open(d, 8 * 1024), b = PrefixStore::open(d, 8 * 1024);
        QVERIFY(a.ok() && b.ok());
        for (uint64_t i = 0; i < 6; ++i) QVERIFY((*a)->write(100 + i, 0, 0, pattern(1024, uint8_t(i)).data(), 1024).ok());
        QCOMPARE((*b)->used_bytes(), uint64_t(6 * 1024));
        for (uint64_t i = 0; i < 6; ++i) QVERIFY((*b)->write(200 + i, 0, 0, pattern(1024, uint8_t(i)).data(), 1024).ok());
        QCOMPARE((*a)->used_bytes(), uint64_t(8 * 1024));  // b evicted a's oldest to stay in budget
        QCOMPARE((*a)->n_blocks(), uint64_t(8));
        (*a)->evict_to(3 * 1024);
        QCOMPARE((*b)->used_bytes(), uint64_t(3 * 1024));
        QVERIFY((*b)->contains(205, 1));  // the newest stay
        a->reset();
        b->reset();
        auto reopened = PrefixStore::open(d, 8 * 1024);
        QVERIFY(reopened.ok());
        QCOMPARE((*reopened)->used_bytes(), uint64_t(3 * 1024));
    }

    void prefixStoreIsSharedSafely() {
        // Two stores on one directory (two processes) write interleaved blocks; each block
        // is readable intact from either, and no slot is handed out twice.
        const std::string d = (dir_.path() + "/concurrent").toStdString();
        auto a = PrefixStore::open(d, 1 << 24), b = PrefixStore::open(d, 1 << 24);
        QVERIFY(a.ok() && b.ok());
        auto writer = [](PrefixStore & s, uint64_t base) {
            for (uint64_t i = 0; i < 60; ++i) {
                if (!s.write(base + i, 0, 0, pattern(2048, uint8_t(base + i)).data(), 2048).ok()) return false;
            }
            return true;
        };
        bool ok_a = false, ok_b = false;
        std::thread ta([&] { ok_a = writer(**a, 1000); });
        std::thread tb([&] { ok_b = writer(**b, 2000); });
        ta.join();
        tb.join();
        QVERIFY(ok_a && ok_b);
        std::vector<uint8_t> back(2048);
        for (uint64_t base : {1000u, 2000u}) {
            for (uint64_t i = 0; i < 60; ++i) {
                QVERIFY((*a)->read(base + i, 0, back.data(), 2048).ok());
                QCOMPARE(back, pattern(2048, uint8_t(base + i)));
            }
        }
    }

    void ioThreadRunsJobsInOrder() {
        IoThread io;
        std::vector<int> order;
        std::vector<IoThread::JobId> ids;
        for (int i = 0; i < 10; ++i) {
            ids.push_back(io.submit([&order, i] {
                order.push_back(i);
                return i == 5 ? error(StatusCode::io_error, "five") : Status{};
            }));
        }
        for (int i = 9; i >= 0; --i) {
            Status s = io.wait(ids[size_t(i)]);
            QCOMPARE(s.ok(), i != 5);
        }
        std::vector<int> expected(10);
        std::iota(expected.begin(), expected.end(), 0);
        QCOMPARE(order, expected);
    }

    void settingsAreValidated_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("message");
        QTest::newRow("keep ratio") << "keep_ratio"
                                    << "keep ratio";
        QTest::newRow("bits") << "k_bits"
                              << "KV bits";
        QTest::newRow("host bits") << "host_bits"
                                   << "RAM and disk tier bits";
        QTest::newRow("disk bits") << "disk_bits"
                                   << "RAM and disk tier bits";
        QTest::newRow("block") << "block_tokens"
                               << "block size";
        QTest::newRow("pool") << "pool_kernel"
                              << "pooling kernel";
        QTest::newRow("then") << "then"
                              << "after snapkv";
        QTest::newRow("budget") << "device_mib"
                                << "tier budgets";
    }
    void settingsAreValidated() {
        QFETCH(QString, field);
        QFETCH(QString, message);
        KvSettings s;
        QVERIFY(validate(s).ok());
        if (field == "keep_ratio") s.keep_ratio = 1.5;
        if (field == "k_bits") s.k_bits = 3;
        if (field == "host_bits") s.host_bits = 32;
        if (field == "disk_bits") s.disk_bits = 2;
        if (field == "block_tokens") s.block_tokens = 2;
        if (field == "pool_kernel") s.pool_kernel = 4;
        if (field == "then") s.then = KvPolicy::quest;
        if (field == "device_mib") s.device_mib = -1;
        const Status st = validate(s);
        QCOMPARE(st.code(), StatusCode::invalid_argument);
        QVERIFY2(QString::fromStdString(st.message()).contains(message), st.message().c_str());
    }

    void settingsDescribeThemselves() {
        KvSettings s;
        s.policy = KvPolicy::h2o;
        s.keep_ratio = 0.2;
        s.k_bits = 8;
        s.v_bits = 4;
        QCOMPARE(QString::fromStdString(describe(s)),
                 QString("h2o 20% (recent 50%, 4 sinks), inverse layers, warm-up 100 tokens, K q8 / V q4"));
        s.host_bits = 4;
        QCOMPARE(QString::fromStdString(describe(s)),
                 QString("h2o 20% (recent 50%, 4 sinks), inverse layers, warm-up 100 tokens, K q8 / V q4, RAM q4"));
        // A tier narrows, never widens.
        QCOMPARE(KvSettings::narrowed(KvCodec::f16, 8), KvCodec::q8);
        QCOMPARE(KvSettings::narrowed(KvCodec::q4, 8), KvCodec::q4);
        QCOMPARE(KvSettings::narrowed(KvCodec::f16, 0), KvCodec::f16);
        QCOMPARE(KvSettings::narrowed(KvCodec::f32, 16), KvCodec::f16);
        QCOMPARE(s.budget_for(1000), 200u);
        QCOMPARE(kv_policy_from_name("snapkv").value(), KvPolicy::snapkv);
        QVERIFY(!kv_policy_from_name("lru").has_value());
    }

    void plannerSaysWhatFits() {
        // TinyLlama-1.1B: 22 layers, 4 KV heads of 64: 22 KiB of f16 KV per token.
        const ModelMemoryShape tl{.n_layer = 22,
                                  .n_head_kv = 4,
                                  .head_dim = 64,
                                  .n_ctx_train = 32768,
                                  .weight_bytes = 600ull << 20,
                                  .scratch_bytes_per_token = 64 << 10};
        KvSettings s;
        const uint64_t gib = 1ull << 30;
        MemoryPlan fits = plan_memory(tl, 8192, 256, s, {.device_bytes = 2 * gib, .host_bytes = gib, .disk_bytes = 10 * gib});
        QCOMPARE(fits.verdict, MemoryVerdict::fits);
        QVERIFY(fits.kv_bytes > 176ull << 20 && fits.kv_bytes < 200ull << 20);  // ~176 MiB of K/V (+ positions)
        MemoryPlan disk = plan_memory(tl, 32768, 256, s, {.device_bytes = 300 << 20, .host_bytes = 200 << 20, .disk_bytes = 10 * gib});
        QCOMPARE(disk.verdict, MemoryVerdict::needs_disk);
        QVERIFY(disk.kv_disk_bytes > 0);
        MemoryPlan no = plan_memory(tl, 32768, 256, s, {.device_bytes = 100 << 20, .host_bytes = 100 << 20, .disk_bytes = 100 << 20});
        QCOMPARE(no.verdict, MemoryVerdict::wont_fit);
        QVERIFY2(QString::fromStdString(no.message).contains("lower the context"), no.message.c_str());
        QVERIFY(no.max_context > 8000 && no.max_context < 32768);
        KvSettings h2o = s;
        h2o.policy = KvPolicy::h2o;
        h2o.keep_ratio = 0.2;
        h2o.k_bits = 8;
        MemoryPlan small = plan_memory(tl, 32768, 256, h2o, {.device_bytes = 2 * gib, .host_bytes = gib, .disk_bytes = gib});
        QVERIFY(small.kv_bytes < disk.kv_bytes / 5);
        // SnapKV holds the whole prompt until it selects at its end: its peak is the full
        // cache's, and a whole layer of it must fit the device tier while the prompt is read.
        KvSettings snapkv = h2o;
        snapkv.policy = KvPolicy::snapkv;
        MemoryPlan snap = plan_memory(tl, 32768, 256, snapkv, {.device_bytes = 2 * gib, .host_bytes = gib, .disk_bytes = gib});
        QCOMPARE(snap.kv_bytes,
                 plan_memory(tl, 32768, 256, {.k_bits = 8}, {.device_bytes = 2 * gib, .host_bytes = gib, .disk_bytes = gib}).kv_bytes);
        MemoryPlan narrow_device = plan_memory(tl, 32768, 256, snapkv, {.device_bytes = 8 << 20, .host_bytes = 4 * gib, .disk_bytes = gib});
        QCOMPARE(narrow_device.verdict, MemoryVerdict::wont_fit);
        QVERIFY2(QString::fromStdString(narrow_device.message).contains("whole layer"), narrow_device.message.c_str());
        QCOMPARE(plan_memory(tl, 32768, 256, h2o, {.device_bytes = 8 << 20, .host_bytes = 4 * gib, .disk_bytes = gib}).verdict,
                 MemoryVerdict::fits);
        // Narrower codecs in RAM and on disk: the same context spills less, and a longer one fits.
        KvSettings tiered = s;
        tiered.host_bits = 8;
        tiered.disk_bits = 4;
        MemoryPlan narrowed = plan_memory(tl, 32768, 256, tiered,
                                          {.device_bytes = 300 << 20, .host_bytes = 200 << 20, .disk_bytes = 10 * gib});
        QCOMPARE(narrowed.kv_device_bytes, disk.kv_device_bytes);
        QCOMPARE(narrowed.kv_host_bytes, disk.kv_host_bytes);          // RAM full either way
        QVERIFY(narrowed.kv_disk_bytes < disk.kv_disk_bytes * 2 / 5);  // q4 blocks: under 0.4 of f16's
        MemoryPlan limit = plan_memory(tl, 32768, 256, s, {.device_bytes = 100 << 20, .host_bytes = 100 << 20, .disk_bytes = 100 << 20});
        MemoryPlan limit_narrowed = plan_memory(tl, 32768, 256, tiered,
                                                {.device_bytes = 100 << 20, .host_bytes = 100 << 20, .disk_bytes = 100 << 20});
        qInfo("largest context in 3 x 100 MiB: %u tokens (f16), %u (RAM q8, disk q4)", limit.max_context, limit_narrowed.max_context);
        QVERIFY(limit_narrowed.max_context > limit.max_context * 9 / 5);
        MemoryPlan too_long = plan_memory(tl, 40000, 256, s, {.device_bytes = 8 * gib, .host_bytes = gib, .disk_bytes = gib});
        QCOMPARE(too_long.verdict, MemoryVerdict::wont_fit);
        QVERIFY(QString::fromStdString(too_long.message).contains("streaming"));
    }
};

QTEST_GUILESS_MAIN(TestKvStores)
#include "test_kv_stores.moc"
