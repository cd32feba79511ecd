// Whole models on the CUDA backend (label gpu):
//   - llama.cpp's reference logits (stories260K and the tiny random models in every weight
//     type, llama3 rope scaling, qwen2, the 2025-2026 architectures, the hybrids qwen35 and
//     qwen35moe) within the CPU test's tolerances (quantized types a little wider: the CPU
//     quantizes activations to q8 like llama.cpp, CUDA does not);
//   - the same greedy tokens and logits as the CPU backend for stories260K, random-weight
//     models (made here with make-model) and tiny-qwen35, prefill in chunks long enough for
//     the GEMM path (and, for the hybrid, carrying the delta rule's state between chunks);
//   - placement is lossless: with the KV cache forced through VRAM, page-locked RAM and disk,
//     every logit is bit-identical to the all-in-VRAM run;
//   - weights streamed from RAM (--gpu-layers) give the same logits as weights in VRAM;
//   - H2O (attention mass collected by the kernel) runs and evicts.
#include <QtTest>

#include <random>

#include "engine/model/random_model_writer.h"
#include "engine/runtime/session.h"
#include "gpu_test_support.h"
#include "support/reference_data.h"
#include "support/session_run.h"

using namespace lr;
using namespace lr::test;

namespace {

SessionConfig in_memory(uint32_t n_ctx, uint32_t chunk, const QString & dir) {
    SessionConfig c{.n_ctx = n_ctx, .chunk_tokens = chunk};
    c.kv.prefix_cache = false;
    c.kv.dir = dir.toStdString();
    c.kv.disk_mib = 0.001;  // no room: nothing spills
    c.kv.host_mib = 0.001;
    return c;
}

}  // namespace

class TestCudaModel : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> gpu_;
    CpuBackend cpu_{{.n_threads = 2}};
    QTemporaryDir dir_;
    std::map<QString, std::shared_ptr<const Model>> models_;

    std::shared_ptr<const Model> load(Backend & b, const QString & path) {
        auto m = Model::load(path.toStdString(), b);
        if (!m.ok()) qFatal("%s", m.status().message().c_str());
        return *m;
    }
    std::shared_ptr<const Model> on_gpu(const QString & path) {
        auto & m = models_[path];
        if (!m) m = load(*gpu_, path);
        return m;
    }
    // A random-weight model of the "tiny" preset (n_embd 256, 2 layers, GQA) in `type`.
    QString random_model(const QString & type, bool qwen2 = false) {
        const QString path = dir_.path() + "/random-" + type + (qwen2 ? "-qwen2" : "") + ".gguf";
        if (QFile::exists(path)) return path;
        RandomModelSpec spec{.preset = qwen2 ? "tiny-qwen2" : "tiny",
                             .weights = *weight_format_from_name(type.toStdString()),
                             .output_path = path.toStdString(),
                             .seed = 11,
                             .n_threads = 2};
        if (Status s = write_random_model(spec); !s.ok()) qFatal("%s", s.message().c_str());
        return path;
    }

