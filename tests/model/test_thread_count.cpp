// A model's logits do not depend on the number of threads: 1 to 16 (more than this machine
// has cores, so the pool is oversubscribed), for every family's layer kinds (full
// attention, sliding windows and shared KV, recurrent states, experts), quantized and float
// weights, with a policy that collects attention mass. Work is split by the shape of a job,
// never by the thread count, so the bits are the same.
#include <QtTest>

#include <cstring>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/llama_graph.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

// The logits after a prompt and after each of `steps` given tokens.
std::vector<float> run(const QString & model, int n_threads, KvPolicy policy, const std::vector<int32_t> & prompt,
                       const std::vector<int32_t> & steps) {
    CpuBackend backend({.n_threads = n_threads});
    auto m = Model::load(shared_path(model).toStdString(), backend);
    if (!m.ok()) qFatal("%s", m.status().message().c_str());
    KvCacheConfig c{.max_tokens = 256};
    c.settings.prefix_cache = false;
    c.settings.block_tokens = 16;
    c.settings.policy = policy;
    if (policy == KvPolicy::h2o) c.settings.budget_tokens = 48;
    auto kv = KvCache::create(c, (*m)->kv_shape(), backend);
    auto graph = LlamaGraph::create(**m, 64);
    if (!kv.ok() || !graph.ok()) qFatal("cannot set the model up");
    std::vector<float> logits, all;
    for (size_t at = 0; at < prompt.size(); at += 64) {  // the graph's ubatch: a chunk of 64, then the rest
        const Status s = graph->forward(**kv, 0, std::span(prompt).subspan(at, std::min<size_t>(64, prompt.size() - at)), false, logits);
        if (!s.ok()) qFatal("prompt: %s", s.message().c_str());
    }
    all = logits;
    for (int32_t t : steps) {
        const Status st = graph->forward(**kv, 0, std::span(&t, 1), false, logits);
        if (!st.ok()) qFatal("step: %s", st.message().c_str());
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

}  // namespace

class TestThreadCount : public QObject {
    Q_OBJECT

private slots:
    void logitsDoNotDependOnTheThreadCount_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("policy");
        QTest::newRow("stories260K") << "models/stories260K.gguf" << int(KvPolicy::none);
        QTest::newRow("stories260K-h2o") << "models/stories260K.gguf" << int(KvPolicy::h2o);
        QTest::newRow("llama-Q4_K_M") << "models/tiny/tiny-llama-Q4_K_M.gguf" << int(KvPolicy::none);
        QTest::newRow("qwen35") << "models/tiny-2026/tiny-qwen35-f32.gguf" << int(KvPolicy::none);
        QTest::newRow("qwen3moe") << "models/tiny-2026/tiny-qwen3moe-f32.gguf" << int(KvPolicy::none);
        QTest::newRow("gemma4") << "models/tiny-2026/tiny-gemma4-f32.gguf" << int(KvPolicy::none);
    }
    void logitsDoNotDependOnTheThreadCount() {
        QFETCH(QString, model);
        QFETCH(int, policy);
        int32_t n_vocab = 0;
        {
            CpuBackend probe({.n_threads = 1});
            auto m = Model::load(shared_path(model).toStdString(), probe);
            QVERIFY2(m.ok(), m.status().message().c_str());
            n_vocab = int32_t((*m)->hparams().n_vocab);
        }
        std::mt19937 rng(11);
        // 90 prompt tokens: a chunk of 64 and one of 26, beyond the h2o budget of 48.
        const std::vector<int32_t> prompt = random_prompt(rng, 90, n_vocab);
        std::vector<int32_t> steps = random_prompt(rng, 6, n_vocab);
        steps.erase(steps.begin());
        const std::vector<float> one = run(model, 1, KvPolicy(policy), prompt, steps);
        QVERIFY(!one.empty());
        for (int n_threads : {2, 3, 5, 8, 16}) {
            const std::vector<float> many = run(model, n_threads, KvPolicy(policy), prompt, steps);
            QCOMPARE(many.size(), one.size());
            QVERIFY2(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)) == 0,
                     qPrintable(QString("%1 threads give other logits than one").arg(n_threads)));
        }
    }
};

QTEST_GUILESS_MAIN(TestThreadCount)
#include "test_thread_count.moc"
