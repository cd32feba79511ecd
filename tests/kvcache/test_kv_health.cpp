// The KV cache's health monitor: each condition injected (a fragmented disk tier, memory
// pressure, a low disk, an old or oversized prefix cache, a faulty tier), its finding and
// its repair checked, and every repair of a live cache checked against the all-in-RAM
// cache, the oracle: the logits stay bit-identical.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <map>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/sequence_batch.h"
#include "engine/runtime/session.h"
#include "kvcache/disk_tier.h"
#include "kvcache/kv_health.h"
#include "kvcache/memory_tier.h"
#include "kvcache/prefix_store.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

// The machine as the test says it is: plenty of everything unless a test takes it away.
class TestProbe final : public HealthProbe {
public:
    HostMemoryReading ram{.total_bytes = uint64_t(64) << 30, .available_bytes = uint64_t(32) << 30};
    DiskSpaceReading disk{.total_bytes = uint64_t(1) << 40, .free_bytes = uint64_t(512) << 30};
    BackendMemory device{};
    int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();

    std::optional<HostMemoryReading> host_memory() override { return ram; }
    std::optional<DiskSpaceReading> disk_space(const std::string &) override { return disk; }
    BackendMemory device_memory() override { return device; }
    int64_t now_us() override { return now; }
};

// Real files, whose spill-file reads turn bad and prefix-cache writes fail when asked.
class SwitchedFileIo final : public FileIo {
public:
    std::atomic<bool> fail_prefix_writes{false};
    std::atomic<bool> corrupt_spill_reads{false};

    Result<int> open(const std::string & path, bool create) override { return real_->open(path, create); }
    Result<int> open_private(const std::string & dir, const std::string & prefix) override { return real_->open_private(dir, prefix); }
    void close(int fd) override { real_->close(fd); }
    Status unlink(const std::string & path) override { return real_->unlink(path); }
    Status pwrite(int fd, const void * data, size_t n, uint64_t offset, const std::string & what) override {
        if (fail_prefix_writes && what.starts_with("prefix cache")) return error(StatusCode::io_error, what + ": write failed (injected)");
        return real_->pwrite(fd, data, n, offset, what);
    }
    Status pread(int fd, void * data, size_t n, uint64_t offset, const std::string & what) override {
        LR_RETURN_IF_ERROR(real_->pread(fd, data, n, offset, what));
        if (corrupt_spill_reads && what.starts_with("KV disk tier") && n > 0) static_cast<uint8_t *>(data)[n / 2] ^= 0x5a;
        return {};
    }
    Status resize(int fd, uint64_t n_bytes, const std::string & what) override { return real_->resize(fd, n_bytes, what); }
    Status free_range(int fd, uint64_t offset, uint64_t n, const std::string & what) override {
        return real_->free_range(fd, offset, n, what);
    }

private:
    std::shared_ptr<FileIo> real_ = posix_file_io();
};

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed * 31 + i * 7);
    return v;
}

const KvHealthFinding * find(const std::vector<KvHealthFinding> & findings, KvHealthCheck check) {
    for (const KvHealthFinding & f : findings) {
        if (f.check == check) return &f;
    }
    return nullptr;
}

QByteArray describe(const std::vector<KvHealthFinding> & findings) { return QByteArray::fromStdString(to_text(findings)); }

}  // namespace

class TestKvHealth : public QObject {
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