private slots:
    void initTestCase() {
        LR_REQUIRE_DEVICE(gpu_);
        QVERIFY(dir_.isValid());
        qInfo("device under test: %s", gpu_->name().c_str());
    }

    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("logits");
        QTest::addColumn<float>("tolerance");
        QTest::newRow("stories260K") << "models/stories260K.gguf"
                                     << "reference/stories260K/stories260K_logits.json" << 6e-3f;
        const std::pair<const char *, float> tiny[] = {
            {"tiny-llama-f32", 1e-3f},  {"tiny-llama-F16", 1e-3f},      {"tiny-llama-BF16", 4e-3f},     {"tiny-llama-Q8_0", 5e-2f},
            {"tiny-llama-Q4_0", 5e-2f}, {"tiny-llama-Q4_1", 5e-2f},     {"tiny-llama-Q5_0", 5e-2f},     {"tiny-llama-Q5_1", 5e-2f},
            {"tiny-llama-Q2_K", 5e-2f}, {"tiny-llama-Q3_K", 5e-2f},     {"tiny-llama-Q4_K", 5e-2f},     {"tiny-llama-Q5_K", 5e-2f},
            {"tiny-llama-Q6_K", 5e-2f}, {"tiny-llama-IQ4_NL", 5e-2f},   {"tiny-llama-Q4_K_M", 5e-2f},   {"tiny-qwen2-f32", 1e-3f},
            {"tiny-qwen2-Q8_0", 5e-2f}, {"tiny-llama3rope-f32", 2e-4f}, {"tiny-llama-tied-f32", 1e-3f},
        };
        for (const auto & [name, tol] : tiny) {
            QTest::newRow(name) << QString("models/tiny/%1.gguf").arg(name) << QString("reference/tiny/%1.logits.json").arg(name) << tol;
        }
        // The 2025-2026 dense architectures: q/k norms, YaRN and the attention temperature,
        // LongRoPE and fused projections, GELU, post-norms and sliding windows.
        const std::pair<const char *, float> archs[] = {
            {"tiny-qwen3-f32", 1e-3f},
            {"tiny-qwen3-Q8_0", 5e-2f},
            {"tiny-qwen3-Q4_K_M", 5e-2f},
            {"tiny-mistral3-f32", 1e-3f},
            {"tiny-phi3-f32", 1e-3f},
            {"tiny-gemma3-f32", 1e-3f},
            {"tiny-gemma3-Q8_0", 5e-2f},
            {"tiny-gemma4-f32", 5e-3f},  // 3.6e-3 emulated (its attention amplifies last bits: test_reference_logits)
            // The mixtures of experts (Backend::moe_ffn). NOTE: not tiny-gpt-oss-MXFP4_MOE: one of
            // its tokens has a router near-tie (4th and 5th logits 3.0e-4 apart in layer 1), which
            // the device's f32 activations for the Q8_0 projections (llama.cpp quantizes them to
            // q8) turn the other way: 0.62 in the emulation (LONGREAD_GPU_TESTS_ON_CPU=emulate).
            {"tiny-qwen3moe-f32", 1e-3f},
            {"tiny-qwen3moe-Q8_0", 5e-2f},
            {"tiny-gpt-oss-f32", 1e-3f},
            // The hybrids (Gated DeltaNet: the delta rule chunked over the 207-token prompt,
            // recurrent in the steps), with the f32 rows' bound: emulated 7.2e-6 and 1.7e-5
            // (LONGREAD_GPU_TESTS_ON_CPU=emulate); the device adds expf's 2 ulp in the delta
            // rule, ~1e-7 of its outputs (test_cuda_ops), and cuBLAS's order of sums, which
            // the f32 rows above already carry (tiny-qwen3-f32: 1.6e-4 emulated).
            {"tiny-qwen35-f32", 1e-3f},
            {"tiny-qwen35moe-f32", 1e-3f},
        };
        for (const auto & [name, tol] : archs) {
            QTest::newRow(name) << QString("models/tiny-2026/%1.gguf").arg(name) << QString("reference/tiny-2026/%1.logits.json").arg(name)
                                << tol;
        }
    }
    void matchesLlamaCpp() {
        QFETCH(QString, model);
        QFETCH(QString, logits);
        QFETCH(float, tolerance);
        auto m = on_gpu(shared_path(model));
        const std::vector<ReferenceRun> runs = read_reference_logits(shared_path(logits));
        QVERIFY(!runs.empty());
        const uint32_t n_vocab = m->hparams().n_vocab;
        // Whole prompts (207 tokens) in one ubatch; llama.cpp's n_ctx (phi3's LongRoPE factors).
        auto graph = LlamaGraph::create(*m, 256, 512);
        QVERIFY(graph.ok());
        float worst = 0;
        for (const ReferenceRun & r : runs) {
            auto kv = KvCache::create(KvCacheConfig{.max_tokens = 512}, m->kv_shape(), *gpu_);
            QVERIFY(kv.ok());
            std::vector<float> all;
            QVERIFY(graph->forward(**kv, 0, r.prompt_tokens, true, all).ok());
            for (size_t p = 0; p < r.prompt_position_logits.size(); ++p) {
                worst = std::max(worst, max_abs_diff(all.data() + p * n_vocab, r.prompt_position_logits[p]));
            }
            std::vector<float> last(all.end() - n_vocab, all.end());
            for (size_t step = 0; step < r.steps.size(); ++step) {
                worst = std::max(worst, max_abs_diff(last.data(), r.steps[step].logits));
                if (top2_gap(r.steps[step].logits) > 2 * tolerance) QCOMPARE(argmax(last, n_vocab), r.steps[step].argmax);
                if (step >= r.generated.size()) break;
                const int32_t token = r.generated[step];
                QVERIFY(graph->forward(**kv, 0, std::span(&token, 1), false, last).ok());
            }
        }
        qInfo("max |d| vs llama.cpp %.3g", double(worst));
        QVERIFY2(worst <= tolerance, qPrintable(QString("logits differ by %1").arg(worst)));
    }

    // The same tokens and logits as the CPU backend, with prompts long enough for the
    // prefill GEMM (chunks of more than 8 tokens) and several KV blocks.
    void matchesCpu_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<float>("tolerance");
        QTest::newRow("stories260K") << shared_path("models/stories260K.gguf") << 1e-2f;
        QTest::newRow("tiny-llama-Q4_K") << shared_path("models/tiny/tiny-llama-Q4_K.gguf") << 8e-2f;
        QTest::newRow("random-Q4_K") << "random:Q4_K" << 8e-2f;
        QTest::newRow("random-Q8_0") << "random:Q8_0" << 8e-2f;
        QTest::newRow("random-F16") << "random:F16" << 2e-2f;
        QTest::newRow("random-Q6_K-qwen2") << "random-qwen2:Q6_K" << 8e-2f;
        // The delta rule's state carried over ubatches of 64, 64 and 22 tokens, then the steps
        // (emulated: 2.3e-6).
        QTest::newRow("tiny-qwen35-f32") << shared_path("models/tiny-2026/tiny-qwen35-f32.gguf") << 1e-3f;
    }
    void matchesCpu() {
        QFETCH(QString, model);
        QFETCH(float, tolerance);
        QString path = model;
        if (model.startsWith("random")) path = random_model(model.section(':', 1), model.startsWith("random-qwen2"));
        auto mg = on_gpu(path);
        auto mc = load(cpu_, path);
        std::mt19937 rng(5);
        const std::vector<int32_t> prompt = random_prompt(rng, 150, int32_t(mc->hparams().n_vocab));
        const int steps = 12;
        const SessionRun ref = run_session(mc, prompt, steps, in_memory(512, 64, dir_.path() + "/cpu"));
        QVERIFY2(ref.status.ok(), ref.status.message().c_str());
        const SessionRun got = run_session(mg, prompt, steps, in_memory(512, 64, dir_.path() + "/gpu"), ref.tokens);
        QVERIFY2(got.status.ok(), got.status.message().c_str());
        float worst = 0;
        int clear_mismatches = 0;
        for (size_t i = 0; i < ref.logits.size(); ++i) {
            worst = std::max(worst, max_abs_diff(got.logits[i].data(), ref.logits[i]));
            const size_t n = ref.logits[i].size();
            if (argmax(got.logits[i], n) != argmax(ref.logits[i], n) && top2_gap(ref.logits[i]) > 2 * tolerance) ++clear_mismatches;
        }
        qInfo("max |d| vs CPU %.3g", double(worst));
        QVERIFY2(worst <= tolerance, qPrintable(QString("logits differ by %1").arg(worst)));
        QCOMPARE(clear_mismatches, 0);
    }

    // Lossless placement on the GPU: blocks forced through page-locked RAM and disk (the
    // I/O thread's copies on their own stream) change no bit.
    void tieredEqualsAllInVram_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("seed");
        for (int seed = 1; seed <= 3; ++seed) {
            QTest::newRow(qPrintable(QString("stories-%1").arg(seed))) << shared_path("models/stories260K.gguf") << seed;
            QTest::newRow(qPrintable(QString("tiny-q8-%1").arg(seed))) << shared_path("models/tiny/tiny-llama-Q8_0.gguf") << seed;
        }
    }
    void tieredEqualsAllInVram() {
        QFETCH(QString, model);
        QFETCH(int, seed);
        auto m = on_gpu(model);
        std::mt19937 rng{uint32_t(seed)};
        const uint32_t bt = std::array{4u, 8u, 16u, 32u}[rng() % 4];
        const uint32_t chunk = 5 + rng() % 60;
        const std::vector<int32_t> prompt = random_prompt(rng, 60 + rng() % 200, int32_t(m->hparams().n_vocab));
        const int steps = 6;
        const uint32_t n_ctx = uint32_t(prompt.size()) + steps + 1;
        SessionConfig all = in_memory(n_ctx, chunk, dir_.path() + "/vram-" + QString::number(seed));
        all.kv.block_tokens = bt;
        const SessionRun reference = run_session(m, prompt, steps, all);
        QVERIFY2(reference.status.ok(), reference.status.message().c_str());

        SessionConfig tiered{.n_ctx = n_ctx, .chunk_tokens = chunk};
        tiered.kv.block_tokens = bt;
        tiered.kv.prefix_cache = false;
        const double layer = layer_mib(*m, n_ctx, bt), block = layer_mib(*m, bt, bt);
        tiered.kv.device_mib = layer * (1.0 + double(rng() % 50) / 100.0);
        tiered.kv.host_mib = std::max(2 * block, layer * (0.3 + double(rng() % 60) / 100.0));
        tiered.kv.disk_mib = 64;
        tiered.kv.dir = (dir_.path() + "/tiered-" + QString::number(seed)).toStdString();
        const SessionRun r = run_session(m, prompt, steps, tiered, reference.tokens);
        QVERIFY2(r.status.ok(), r.status.message().c_str());
        QCOMPARE(r.logits.size(), reference.logits.size());
        for (size_t i = 0; i < r.logits.size(); ++i) QVERIFY2(r.logits[i] == reference.logits[i], qPrintable(QString("row %1").arg(i)));
        // The blocks really went through every tier.
        QVERIFY(r.stats.tiers[1].bytes_in > 0);
        QVERIFY(r.stats.tiers[2].bytes_in > 0);
        QVERIFY(r.stats.block_hits < r.stats.block_reads);
        qInfo("hit rate %.2f, prefetch hits %llu", double(r.stats.block_hits) / double(r.stats.block_reads),
              (unsigned long long)r.stats.prefetch_hits);
    }

    // --gpu-layers: weights left in page-locked RAM and read over PCIe give the same logits.
    void streamedLayersSameLogits() {
        if (gpu_->kind() != BackendKind::cuda) QSKIP("CUDA only");
        const QString path = random_model("Q4_K");
        auto resident = on_gpu(path);
        std::unique_ptr<Backend> partial;
        // The budget covers the global tensors only: both layers stream.
        LR_REQUIRE_DEVICE(partial, CudaBackendOptions{.weight_vram_budget_bytes = 1});
        auto streamed = load(*partial, path);
        QVERIFY(static_cast<CudaBackend &>(*partial).streamed_weight_bytes() > 0);
        std::mt19937 rng(3);
        const std::vector<int32_t> prompt = random_prompt(rng, 40, int32_t(resident->hparams().n_vocab));
        const SessionRun a = run_session(resident, prompt, 4, in_memory(128, 16, dir_.path() + "/res"));
        const SessionRun b = run_session(streamed, prompt, 4, in_memory(128, 16, dir_.path() + "/str"), a.tokens);
        QVERIFY(a.status.ok() && b.status.ok());
        for (size_t i = 0; i < a.logits.size(); ++i) QVERIFY2(a.logits[i] == b.logits[i], qPrintable(QString("row %1").arg(i)));
    }

    // H2O needs the attention mass from the kernel: it evicts, and the tokens kept match the
    // CPU's count (the policy's budget).
    void h2oRuns() {
        auto mg = on_gpu(shared_path("models/stories260K.gguf"));
        auto mc = load(cpu_, shared_path("models/stories260K.gguf"));
        std::mt19937 rng(8);
        const std::vector<int32_t> prompt = random_prompt(rng, 200, int32_t(mc->hparams().n_vocab));
        SessionConfig c = in_memory(300, 32, dir_.path() + "/h2o");
        c.kv.policy = KvPolicy::h2o;
        c.kv.keep_ratio = 0.3;
        const SessionRun ref = run_session(mc, prompt, 8, c);
        const SessionRun got = run_session(mg, prompt, 8, c, ref.tokens);
        QVERIFY2(got.status.ok(), got.status.message().c_str());
        QVERIFY(got.stats.tokens_kept < got.stats.tokens_seen);
        QCOMPARE(got.stats.tokens_kept, ref.stats.tokens_kept);
        for (const auto & row : got.logits) {
            for (float v : row) QVERIFY(std::isfinite(v));
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaModel)
#include "test_cuda_model.moc"
