// The engine against llama.cpp's reference outputs: logits at every prompt position and
// after each greedy step, for the trained stories260K model and for random-weight models in
// every weight type and architecture variant (../shared/reference).
#include <QtTest>

#include <span>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/model/llama_graph.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

struct Comparison {
    float max_prompt_diff = 0;
    float max_step_diff = 0;
    int greedy_mismatches_with_clear_gap = 0;
    QString first_mismatch;
};

// Measured 5.0e-4 / 2.5e-4 with the fused AVX2 attention (the default on x86-64), 1.0e-3 /
// 1.0e-3 with the scalar reference attention (see matchesLlamaCpp_data).
float stories_tolerance() { return runs_avx2(detect_cpu_isa()) ? 6e-4f : 1.5e-3f; }

// Runs each reference prompt (prefill with every position's logits, then the reference's
// greedy tokens one by one) and compares with the reference.
Comparison compare_with_reference(const QString & model_path, const QString & logits_path, KvCacheConfig kv_config, uint32_t ubatch_tokens,
                                  CpuIsa isa = CpuIsa::best) {
    Comparison c;
    CpuBackend backend({.n_threads = 2, .isa = isa});
    auto model = Model::load(model_path.toStdString(), backend);
    if (!model.ok()) {
        c.first_mismatch = QString::fromStdString(model.status().message());
        c.max_prompt_diff = INFINITY;
        return c;
    }
    const std::vector<ReferenceRun> runs = read_reference_logits(logits_path);
    if (runs.empty()) {
        c.first_mismatch = "no reference runs in " + logits_path;
        c.max_prompt_diff = INFINITY;
        return c;
    }
    const uint32_t n_vocab = (*model)->hparams().n_vocab;
    // llama.cpp's reference runs had n_ctx 512 (phi3's LongRoPE factors depend on it).
    auto graph = LlamaGraph::create(**model, ubatch_tokens, 512);
    for (const ReferenceRun & run : runs) {
        kv_config.max_tokens = 512;
        auto kv = KvCache::create(kv_config, (*model)->kv_shape(), backend);
        std::vector<float> logits;
        // Prefill in ubatches of ubatch_tokens, keeping every position's logits.
        std::vector<float> all;
        for (size_t at = 0; at < run.prompt_tokens.size(); at += ubatch_tokens) {
            const size_t n = std::min<size_t>(ubatch_tokens, run.prompt_tokens.size() - at);
            Status s = graph->forward(**kv, 0, std::span(run.prompt_tokens).subspan(at, n), true, logits);
            if (!s.ok()) {
                c.first_mismatch = QString::fromStdString(s.message());
                c.max_prompt_diff = INFINITY;
                return c;
            }
            all.insert(all.end(), logits.begin(), logits.end());
        }
        for (size_t p = 0; p < run.prompt_position_logits.size(); ++p) {
            c.max_prompt_diff = std::max(c.max_prompt_diff, max_abs_diff(all.data() + p * n_vocab, run.prompt_position_logits[p]));
        }
        // Greedy steps: feed the reference's tokens so a near-tie cannot derail the comparison.
        std::vector<float> last(all.end() - n_vocab, all.end());
        for (size_t step = 0; step < run.steps.size(); ++step) {
            const ReferenceStep & ref = run.steps[step];
            c.max_step_diff = std::max(c.max_step_diff, max_abs_diff(last.data(), ref.logits));
            if (argmax(last, n_vocab) != ref.argmax && top2_gap(ref.logits) > 1e-2f) {
                ++c.greedy_mismatches_with_clear_gap;
                if (c.first_mismatch.isEmpty()) c.first_mismatch = QString("%1 step %2").arg(run.prompt).arg(step);
            }
            if (step >= run.generated.size()) break;
            const int32_t token = run.generated[step];
            Status s = graph->forward(**kv, 0, std::span(&token, 1), false, last);
            if (!s.ok()) {
                c.first_mismatch = QString::fromStdString(s.message());
                c.max_step_diff = INFINITY;
                return c;
            }
        }
    }
    return c;
}