    SessionConfig all_in_ram(uint32_t n_ctx) const {
        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 32};
        c.kv.block_tokens = 16;
        c.kv.prefix_cache = false;
        c.kv.dir = (dir_.path() + "/ram").toStdString();
        c.kv.disk_mib = 0.001;  // no room: nothing spills
        return c;
    }

    // A device tier of about a layer, a host tier of half a layer: the rest spills to disk.
    SessionConfig tiered(const Model & m, uint32_t n_ctx, const QString & name) const {
        SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = 32};
        c.kv.block_tokens = 16;
        c.kv.prefix_cache = false;
        c.kv.device_mib = layer_mib(m, n_ctx, 16) * 1.2;
        c.kv.host_mib = layer_mib(m, n_ctx, 16) * 0.5;
        c.kv.disk_mib = 64;
        c.kv.dir = (dir_.path() + "/" + name).toStdString();
        return c;
    }

    // The rest of `reference` on `session`: the same forced tokens give the same logits.
    static void continues_like(Session & session, const SessionRun & reference) {
        const auto first = session.logits();
        QVERIFY2(std::equal(first.begin(), first.end(), reference.logits[0].begin(), reference.logits[0].end()),
                 "logits after the repair differ from the all-in-RAM cache");
        for (size_t i = 0; i < reference.tokens.size(); ++i) {
            const int32_t t = reference.tokens[i];
            QVERIFY(session.append(std::span(&t, 1)).ok());
            const auto l = session.logits();
            QVERIFY2(std::equal(l.begin(), l.end(), reference.logits[i + 1].begin(), reference.logits[i + 1].end()),
                     qPrintable(QString("step %1 differs from the all-in-RAM cache").arg(i)));
        }
    }

