// A bounded load on loopback: 200 streaming chat requests, 8 at a time, against a server
// running 4 at once with the bundled model. Every request succeeds, the server's resident
// memory after the load is what it was after a warm-up, and the throughput and the time to
// the first token (p50, p99) are reported for docs/BENCHMARKS.md.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "app/server/generation_queue.h"
#include "app/server/http_routes.h"
#include "engine/runtime/engine.h"

using namespace lr;
using namespace lr::server;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kModel = std::string(LONGREAD_SHARED_DIR) + "/models/stories260K.gguf";

uint64_t resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return uint64_t(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
    }
    return 0;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

class TestServerLoad : public QObject {
    Q_OBJECT

    Engine m_engine;
    ServerMetrics m_metrics;
    std::unique_ptr<GenerationQueue> m_queue;
    std::unique_ptr<HttpRoutes> m_routes;
    std::thread m_listener;
    int m_port = 0;

    struct Outcome {
        bool ok = false;
        double first_token_s = 0;
        size_t chunks = 0;
    };

    // One streaming request; the time from sending it to its first content chunk.
    Outcome stream_one(int i) const {
        httplib::Client c("127.0.0.1", m_port);
        c.set_read_timeout(std::chrono::seconds(120));
        const json body = {{"messages", {{{"role", "user"}, {"content", "Tell me a story number " + std::to_string(i)}}}},
                           {"max_tokens", 24},
                           {"temperature", 0.8},
                           {"seed", i},
                           {"stream", true}};
        Outcome o;
        const auto t0 = Clock::now();
        std::string buffer;
        bool done = false;
        httplib::Request request;
        request.method = "POST";
        request.path = "/v1/chat/completions";
        request.set_header("Content-Type", "application/json");
        request.body = body.dump();
        request.content_receiver = [&](const char * data, size_t n, uint64_t, uint64_t) {
            buffer.append(data, n);
            size_t at;
            while ((at = buffer.find("\n\n")) != std::string::npos) {
                const std::string event = buffer.substr(0, at);
                buffer.erase(0, at + 2);
                if (event == "data: [DONE]") {
                    done = true;
                } else if (event.starts_with("data: ")) {
                    if (o.chunks++ == 0) o.first_token_s = std::chrono::duration<double>(Clock::now() - t0).count();
                }
            }
            return true;
        };
        auto r = c.send(request);
        o.ok = r && r->status == 200 && done && o.chunks > 1;
        return o;
    }

    std::vector<Outcome> load(int n_requests, int n_clients) {
        std::vector<Outcome> outcomes{size_t(n_requests)};
        std::atomic<int> next{0};
        std::vector<std::thread> clients;
        for (int c = 0; c < n_clients; ++c) {
            clients.emplace_back([&] {
                for (int i; (i = next++) < n_requests;) outcomes[size_t(i)] = stream_one(i);
            });
        }
        for (std::thread & t : clients) t.join();
        return outcomes;
    }

private slots:
    void initTestCase() {
        std::signal(SIGPIPE, SIG_IGN);
        QVERIFY(m_engine.load({.path = kModel, .backend = "cpu", .n_threads = 2}).ok());
        SessionOptions options{.n_ctx = 256, .chunk_tokens = 64};
        options.kv.prefix_cache = false;
        auto queue = GenerationQueue::create(m_engine.model(), options, 4, m_metrics);
        QVERIFY2(queue.ok(), queue.status().message().c_str());
        m_queue = std::move(*queue);
        m_routes = std::make_unique<HttpRoutes>(HttpOptions{.model_id = "stories260K"},
                                                RequestDefaults{.kv_flags = {{"--no-prefix-cache", ""}}}, *m_queue, m_metrics);
        m_port = m_routes->bind_to_any_port("127.0.0.1");
        QVERIFY(m_port > 0);
        m_listener = std::thread([this] { m_routes->listen(); });
        while (!m_routes->running()) std::this_thread::yield();
    }

    void cleanupTestCase() {
        m_routes->stop();
        m_listener.join();
        m_routes.reset();
        m_queue.reset();
    }

    void twoHundredRequestsEightAtATime() {
        for (const Outcome & o : load(24, 8)) QVERIFY(o.ok);  // warm-up: buffers and caches at their size
        const uint64_t rss_before = resident_bytes();
        const auto t0 = Clock::now();
        const std::vector<Outcome> outcomes = load(200, 8);
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        const uint64_t rss_after = resident_bytes();
        std::vector<double> first;
        size_t chunks = 0;
        for (const Outcome & o : outcomes) {
            QVERIFY(o.ok);
            first.push_back(o.first_token_s);
            chunks += o.chunks;
        }
        qInfo(
            "200 requests, 8 at a time, server --parallel 4: %.2f s, %.1f requests/s, %.0f chunks/s; time to first token p50 %.1f ms, "
            "p99 %.1f ms; resident %.1f MiB before, %.1f MiB after",
            seconds, 200 / seconds, double(chunks) / seconds, 1e3 * percentile(first, 0.5), 1e3 * percentile(first, 0.99),
            double(rss_before) / (1 << 20), double(rss_after) / (1 << 20));
        // What a request holds is freed when it ends: the load leaves nothing behind (a
        // margin for the allocator's own arenas).
        QVERIFY2(rss_after <= rss_before + (4u << 20), qPrintable(QString::number(double(rss_after - rss_before) / (1 << 20))));
        QCOMPARE(m_queue->figures().running, 0u);
        QCOMPARE(m_queue->figures().queued, 0u);
        // The batch's cache had its health checked (when the queue started, then when due).
        QVERIFY(m_queue->kv_stats().health_checks >= 1);
    }
};

QTEST_GUILESS_MAIN(TestServerLoad)
#include "test_server_load.moc"