// Every position's logits of `tokens`, prefilled in ubatches of 64.
std::vector<float> all_logits(const QString & model_path, const std::vector<int32_t> & tokens, CpuIsa isa) {
    CpuBackend backend({.n_threads = 2, .isa = isa});
    auto model = Model::load(model_path.toStdString(), backend);
    if (!model.ok()) return {};
    auto graph = LlamaGraph::create(**model, 64, 512);
    auto kv = KvCache::create(KvCacheConfig{.max_tokens = 512}, (*model)->kv_shape(), backend);
    std::vector<float> logits, all;
    for (size_t at = 0; at < tokens.size(); at += 64) {
        const size_t n = std::min<size_t>(64, tokens.size() - at);
        if (!graph->forward(**kv, 0, std::span(tokens).subspan(at, n), true, logits).ok()) return {};
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

}  // namespace

class TestReferenceLogits : public QObject {
    Q_OBJECT
private slots:
    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("logits");
        QTest::addColumn<float>("tolerance");
        // NOTE: llama.cpp rounds q and the softmax weights to f16 (as we do: without it stories
        // moves by 1e-2 to 6e-2), so a last-bit difference in any earlier op can flip an f16
        // rounding and move a logit by up to ~5e-3 (stories: head_dim 8, sharp attention). Which
        // positions flip is chance: on 255-token windows of the eval text, two variants that
        // differ only in last bits (SiLU's exp, or the fused vs the reference attention) differ
        // by 2e-3 to 1.2e-2, where the shared prompts' 35 positions show 2e-4 to 2.4e-3. What
        // is left of such differences: the fused attention sums weights * V slot by slot, not
        // in llama.cpp's 16-lane order (which would double its cost), and stories differs from
        // llama.cpp by 1-2 ulp already at position 0 for a reason not found (tiny-llama-f32,
        // the same ops in other sizes, matches bit for bit on the scalar path). Measured (AVX2):
        // stories 5.0e-4 / 2.5e-4 (8.9e-4 / 5.8e-4 before SiLU took ggml_expf), BF16 2.3e-3 /
        // 2.9e-3 (its activations, rounded to bf16, turn the attention's last-bit differences
        // into 2^-8 steps), F16 0 / 2.1e-4, F32 models within 3e-5. With CpuIsa::scalar:
        // stories 1.0e-3 / 1.0e-3; BF16 (since its products follow vdpbf16ps), F16 and three
        // F32 models bit-identical.
        QTest::newRow("stories260K") << "models/stories260K.gguf"
                                     << "reference/stories260K/stories260K_logits.json" << stories_tolerance();
        // Each model's tolerance is what the SIMD kernels measure (1.5x, rounded up, at
        // least 1e-4: float-order changes move logits by ~1e-6, a wrong scale or a flipped
        // activation level by 1e-3 and more), and without them (another CPU) the loose bound
        // of the engine-foundation issue: float types 1e-3, quantized types 2e-2. Most
        // quantized files match llama.cpp to ~1e-7 at every position; the others differ from
        // one position on by ~1e-2, where one 8-bit activation level rounds the other way (its
        // effect runs through the later positions' attention), see the notes below.
        struct Tiny {
            const char * name;
            float measured;  // the bound with the SIMD kernels
            float loose;     // without them
            float tolerance() const { return runs_avx2(detect_cpu_isa()) ? measured : loose; }
        };
        // Measured max |d| prompt / steps (AVX2 and AVX-512 alike unless both are given: the
        // AVX-512 prefill sums each row's blocks in another order, so another activation
        // level may round the other way) in the comments.
        const Tiny tiny[] = {
            {"tiny-llama-f32", 1e-4f, 1e-3f},       // 2.4e-7 / 3.1e-5
            {"tiny-llama-F16", 5e-4f, 1e-3f},       // 0 / 2.1e-4
            {"tiny-llama-BF16", 4e-3f, 4e-3f},      // 2.3e-3 / 2.9e-3
            {"tiny-llama-Q8_0", 1e-4f, 2e-2f},      // 1.8e-7 / 1.2e-7
            {"tiny-llama-Q4_0", 1e-4f, 2e-2f},      // 2.7e-7 / 2.4e-7
            {"tiny-llama-Q4_1", 1.5e-2f, 2e-2f},    // 3.6e-7 / 8.8e-3; AVX-512 9.6e-3 / 1.1e-2
            {"tiny-llama-Q5_0", 2e-2f, 2e-2f},      // 1.0e-2 / 1.1e-2
            {"tiny-llama-Q5_1", 1.5e-2f, 2e-2f},    // 9.2e-3 / 8.6e-3
            {"tiny-llama-Q2_K", 1e-4f, 2e-2f},      // 3.6e-7 / 4.2e-7
            {"tiny-llama-Q3_K", 1.5e-2f, 2e-2f},    // 9.7e-3 / 4.2e-7; AVX-512 1.5e-3 / 4.2e-7
            {"tiny-llama-Q4_K", 1e-4f, 2e-2f},      // 4.8e-7 / 6.0e-7
            {"tiny-llama-Q5_K", 2e-2f, 2e-2f},      // 1.5e-2 / 1.75e-2
            {"tiny-llama-Q6_K", 1e-4f, 2e-2f},      // 2.4e-7 / 7.2e-6
            {"tiny-llama-IQ4_NL", 1e-2f, 2e-2f},    // 4.3e-3 / 7.0e-3
            {"tiny-llama-Q4_K_M", 2.5e-3f, 2e-2f},  // 1.6e-3 / 3.6e-7
            {"tiny-qwen2-f32", 1e-4f, 1e-3f},       // 4.6e-6 / 6.3e-6
            {"tiny-qwen2-Q8_0", 1e-4f, 2e-2f},      // 1.8e-7 / 1.2e-7
            {"tiny-llama3rope-f32", 1e-4f, 2e-4f},  // 2.6e-5 / 3.5e-6
            {"tiny-llama-tied-f32", 1e-4f, 1e-3f},  // 2.4e-7 / 3.6e-7
        };
        for (const Tiny & t : tiny) {
            QTest::newRow(t.name) << QString("models/tiny/%1.gguf").arg(t.name) << QString("reference/tiny/%1.logits.json").arg(t.name)
                                  << t.tolerance();
        }
        // The 2025-2026 weight types (reference/tiny-2026/README.md: the IQ2_XXS, IQ2_XS and
        // IQ1_S files keep token_embd in Q2_K). Measured max |d| prompt / steps (AVX2 kernels;
        // the AVX-512 prefill, another float order, measures 0.018-0.022 / 0.014-0.020 alike)
        // in the comments. MXFP4 (Q8_0 activations) matches to float noise. NOTE: the types
        // paired with Q8_K sit at about the quantized types' 2e-2, a little above it for four:
        // every difference above 1e-4 is a single Q8_K activation level rounding the other
        // way at one position (most positions match to 4e-7; isolated ones jump to 1e-2 and
        // the next is back at 1e-7 or 1e-5), from last-bit differences in the float sums of llama.cpp's
        // (August 2026) kernels that neither our scalar (ggml's generic order) nor our AVX2
        // order (llama.cpp's x86 lanes as published) reproduces; the same happens with Q5_K
        // (1.5e-2) and Q5_0 (1.0e-2) above. Greedy tokens agree wherever the gap exceeds 1e-2.
        const Tiny tiny2026[] = {
            {"tiny-llama-IQ4_XS", 2.5e-2f, 2.5e-2f},   // 0.020 / 0.020
            {"tiny-llama-IQ3_XXS", 2.5e-2f, 2.5e-2f},  // 0.0196 / 0.0175
            {"tiny-llama-IQ3_S", 2.5e-2f, 2.5e-2f},    // 0.0182 / 0.0137
            {"tiny-llama-IQ2_XXS", 2.5e-2f, 2.5e-2f},  // 0.0210 / 0.0180
            {"tiny-llama-IQ2_XS", 2.5e-2f, 2.5e-2f},   // 0.0095 / 3.6e-7; AVX-512 0.0194 / 0.0143
            {"tiny-llama-IQ2_S", 2.5e-2f, 2.5e-2f},    // 0.0198 / 0.0145
            {"tiny-llama-IQ1_S", 2.5e-2f, 2.5e-2f},    // 0.0191 / 0.0160
            {"tiny-llama-IQ1_M", 2.5e-2f, 2.5e-2f},    // 0.0232 / 0.0144
            {"tiny-llama-TQ2_0", 2.5e-2f, 2.5e-2f},    // 0.0221 / 0.0201
            {"tiny-llama-MXFP4", 1e-4f, 2e-2f},        // 1.2e-7 / 1.2e-7
        };
        for (const Tiny & t : tiny2026) {
            QTest::newRow(t.name) << QString("models/tiny-2026/%1.gguf").arg(t.name)
                                  << QString("reference/tiny-2026/%1.logits.json").arg(t.name) << t.tolerance();
        }
        // The 2025-2026 dense architectures (reference/tiny-2026/README.md): q/k norms (qwen3),
        // YaRN and the attention temperature (mistral3), LongRoPE with n_ctx 512's long factors
        // and fused projections (phi3), GELU, post-norms and 32-token sliding windows (gemma3).
        // Measured max |d| prompt / steps (AVX2) in the comments. Most positions match to 1e-7;
        // the others jump to ~1e-4, where an f16 rounding of a softmax weight goes the other
        // way (exp differs from llama.cpp's in the last bit, and their q.k of normed heads
        // are large): about llama.cpp's own spread (its F32 cache moves these models by
        // 5.7e-4..7.6e-4). Through Q8_0/Q4_K activations one such step can flip an 8-bit
        // activation level: the quantized files sit near 1e-2, within the quantized types' 2e-2.
        const Tiny archs[] = {
            {"tiny-qwen3-f32", 2.5e-4f, 1e-3f},   // 1.4e-4 / 3.9e-5
            {"tiny-qwen3-Q8_0", 2e-2f, 2e-2f},    // 1.1e-2 / 1.1e-2
            {"tiny-qwen3-Q4_K_M", 2e-2f, 2e-2f},  // 1.6e-2 / 1.2e-2
            {"tiny-mistral3-f32", 2e-4f, 1e-3f},  // 1.0e-4 / 8.6e-5
            {"tiny-phi3-f32", 5e-4f, 1e-3f},      // 2.2e-4 / 2.9e-5
            {"tiny-gemma3-f32", 5e-4f, 1e-3f},    // 3.1e-4 / 2.5e-4
            {"tiny-gemma3-Q8_0", 2e-2f, 2e-2f},   // 1.5e-2 / 1.1e-2
            // NOTE: Gemma 4 attends with scale 1 on RMS-normed q and k (logits of tens), which
            // turns last-bit differences into 1e-3s: llama.cpp's own F32 cache moves it by 0.036,
            // and our two CPU paths differ from each other by 3.1e-3 (pathsAgreeOutsideReference).
            // Positions 0-2 (attention over one to three keys) match to 2e-4; the rest is that
            // noise, no feature: removing any of them moves prompt 2 by 0.6-1.3 (README).
            {"tiny-gemma4-f32", 5e-3f, 5e-3f},  // 3.8e-3 / 1.3e-3 (scalar path 2.6e-3 / 1.8e-3)
        };
        // The mixtures of experts: routing on the host, the experts through Backend::moe_ffn.
        // A routing decision near a tie could flip on a last-bit difference and move logits a
        // lot; none does here. The quantized files sit where their dense siblings do (one Q8_0
        // activation level of the hidden state, see above; gpt-oss's MXFP4_MOE keeps attention
        // and embeddings in Q8_0, the scalar path gives 1.2e-2 / 9.0e-3). Without the attention
        // sinks gpt-oss moves by 0.72, the README's "sinks removed". Measured max |d| prompt /
        // steps (AVX2):
        const Tiny moe[] = {
            {"tiny-qwen3moe-f32", 1e-4f, 1e-3f},       // 4.8e-5 / 2.6e-5
            {"tiny-qwen3moe-Q8_0", 1e-2f, 2e-2f},      // 5.8e-3 / 5.6e-3
            {"tiny-gpt-oss-f32", 5e-4f, 1e-3f},        // 3.2e-4 / 1.8e-5
            {"tiny-gpt-oss-MXFP4_MOE", 2e-2f, 2e-2f},  // 1.7e-2 / 8.0e-3
        };
        // The hybrids: three Gated DeltaNet layers to one gated attention layer, the delta rule
        // chunked (64) in the prefill and recurrent in the steps, with qwen3moe's experts and a
        // shared expert in qwen35moe. Measured max |d| prompt / steps (AVX2):
        const Tiny hybrid[] = {
            {"tiny-qwen35-f32", 1e-4f, 1e-3f},     // 1.2e-5 / 7.3e-6
            {"tiny-qwen35moe-f32", 1e-4f, 1e-3f},  // 8.7e-6 / 9.5e-6
        };
        for (const auto & list : {std::span<const Tiny>(archs), std::span<const Tiny>(moe), std::span<const Tiny>(hybrid)}) {
            for (const Tiny & t : list) {
                QTest::newRow(t.name) << QString("models/tiny-2026/%1.gguf").arg(t.name)
                                      << QString("reference/tiny-2026/%1.logits.json").arg(t.name) << t.tolerance();
            }
        }
    }

    void matchesLlamaCpp() {
        QFETCH(QString, model);
        QFETCH(QString, logits);
        QFETCH(float, tolerance);
        const Comparison c = compare_with_reference(shared_path(model), shared_path(logits), KvCacheConfig{}, 64);
        qInfo("max |d| prompt %.3g, steps %.3g", double(c.max_prompt_diff), double(c.max_step_diff));
        QVERIFY2(c.max_prompt_diff <= tolerance,
                 qPrintable(QString("prompt logits differ by %1 %2").arg(c.max_prompt_diff).arg(c.first_mismatch)));
        QVERIFY2(c.max_step_diff <= tolerance,
                 qPrintable(QString("step logits differ by %1 %2").arg(c.max_step_diff).arg(c.first_mismatch)));
        QCOMPARE(c.greedy_mismatches_with_clear_gap, 0);
    }

    // The scalar reference path (reference attention with the window mask and the sinks,
    // scalar GELU, the scalar expert kernels).
    void scalarPathMatchesLlamaCpp_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<float>("tolerance");
        QTest::newRow("tiny-qwen3-f32") << "tiny-2026/tiny-qwen3-f32" << 1e-3f;
        QTest::newRow("tiny-mistral3-f32") << "tiny-2026/tiny-mistral3-f32" << 1e-3f;
        QTest::newRow("tiny-phi3-f32") << "tiny-2026/tiny-phi3-f32" << 1e-3f;
        QTest::newRow("tiny-gemma3-f32") << "tiny-2026/tiny-gemma3-f32" << 1e-3f;
        QTest::newRow("tiny-gemma4-f32") << "tiny-2026/tiny-gemma4-f32" << 5e-3f;  // 2.6e-3 / 1.8e-3
        QTest::newRow("tiny-qwen3moe-f32") << "tiny-2026/tiny-qwen3moe-f32" << 1e-3f;
        QTest::newRow("tiny-gpt-oss-f32") << "tiny-2026/tiny-gpt-oss-f32" << 1e-3f;
        QTest::newRow("tiny-gpt-oss-MXFP4_MOE") << "tiny-2026/tiny-gpt-oss-MXFP4_MOE" << 2e-2f;
        QTest::newRow("tiny-qwen35-f32") << "tiny-2026/tiny-qwen35-f32" << 1e-3f;
        // llama.cpp's bits (February 2025), prompts and steps: its orders of the float products,
        // its f16 roundings of q and the weights, and its SiLU (ggml_expf per vector of 16).
        QTest::newRow("tiny-llama-f32") << "tiny/tiny-llama-f32" << 0.0f;
        QTest::newRow("tiny-llama-BF16") << "tiny/tiny-llama-BF16" << 0.0f;  // vdpbf16ps's order
        QTest::newRow("tiny-llama3rope-f32") << "tiny/tiny-llama3rope-f32" << 0.0f;
        QTest::newRow("tiny-llama-tied-f32") << "tiny/tiny-llama-tied-f32" << 0.0f;
    }
    void scalarPathMatchesLlamaCpp() {
        QFETCH(QString, model);
        QFETCH(float, tolerance);
        const Comparison c = compare_with_reference(shared_path("models/" + model + ".gguf"),
                                                    shared_path("reference/" + model + ".logits.json"), KvCacheConfig{}, 64,
                                                    CpuIsa::scalar);
        qInfo("max |d| prompt %.3g, steps %.3g", double(c.max_prompt_diff), double(c.max_step_diff));
        QVERIFY2(c.max_prompt_diff <= tolerance, qPrintable(QString::number(c.max_prompt_diff) + " " + c.first_mismatch));
        QVERIFY2(c.max_step_diff <= tolerance, qPrintable(QString::number(c.max_step_diff)));
        QCOMPARE(c.greedy_mismatches_with_clear_gap, 0);
    }

    // Outside the reference prompts (the first 256 tokens of the eval text, 7x the reference's
    // positions), the fused attention keeps to the reference attention, whose path matches
    // llama.cpp bit for bit on these models: measured 2.7e-5 and 2.9e-5, the fused sum of
    // weights * V (slot by slot) being the one difference left. On stories260K (head_dim 8,
    // sharp attention) such last-bit differences flip f16 roundings of the weights: the two
    // paths differ by up to 1.2e-2 there, no bound worth a test.
    void pathsAgreeOutsideReference_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<float>("tolerance");
        QTest::newRow("tiny-llama-f32") << "tiny/tiny-llama-f32" << 1e-4f;
        QTest::newRow("tiny-llama3rope-f32") << "tiny/tiny-llama3rope-f32" << 1e-4f;
        // Gemma 4 amplifies the same last-bit differences (attention scale 1 on normed q and
        // k) to 3.1e-3, where Gemma 3 shows 2.4e-4: the size of its distance from llama.cpp.
        QTest::newRow("tiny-gemma4-f32") << "tiny-2026/tiny-gemma4-f32" << 4e-3f;
    }
    void pathsAgreeOutsideReference() {
        QFETCH(QString, model);
        QFETCH(float, tolerance);
        if (!runs_avx2(detect_cpu_isa())) QSKIP("one CPU path here");
        QFile f(shared_path("reference/stories260K/eval_text_token_ids.txt"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const std::vector<int32_t> ids = to_ints(QJsonDocument::fromJson(f.readAll()).array());
        const std::vector<int32_t> tokens(ids.begin(), ids.begin() + 256);
        const QString path = shared_path("models/" + model + ".gguf");
        const std::vector<float> fused = all_logits(path, tokens, CpuIsa::avx2), reference = all_logits(path, tokens, CpuIsa::scalar);
        QCOMPARE(fused.size(), reference.size());
        QVERIFY(!fused.empty());
        float worst = 0;
        for (size_t i = 0; i < fused.size(); ++i) worst = std::max(worst, std::fabs(fused[i] - reference[i]));
        qInfo("max |d| %.3g over %zu positions", double(worst), tokens.size());
        QVERIFY2(worst <= tolerance, qPrintable(QString::number(double(worst))));
    }

    // The result does not depend on how the prompt is cut into ubatches or on the block size.
    void ubatchAndBlockSizesAgree_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<uint32_t>("ubatch");
        QTest::addColumn<uint32_t>("block_tokens");
        QTest::addColumn<float>("tolerance");
        // One-token ubatches take the decode kernel for every prompt position: 5.3e-3 measured.
        QTest::newRow("one-token-ubatches") << "stories260K" << 1u << 32u << 6e-3f;
        QTest::newRow("ubatch-3-block-5") << "stories260K" << 3u << 5u << stories_tolerance();
        QTest::newRow("ubatch-7-block-4") << "stories260K" << 7u << 4u << stories_tolerance();
        // Gemma 3's 32-token windows cut across blocks and ubatches of other sizes (llama.cpp's
        // own one-token ubatches move its logits by 3.2e-4).
        QTest::newRow("gemma3-one-token-ubatches") << "tiny-2026/tiny-gemma3-f32" << 1u << 32u << 1e-3f;
        QTest::newRow("gemma3-ubatch-7-block-5") << "tiny-2026/tiny-gemma3-f32" << 7u << 5u << 1e-3f;
        QTest::newRow("gemma3-ubatch-40-block-12") << "tiny-2026/tiny-gemma3-f32" << 40u << 12u << 1e-3f;
        // The recurrent states carry across ubatches: prefills of 7 tokens (chunked form within
        // each), and of one token (the recurrent form throughout). Measured 1.2e-5 / 7.3e-6,
        // 1.2e-5 / 5.0e-6 and 1.3e-5 / 9.5e-6 (llama.cpp's own one-token ubatches: 1.3e-5).
        QTest::newRow("qwen35-ubatch-7-block-5") << "tiny-2026/tiny-qwen35-f32" << 7u << 5u << 1e-3f;
        QTest::newRow("qwen35-one-token-ubatches") << "tiny-2026/tiny-qwen35-f32" << 1u << 32u << 1e-3f;
        QTest::newRow("qwen35moe-ubatch-7-block-5") << "tiny-2026/tiny-qwen35moe-f32" << 7u << 5u << 1e-3f;
        // Gemma 4's shared layers read their source's blocks however ubatches and blocks cut
        // them (its tolerance: see matchesLlamaCpp). Measured 4.3e-3 / 1.7e-3 (one-token
        // ubatches; llama.cpp's own move by 6.0e-3), 3.8e-3 / 1.3e-3 (the other two).
        QTest::newRow("gemma4-one-token-ubatches") << "tiny-2026/tiny-gemma4-f32" << 1u << 32u << 5e-3f;
        QTest::newRow("gemma4-ubatch-7-block-5") << "tiny-2026/tiny-gemma4-f32" << 7u << 5u << 5e-3f;
        QTest::newRow("gemma4-ubatch-40-block-12") << "tiny-2026/tiny-gemma4-f32" << 40u << 12u << 5e-3f;
    }
    void ubatchAndBlockSizesAgree() {
        QFETCH(QString, model);
        QFETCH(uint32_t, ubatch);
        QFETCH(uint32_t, block_tokens);
        QFETCH(float, tolerance);
        const bool stories = model == "stories260K";
        const QString gguf = stories ? "models/stories260K.gguf" : "models/" + model + ".gguf";
        const QString logits = stories ? "reference/stories260K/stories260K_logits.json" : "reference/" + model + ".logits.json";
        const Comparison c = compare_with_reference(shared_path(gguf), shared_path(logits),
                                                    KvCacheConfig{.settings = {.block_tokens = block_tokens}}, ubatch);
        qInfo("max |d| prompt %.3g, steps %.3g", double(c.max_prompt_diff), double(c.max_step_diff));
        QVERIFY2(c.max_prompt_diff <= tolerance, qPrintable(QString::number(c.max_prompt_diff) + " " + c.first_mismatch));
        QVERIFY2(c.max_step_diff <= tolerance, qPrintable(QString::number(c.max_step_diff)));
        QCOMPARE(c.greedy_mismatches_with_clear_gap, 0);
    }
};

QTEST_GUILESS_MAIN(TestReferenceLogits)
#include "test_reference_logits.moc"
