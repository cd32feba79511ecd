// The thread pool: every chunk runs exactly once, on any thread count, back to back, with
// idle gaps long enough for the workers to fall asleep, and while other threads compete
// for the cores (the pool must neither lose work nor wait for a descheduled worker).

#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/backend/cpu/thread_pool.h"

using namespace lr;

namespace {

// Runs n_chunks chunks and checks each ran exactly once, with thread ids in range.
bool run_once(ThreadPool & pool, int64_t n_chunks) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n_chunks));
    std::atomic<bool> bad_thread{false};
    pool.run(n_chunks, [&](int64_t c, int ith) {
        if (ith < 0 || ith >= pool.n_threads()) bad_thread = true;
        hits[size_t(c)].fetch_add(1, std::memory_order_relaxed);
    });
    for (auto & h : hits) {
        if (h.load() != 1) return false;
    }
    return !bad_thread;
}

}  // namespace

class TestThreadPool : public QObject {
    Q_OBJECT
private slots:
    void everyChunkOnce_data() {
        QTest::addColumn<int>("threads");
        for (int t : {1, 2, 3, 8}) QTest::newRow(qPrintable(QString("%1 threads").arg(t))) << t;
    }
    void everyChunkOnce() {
        QFETCH(int, threads);
        ThreadPool pool(threads);
        QCOMPARE(pool.n_threads(), threads);
        for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) QVERIFY2(run_once(pool, n), qPrintable(QString("%1 chunks").arg(n)));
        // Many small jobs back to back: the epoch/claim protocol under churn.
        for (int i = 0; i < 20000; ++i) QVERIFY(run_once(pool, 1 + i % 5));
    }

    void parallelForCoversRange() {
        ThreadPool pool(3);
        for (int64_t n : {1, 5, 17, 1000, 12345}) {
            std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
            pool.parallel_for(n, 7, [&](int64_t b, int64_t e, int) {
                for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1);
            });
            for (auto & s : seen) QCOMPARE(s.load(), 1);
        }
    }

    void perThreadShares() {
        ThreadPool pool(4);
        std::vector<std::atomic<int>> shares(4);
        std::atomic<int> wrong_n{0};
        pool.run([&](int i, int n) {
            if (n != 4) wrong_n.fetch_add(1);
            shares[size_t(i)].fetch_add(1);
        });
        QCOMPARE(wrong_n.load(), 0);
        for (auto & s : shares) QCOMPARE(s.load(), 1);
    }

    // Workers fall asleep between jobs and must wake for the next one.
    void wakesAfterIdle() {
        ThreadPool pool(2);
        for (int i = 0; i < 5; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(3));
            QVERIFY(run_once(pool, 16));
        }
    }

    // More busy threads than cores: every job still completes with every chunk once.
    void oversubscribed() {
        const int n_busy = int(std::thread::hardware_concurrency()) + 2;
        std::atomic<bool> stop{false};
        std::vector<std::thread> busy;
        for (int i = 0; i < n_busy; ++i) {
            busy.emplace_back([&] {
                volatile uint64_t x = 0;
                while (!stop.load(std::memory_order_relaxed)) x = x + 1;
            });
        }
        ThreadPool pool(4);
        bool ok = true;
        for (int i = 0; i < 300 && ok; ++i) ok = run_once(pool, 1 + i % 9);
        stop = true;
        for (std::thread & t : busy) t.join();
        QVERIFY(ok);
    }
};

QTEST_GUILESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