private slots:
    // ---- the pieces ----

    // Blocks freed in a pattern leave holes in the spill file; compaction moves the blocks
    // at its end into them, the bytes read back identical, and the file ends at its blocks.
    void diskTierCompactionMakesFreeSlotsContiguous() {
        const size_t n = 4096;
        auto tier = DiskTier::create((dir_.path() + "/compact").toStdString(), 64 * n);
        QVERIFY(tier.ok());
        std::vector<TierSlot> allocated;
        for (uint32_t i = 0; i < 40; ++i) {
            auto s = (*tier)->allocate(n);
            QVERIFY(s.ok());
            QVERIFY((*tier)->write(*s, pattern(n, i).data(), n).ok());
            allocated.push_back(*s);
        }
        std::map<uint32_t, TierSlot> live;  // pattern seed -> slot
        for (uint32_t i = 0; i < 40; ++i) {
            if (i % 3 == 1 || (i > 20 && i % 2 == 0)) {
                (*tier)->release(allocated[i], n);
            } else {
                live[i] = allocated[i];
            }
        }
        const TierFragmentation before = (*tier)->fragmentation();
        QCOMPARE(before.n_slots, uint64_t(40));
        QCOMPARE(before.n_free_slots, uint64_t(19));
        QCOMPARE(before.largest_free_runs, uint64_t(3));  // 24-26, 30-32 and 36-38; the rest single slots
        QVERIFY2(before.measure() > 0.8, qPrintable(QString::number(before.measure())));

        std::map<uint64_t, uint32_t> seed_of;
        for (const auto & [seed, slot] : live) seed_of[slot.id] = seed;
        uint64_t moves = 0;
        QVERIFY((*tier)
                    ->compact([&](const TierSlot & from, const TierSlot & to) {
                        auto it = seed_of.find(from.id);
                        QVERIFY(it != seed_of.end());
                        live[it->second] = to;
                        seed_of[to.id] = it->second;
                        seed_of.erase(it);
                        ++moves;
                    })
                    .ok());
        QVERIFY(moves > 0);
        const TierFragmentation after = (*tier)->fragmentation();
        QCOMPARE(after.n_free_slots, uint64_t(0));
        QCOMPARE(after.n_slots, uint64_t(live.size()));
        QCOMPARE(after.measure(), 0.0);
        std::vector<uint8_t> back(n);
        for (const auto & [seed, slot] : live) {
            QVERIFY((*tier)->read(slot, back.data(), n).ok());
            QVERIFY2(back == pattern(n, seed), qPrintable(QString("block %1 changed").arg(seed)));
        }
        // New blocks go after the used ones again.
        auto next = (*tier)->allocate(n);
        QVERIFY(next.ok());
        QCOMPARE(next->id & 0xffffffffu, uint64_t(live.size()));
    }

    void memoryTierGivesRecycledSlotsBack() {
        auto tier = MemoryTier::host(backend_, 1 << 20);
        std::vector<TierSlot> allocated;
        for (int i = 0; i < 4; ++i) allocated.push_back(*tier->allocate(1000));
        tier->release(allocated[1], 1000);
        tier->release(allocated[3], 1000);
        QCOMPARE(tier->recycled_bytes(), uint64_t(2000));
        QCOMPARE(tier->release_recycled(), uint64_t(2000));
        QCOMPARE(tier->recycled_bytes(), uint64_t(0));
        QCOMPARE(tier->reserved_bytes(), tier->used_bytes());
        QVERIFY(tier->allocate(1000).ok());  // a fresh slot
        QCOMPARE(tier->reserved_bytes(), uint64_t(3000));
    }

    // ---- the prefix cache and the disk, without a model ----

    // Disk below the low-water mark: the oldest prefix-cache entries go, the newest stay.
    void lowDiskDropsTheOldestPrefixEntries() {
        const std::string dir = (dir_.path() + "/low-disk").toStdString();
        const size_t n = 8192;
        {
            auto store = PrefixStore::open(dir, 64 * n);
            QVERIFY(store.ok());
            for (uint32_t i = 0; i < 10; ++i) QVERIFY((*store)->write(100 + i, 0, 0, pattern(n, i).data(), n).ok());
        }
        auto probe = std::make_shared<TestProbe>();
        probe->disk = {.total_bytes = uint64_t(100) << 30, .free_bytes = uint64_t(1) << 30};
        // The low-water mark is 1 GiB + 3 blocks: three entries' worth short.
        KvHealthMonitor monitor(probe, {.disk_low_water_bytes = (uint64_t(1) << 30) + 3 * n});
        const std::vector<KvHealthFinding> findings = monitor.check_dir(dir, 64 * n);
        const KvHealthFinding * low = find(findings, KvHealthCheck::disk_space);
        QVERIFY2(low, describe(findings));
        QCOMPARE(low->severity, KvHealthSeverity::critical);
        QVERIFY2(QString::fromStdString(low->repair).contains("dropped the oldest prefix-cache entries"), low->repair.c_str());
        QCOMPARE(monitor.repairs(), uint64_t(1));

        auto store = PrefixStore::open(dir, 64 * n);
        std::vector<uint8_t> back(n);
        for (uint32_t i = 0; i < 10; ++i) {
            const Status s = (*store)->read(100 + i, 0, back.data(), n);
            if (i < 3) {
                QCOMPARE(s.code(), StatusCode::not_found);  // the three oldest
            } else {
                QVERIFY2(s.ok() && back == pattern(n, i), qPrintable(QString("entry %1 changed").arg(i)));
            }
        }
    }

    void oldPrefixEntriesAreDropped() {
        const std::string dir = (dir_.path() + "/old").toStdString();
        const size_t n = 4096;
        {
            auto store = PrefixStore::open(dir, 64 * n);
            for (uint32_t i = 0; i < 4; ++i) QVERIFY((*store)->write(200 + i, 0, 0, pattern(n, i).data(), n).ok());
        }
        auto probe = std::make_shared<TestProbe>();
        KvHealthMonitor monitor(probe, {.prefix_max_drops = 3});  // three a check
        std::vector<KvHealthFinding> findings = monitor.check_dir(dir, 64 * n);
        const KvHealthFinding * fresh = find(findings, KvHealthCheck::prefix_cache);
        QVERIFY2(fresh && fresh->severity == KvHealthSeverity::info, describe(findings));
        QVERIFY2(QString::fromStdString(fresh->message).contains("4 blocks"), fresh->message.c_str());
        QCOMPARE(worst_severity(findings), KvHealthSeverity::info);

        probe->now += int64_t(31) * 24 * 3600 * 1000000;  // a month later
        findings = monitor.check_dir(dir, 64 * n);
        const KvHealthFinding * old = find(findings, KvHealthCheck::prefix_cache);
        QVERIFY2(old && old->severity == KvHealthSeverity::warning, describe(findings));
        QVERIFY2(QString::fromStdString(old->repair).contains("unused for more than 30 days"), old->repair.c_str());
        QVERIFY2(QString::fromStdString(old->repair).contains("the next checks drop the rest"), old->repair.c_str());
        auto store = PrefixStore::open(dir, 64 * n);
        QCOMPARE((*store)->summary().blocks, uint64_t(1));  // the newest
        std::vector<uint8_t> back(n);
        QVERIFY((*store)->read(203, 0, back.data(), n).ok());

        findings = monitor.check_dir(dir, 64 * n);
        old = find(findings, KvHealthCheck::prefix_cache);
        QVERIFY2(old && !QString::fromStdString(old->repair).contains("the next checks"), describe(findings));
        QCOMPARE((*store)->summary().blocks, uint64_t(0));
        QCOMPARE((*store)->used_bytes(), uint64_t(0));
    }

    // A budget lowered under the cache (or another process that wrote more): back within it,
    // oldest first.
    void oversizedPrefixCacheShrinksOldestFirst() {
        const std::string dir = (dir_.path() + "/oversized").toStdString();
        const size_t n = 4096;
        {
            auto store = PrefixStore::open(dir, 64 * n);
            for (uint32_t i = 0; i < 8; ++i) QVERIFY((*store)->write(300 + i, 0, 0, pattern(n, i).data(), n).ok());
        }
        KvHealthMonitor monitor(std::make_shared<TestProbe>());
        const std::vector<KvHealthFinding> findings = monitor.check_dir(dir, 5 * n);
        const KvHealthFinding * over = find(findings, KvHealthCheck::prefix_cache);
        QVERIFY2(over && over->severity == KvHealthSeverity::warning, describe(findings));
        QVERIFY2(QString::fromStdString(over->message).contains("over its budget"), over->message.c_str());
        auto store = PrefixStore::open(dir, 64 * n);
        QVERIFY((*store)->used_bytes() <= 5 * n);
        std::vector<uint8_t> back(n);
        QCOMPARE((*store)->read(300, 0, back.data(), n).code(), StatusCode::not_found);
        QVERIFY((*store)->read(307, 0, back.data(), n).ok());
    }

    void findingsGoToTheStatsJsonAndText() {
        KvStats s;
        s.health = {{.check = KvHealthCheck::disk_space,
                     .severity = KvHealthSeverity::critical,
                     .message = "only 10 MiB is \"free\"",
                     .repair = "dropped 3 entries"}};
        s.health_checks = 4;
        s.health_repairs = 1;
        s.tiers[2].faults = 2;
        const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(to_json(s)));
        QVERIFY(doc.isObject());
        const QJsonObject health = doc.object()["health"].toObject();
        QCOMPARE(health["checks"].toInt(), 4);
        QCOMPARE(health["repairs"].toInt(), 1);
        QCOMPARE(health["tier_faults"].toObject()["disk"].toInt(), 2);
        const QJsonObject f = health["findings"].toArray().at(0).toObject();
        QCOMPARE(f["check"].toString(), QString("disk_space"));
        QCOMPARE(f["severity"].toString(), QString("critical"));
        QCOMPARE(f["message"].toString(), QString("only 10 MiB is \"free\""));
        QCOMPARE(f["repair"].toString(), QString("dropped 3 entries"));
        const QString text = QString::fromStdString(to_text(s));
        QVERIFY2(text.contains("health: 4 checks, 1 repairs") && text.contains("critical disk space: only 10 MiB"), qPrintable(text));
    }

    // ---- a live cache: each repair, and the output against the oracle ----

    // A sequence cut back frees blocks scattered through the spill files; compaction gathers
    // them and the sequence continues exactly as the all-in-RAM cache does.
    void fragmentedTierIsCompactedWithoutChangingTheOutput() {
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(31);
        const std::vector<int32_t> prompt = random_prompt(rng, 300, int32_t(m->hparams().n_vocab));
        std::vector<int32_t> longer = prompt;
        for (int i = 0; i < 60; ++i) longer.push_back(3 + int32_t(rng() % 200));
        const uint32_t n_ctx = 400;
        const SessionRun reference = run_session(m, prompt, 6, all_in_ram(n_ctx));
        QVERIFY(reference.status.ok());

        // Little RAM besides the device's layer: most blocks live on disk, and with LRU
        // demotion they go down in the order they were last read, so the cut frees slots
        // among live ones (the layer cycle's order frees a run at the files' end).
        SessionConfig c = tiered(*m, n_ctx, "fragmented");
        c.kv.host_mib = layer_mib(*m, 32, 16);
        c.kv.demotion = KvDemotion::lru;
        auto session = Session::create(m, c);
        QVERIFY2(session.ok(), session.status().message().c_str());
        QVERIFY((*session)->append(longer).ok());
        QVERIFY((*session)->sync(prompt).ok());  // the last 100 tokens' blocks go
        KvCache & kv = (*session)->kv_cache();
        const TierFragmentation before = kv.disk_fragmentation();
        qInfo("spill files: %llu slots, %llu free, largest runs %llu, measure %.2f", (unsigned long long)before.n_slots,
              (unsigned long long)before.n_free_slots, (unsigned long long)before.largest_free_runs, before.measure());
        QVERIFY(before.n_free_slots > 0);
        // Blocks still live there, between free runs: compaction must move them and keep them.
        QVERIFY(before.n_slots > before.n_free_slots && before.measure() > 0);

        // Any free slot counts as fragmentation here, so that the repair surely runs.
        KvHealthMonitor monitor(std::make_shared<TestProbe>(), {.fragmentation = 0, .fragmented_min_free_slots = 1});
        const std::vector<KvHealthFinding> findings = monitor.check(kv);
        const KvHealthFinding * frag = find(findings, KvHealthCheck::fragmentation);
        QVERIFY2(frag && frag->severity == KvHealthSeverity::warning, describe(findings));
        QVERIFY2(QString::fromStdString(frag->repair).contains("compacted the disk tier"), frag->repair.c_str());
        const TierFragmentation after = kv.disk_fragmentation();
        QCOMPARE(after.n_free_slots, uint64_t(0));
        QCOMPARE(after.n_slots, before.n_slots - before.n_free_slots);
        QCOMPARE(kv.stats().health_repairs, uint64_t(1));
        continues_like(**session, reference);
        QCOMPARE(kv.stats().faults, uint64_t(0));  // every moved block read back: nothing was recomputed
    }

    // RAM running out: the tiers' recycled slots go back, and the output stays the same.
    void memoryPressureGivesRecycledSlotsBack() {
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(32);
        const std::vector<int32_t> prompt = random_prompt(rng, 100, int32_t(m->hparams().n_vocab));
        std::vector<int32_t> longer = prompt;
        for (int i = 0; i < 80; ++i) longer.push_back(3 + int32_t(rng() % 200));
        const uint32_t n_ctx = 200;
        const SessionRun reference = run_session(m, prompt, 6, all_in_ram(n_ctx));
        auto session = Session::create(m, tiered(*m, n_ctx, "pressure"));
        QVERIFY((*session)->append(longer).ok());
        QVERIFY((*session)->sync(prompt).ok());
        KvCache & kv = (*session)->kv_cache();
        const uint64_t recycled = kv.recycled_bytes(KvTier::device) + kv.recycled_bytes(KvTier::host);
        QVERIFY(recycled > 0);

        auto probe = std::make_shared<TestProbe>();
        KvHealthMonitor monitor(probe);
        QVERIFY2(!find(monitor.check(kv), KvHealthCheck::memory), "plenty of RAM is no finding");
        probe->ram.available_bytes = probe->ram.total_bytes / 100;  // 1% free
        const std::vector<KvHealthFinding> findings = monitor.check(kv);
        const KvHealthFinding * mem = find(findings, KvHealthCheck::memory);
        QVERIFY2(mem && mem->severity == KvHealthSeverity::critical, describe(findings));
        QVERIFY2(QString::fromStdString(mem->repair).contains("recycled KV slots back"), mem->repair.c_str());
        QCOMPARE(kv.recycled_bytes(KvTier::device) + kv.recycled_bytes(KvTier::host), uint64_t(0));

        continues_like(**session, reference);

        // Free RAM that is not low against its total, but less than an empty cache's tiers
        // may take: a warning.
        auto idle = Session::create(m, tiered(*m, n_ctx, "pressure-idle"));
        QVERIFY(idle.ok());
        probe->ram = {.total_bytes = 4096, .available_bytes = 4096};
        const std::vector<KvHealthFinding> idle_findings = monitor.check((*idle)->kv_cache());
        const KvHealthFinding * grow = find(idle_findings, KvHealthCheck::memory);
        QVERIFY2(grow && grow->severity == KvHealthSeverity::warning, describe(idle_findings));
        QVERIFY2(QString::fromStdString(grow->message).contains("may still grow by"), grow->message.c_str());
    }

    // The prefix cache's writes fail (the disk tier stays in use): the monitor disables the
    // tier and moves its blocks up to RAM; when the spill files have turned bad too, the
    // blocks that no longer read back are recomputed. Either way the output is the all-in-RAM
    // cache's.
    void faultyTierIsDisabledAndItsBlocksMovedOrRecomputed_data() {
        QTest::addColumn<bool>("unreadable");
        QTest::newRow("readable") << false;
        QTest::newRow("unreadable") << true;
    }
    void faultyTierIsDisabledAndItsBlocksMovedOrRecomputed() {
        QFETCH(bool, unreadable);
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(33);
        const std::vector<int32_t> prompt = random_prompt(rng, 200, int32_t(m->hparams().n_vocab));
        const uint32_t n_ctx = 240;
        const SessionRun reference = run_session(m, prompt, 6, all_in_ram(n_ctx));
        SessionConfig c = tiered(*m, n_ctx, unreadable ? "faulty-unreadable" : "faulty-readable");
        c.kv.prefix_cache = true;
        auto io = std::make_shared<SwitchedFileIo>();
        io->fail_prefix_writes = true;
        c.io = io;
        auto session = Session::create(m, c);
        QVERIFY(session.ok());
        QVERIFY((*session)->append(prompt).ok());
        KvCache & kv = (*session)->kv_cache();
        kv.flush();  // the failed prefix-cache writes are counted
        QVERIFY(kv.stats().tiers[size_t(KvTier::disk)].faults > 0);
        QVERIFY(kv.disk_tier_enabled());
        QVERIFY(kv.stats().tiers[size_t(KvTier::disk)].blocks > 0);

        io->corrupt_spill_reads = unreadable;
        KvHealthMonitor monitor(std::make_shared<TestProbe>());
        const std::vector<KvHealthFinding> findings = monitor.check(kv);
        const KvHealthFinding * fault = find(findings, KvHealthCheck::faults);
        QVERIFY2(fault && fault->severity == KvHealthSeverity::critical, describe(findings));
        QVERIFY2(QString::fromStdString(fault->repair).contains("disabled the disk tier and moved its blocks up to RAM"),
                 fault->repair.c_str());
        QCOMPARE(QString::fromStdString(fault->repair).contains("recomputed"), unreadable);
        QVERIFY(!kv.disk_tier_enabled());
        QCOMPARE(kv.stats().tiers[size_t(KvTier::disk)].blocks, uint64_t(0));
        // Unreadable: cut where the first lost block began, and recomputed from there.
        QCOMPARE(kv.n_tokens(0) < prompt.size(), unreadable);

        QVERIFY((*session)->recompute_lost().ok());
        QCOMPARE((*session)->tokens().size(), prompt.size());
        QCOMPARE(kv.n_tokens(0), uint32_t(prompt.size()));
        continues_like(**session, reference);

        // The next check: no new fault, the tier stays off.
        QVERIFY(!find(monitor.check(kv), KvHealthCheck::faults));
    }

    // The server's batch: its disk tier turns unreadable while two requests run; the check
    // disables the tier, recover_lost() has both read their lost blocks again, and each
    // finishes with the tokens it would have got alone in an all-in-RAM session.
    void aBatchReadsAgainWhatARepairLost() {
        auto m = model("models/tiny/tiny-llama-Q8_0.gguf");
        std::mt19937 rng(34);
        const int32_t n_vocab = int32_t(m->hparams().n_vocab);
        const std::vector<std::vector<int32_t>> prompts = {random_prompt(rng, 150, n_vocab), random_prompt(rng, 120, n_vocab)};
        const uint32_t n_ctx = 240;
        const int n_gen = 12;
        GenerateParams greedy{.max_tokens = n_gen};
        greedy.sampler.temperature = 0;

        SessionConfig c = tiered(*m, n_ctx, "batch");
        c.kv.device_mib = layer_mib(*m, 320, 16);  // a layer of both sequences, RAM for two blocks:
        c.kv.host_mib = layer_mib(*m, 32, 16);     // the rest on disk
        c.kv.prefix_cache = true;
        auto io = std::make_shared<SwitchedFileIo>();
        io->fail_prefix_writes = true;  // faults on the disk tier, which stays in use
        c.io = io;
        auto batch = SequenceBatch::create(m, c, 2);
        QVERIFY2(batch.ok(), batch.status().message().c_str());
        SequenceBatch & b = **batch;
        std::vector<uint64_t> ids;
        for (const std::vector<int32_t> & prompt : prompts) {
            BatchSequenceRequest r{.prompt = prompt, .params = greedy, .selection = b.config().kv};
            const Result<uint64_t> reservation = b.reserve(r);
            QVERIFY2(reservation.ok() && b.fits_now(*reservation), reservation.status().message().c_str());
            const Result<uint64_t> id = b.add(std::move(r), *reservation);
            QVERIFY(id.ok());
            ids.push_back(*id);
        }
        std::map<uint64_t, std::vector<int32_t>> got;
        auto run = [&](int steps) {
            for (int i = 0; i < steps && b.running() > 0; ++i) {
                for (SequenceBatch::Finished & f : b.step()) {
                    QVERIFY2(f.result.ok(), f.result.status().message().c_str());
                    got[f.id] = f.result->tokens;
                }
            }
        };
        run(12);  // both prompts read, a few tokens decoded
        QVERIFY(got.empty());
        KvCache & kv = b.kv_cache();
        kv.flush();
        QVERIFY(kv.stats().tiers[size_t(KvTier::disk)].faults > 0);
        QVERIFY(kv.stats().tiers[size_t(KvTier::disk)].blocks > 0);

        io->corrupt_spill_reads = true;
        KvHealthMonitor monitor(std::make_shared<TestProbe>());
        const std::vector<KvHealthFinding> findings = monitor.check(kv);
        const KvHealthFinding * fault = find(findings, KvHealthCheck::faults);
        QVERIFY2(fault && QString::fromStdString(fault->repair).contains("recomputed"), describe(findings));
        QVERIFY(!kv.disk_tier_enabled());
        QVERIFY(b.recover_lost().empty());
        run(1000);
        QCOMPARE(b.running(), size_t(0));
        for (size_t i = 0; i < prompts.size(); ++i) {
            auto alone = Session::create(m, all_in_ram(n_ctx));
            QVERIFY(alone.ok() && (*alone)->append(prompts[i]).ok());
            const Result<GenerateResult> want = generate(**alone, greedy, {});
            QVERIFY(want.ok());
            QCOMPARE(got.at(ids[i]), want->tokens);
        }
    }

    // The engine checks once when it makes a session, then when asked and due.
    void engineChecksAtStartAndWhenDue() {
        Engine engine;
        QVERIFY(engine.load({.path = shared_path("models/stories260K.gguf").toStdString(), .backend = "cpu", .n_threads = 1}).ok());
        SessionOptions options{.n_ctx = 128, .chunk_tokens = 64};
        options.kv.dir = (dir_.path() + "/engine").toStdString();
        options.kv.disk_mib = 16;
        QVERIFY(engine.use_session(options).ok());
        QCOMPARE(engine.snapshot().kv.health_checks, uint64_t(1));
        QVERIFY(engine.check_health().ok());  // not due yet
        QCOMPARE(engine.snapshot().kv.health_checks, uint64_t(1));
        QVERIFY(engine.check_health(true).ok());
        QCOMPARE(engine.snapshot().kv.health_checks, uint64_t(2));
    }
};

QTEST_GUILESS_MAIN(TestKvHealth)
#include "test_kv_health.moc"
