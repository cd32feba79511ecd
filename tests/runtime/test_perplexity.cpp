// Perplexity against llama-perplexity's figures (../shared/reference/README.md).
#include <QtTest>

#include <cmath>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/perplexity.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

class TestPerplexity : public QObject {
    Q_OBJECT

    CpuBackend backend_{{.n_threads = 2}};

    // (test_tokenizer checks these are llama.cpp's ids of the text.)
    std::vector<int32_t> eval_tokens(const Model & model) {
        QFile f(shared_path("data/text/tinystories_style_eval.txt"));
        if (!f.open(QIODevice::ReadOnly)) return {};
        return model.tokenizer().encode(f.readAll().toStdString(), true, false);
    }

private slots:
    void matchesLlamaPerplexity_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<uint32_t>("n_ctx");
        QTest::addColumn<double>("expected");
        QTest::addColumn<double>("relative_tolerance");
        QTest::addColumn<int>("n_chunks");
        // The bar: within 0.1% for stories260K.
        QTest::newRow("stories260K-256") << "models/stories260K.gguf" << 256u << 4.2793 << 1e-3 << 18;
        QTest::newRow("stories260K-512") << "models/stories260K.gguf" << 512u << 4.2419 << 1e-3 << 9;
        // Random-weight models at -c 128 (reference/tiny/README.md).
        QTest::newRow("tiny-f32-128") << "models/tiny/tiny-llama-f32.gguf" << 128u << 552.3528 << 1e-3 << 36;
        QTest::newRow("tiny-q4_k_m-128") << "models/tiny/tiny-llama-Q4_K_M.gguf" << 128u << 549.5805 << 1e-3 << 36;
        QTest::newRow("tiny-qwen2-q8_0-128") << "models/tiny/tiny-qwen2-Q8_0.gguf" << 128u << 560.4605 << 1e-3 << 36;
        // The 2025-2026 dense architectures at -c 128 (reference/tiny-2026/README.md): phi3's
        // LongRoPE takes its short factors at this context; gemma3's 32-token windows slide
        // within every window of 128.
        const std::pair<const char *, double> archs[] = {
            {"tiny-qwen3-f32", 536.0357}, {"tiny-qwen3-Q8_0", 535.7089}, {"tiny-qwen3-Q4_K_M", 535.8217}, {"tiny-mistral3-f32", 531.0673},
            {"tiny-phi3-f32", 528.6723},  {"tiny-gemma3-f32", 518.8333}, {"tiny-gemma3-Q8_0", 518.7394},
        };
        for (const auto & [name, ppl] : archs) {
            QTest::addRow("%s-128", name) << QString("models/tiny-2026/%1.gguf").arg(name) << 128u << ppl << 1e-3 << 36;
        }
        // The mixtures of experts (gpt-oss's 32-token windows slide on layer 0, its sinks join
        // every softmax).
        const std::pair<const char *, double> moe[] = {
            {"tiny-qwen3moe-f32", 516.5576},
            {"tiny-qwen3moe-Q8_0", 516.3573},
            {"tiny-gpt-oss-f32", 535.5700},
            {"tiny-gpt-oss-MXFP4_MOE", 535.6817},
        };
        for (const auto & [name, ppl] : moe) {
            QTest::addRow("%s-128", name) << QString("models/tiny-2026/%1.gguf").arg(name) << 128u << ppl << 1e-3 << 36;
        }
    }
    void matchesLlamaPerplexity() {
        QFETCH(QString, model);
        QFETCH(uint32_t, n_ctx);
        QFETCH(double, expected);
        QFETCH(double, relative_tolerance);
        QFETCH(int, n_chunks);
        auto m = Model::load(shared_path(model).toStdString(), backend_);
        QVERIFY(m.ok());
        const std::vector<int32_t> tokens = eval_tokens(**m);
        size_t progress_calls = 0;
        auto r = compute_perplexity(*m, tokens, n_ctx, {}, [&](size_t done, size_t total) {
            ++progress_calls;
            QCOMPARE(total, size_t(n_chunks));
            QCOMPARE(done, progress_calls);
        });
        QVERIFY2(r.ok(), r.status().message().c_str());
        qInfo("PPL %.4f +/- %.4f (llama.cpp %.4f, %+.4f %%)", r->ppl, r->ppl_error, expected, 100 * (r->ppl - expected) / expected);
        QCOMPARE(int(r->n_chunks), n_chunks);
        QCOMPARE(r->n_scored, size_t(n_chunks) * (n_ctx - 1 - n_ctx / 2));
        QVERIFY2(std::abs(r->ppl - expected) / expected <= relative_tolerance,
                 qPrintable(QString("PPL %1 vs %2").arg(r->ppl).arg(expected)));
    }

    void tooShortTextIsAnError() {
        auto m = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend_);
        QVERIFY(m.ok());
        const std::vector<int32_t> few(10, 300);
        auto r = compute_perplexity(*m, few, 256);
        QCOMPARE(r.status().code(), StatusCode::invalid_argument);
        QVERIFY(QString::fromStdString(r.status().message()).contains("256"));
    }

    void logProbabilityIsNormalized() {
        const std::vector<float> logits{1.0f, 2.0f, 3.0f};
        double total = 0;
        for (int32_t t = 0; t < 3; ++t) total += std::exp(log_probability(logits, t));
        QVERIFY(std::abs(total - 1.0) < 1e-12);
    }
};

QTEST_GUILESS_MAIN(TestPerplexity)
#include "test_perplexity.moc"
