// Random-weight models (make-model): preset shapes and sizes, every weight type loading and
// running close to the F32 model of the same seed, determinism, the vocabulary, metadata,
// and the failures that must leave no file behind.
#include <QtTest>

#ifdef Q_OS_UNIX
#include <sys/resource.h>
#endif

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stop_token>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/llama_graph.h"
#include "engine/model/random_model_vocab.h"
#include "engine/model/random_model_writer.h"
#include "engine/quant/quant.h"
#include "engine/runtime/perplexity.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

Q_DECLARE_METATYPE(lr::DType)

namespace {

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378};  // "<s> Once upon a time" in stories260K

QString stories_path() { return shared_path("models/stories260K.gguf"); }

std::vector<uint8_t> read_bytes(const QString & path) {
    std::ifstream f(path.toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

QStringList dir_entries(const QTemporaryDir & dir) {
    return QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
}

// The next-token probabilities after kPrompt, or an empty vector (with a test failure message).
std::vector<double> next_token_probs(const QString & path, QString & failure) {
    CpuBackend backend({.n_threads = 2});
    auto model = Model::load(path.toStdString(), backend);
    if (!model.ok()) {
        failure = QString::fromStdString(model.status().message());
        return {};
    }
    auto graph = LlamaGraph::create(**model, 16);
    auto kv = KvCache::create(KvCacheConfig{.max_tokens = 64}, (*model)->kv_shape(), backend);
    if (!graph.ok() || !kv.ok()) {
        failure = "cannot create the graph or the KV cache";
        return {};
    }
    std::vector<float> logits;
    const Status s = graph->forward(**kv, 0, kPrompt, false, logits);
    if (!s.ok()) {
        failure = QString::fromStdString(s.message());
        return {};
    }
    return probabilities(logits);
}

bool same_meta_value(const gguf::MetaValue & a, const gguf::MetaValue & b) {
    if (a.type != b.type) return false;
    switch (a.type) {
        case gguf::ValueType::string: return a.str == b.str;
        case gguf::ValueType::array: {
            if (a.array_type != b.array_type || a.array_size != b.array_size) return false;
            if (a.array_type == gguf::ValueType::string) return a.strings == b.strings;
            const size_t elem = a.array_type == gguf::ValueType::uint8 || a.array_type == gguf::ValueType::int8 ||
                                        a.array_type == gguf::ValueType::boolean
                                    ? 1
                                : a.array_type == gguf::ValueType::uint16 || a.array_type == gguf::ValueType::int16 ? 2
                                : a.array_type == gguf::ValueType::uint32 || a.array_type == gguf::ValueType::int32 ||
                                        a.array_type == gguf::ValueType::float32
                                    ? 4
                                    : 8;
            return std::memcmp(a.array_data, b.array_data, a.array_size * elem) == 0;
        }
        default: return a.u == b.u && a.i == b.i && a.f == b.f;
    }
}

const PlannedTensor * find_planned(const RandomModelPlan & plan, const std::string & name) {
    for (const PlannedTensor & t : plan.tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

#ifdef Q_OS_UNIX
// Restores the file-size limit and SIGXFSZ handling on scope exit.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &saved_);
        old_handler_ = std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG
        rlimit limit = saved_;
        limit.rlim_cur = bytes;
        ok_ = setrlimit(RLIMIT_FSIZE, &limit) == 0;
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &saved_);
        std::signal(SIGXFSZ, old_handler_);
    }
    FileSizeLimit(const FileSizeLimit &) = delete;
    FileSizeLimit & operator=(const FileSizeLimit &) = delete;
    bool ok() const { return ok_; }

private:
    rlimit saved_{};
    void (*old_handler_)(int) = nullptr;
    bool ok_ = false;
};
#endif

}  // namespace

class TestMakeModel : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString f32_path_;  // tiny, stories vocabulary, seed 7, F32: the reference of every type

    QString path(const QString & name) const { return dir_.filePath(name); }

    RandomModelSpec tiny_spec(const QString & file, WeightFormat weights) const {
        return {.preset = "tiny",
                .weights = weights,
                .output_path = path(file).toStdString(),
                .seed = 7,
                .vocab_from = stories_path().toStdString(),
                .n_threads = 2};
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY2(QFile::exists(stories_path()), qPrintable(stories_path()));
        f32_path_ = path("tiny-F32.gguf");
        const Status s = write_random_model(tiny_spec("tiny-F32.gguf", {DType::F32}));
        QVERIFY2(s.ok(), s.message().c_str());
    }

    // ---- Presets -------------------------------------------------------------------------

    void presetShapes_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<qulonglong>("n_params");  // published parameter counts
        QTest::addColumn<int>("n_tensors");
        // tiny: 2 x 512 x 256 embeddings + 2 layers x (4 attention + 3 ffn matrices + 2 norms) + norm.
        QTest::newRow("tiny") << "tiny" << qulonglong(2 * 512 * 256 + 2 * (2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 768 + 2 * 256) + 256)
                              << 2 + 9 * 2 + 1;
        QTest::newRow("tinyllama-1.1b") << "tinyllama-1.1b" << qulonglong(1'100'048'384) << 2 + 9 * 22 + 1;
        QTest::newRow("llama3-8b") << "llama3-8b" << qulonglong(8'030'261'248) << 2 + 9 * 32 + 1;
        QTest::newRow("qwen2.5-0.5b") << "qwen2.5-0.5b" << qulonglong(494'032'768) << 2 + 12 * 24;
    }
    void presetShapes() {
        QFETCH(QString, preset);
        QFETCH(qulonglong, n_params);
        QFETCH(int, n_tensors);
        const ModelPreset * p = find_model_preset(preset.toStdString());
        QVERIFY(p);
        QVERIFY(validate(p->shape).ok());
        auto plan = plan_random_model({.preset = preset.toStdString(), .weights = {DType::Q8_0}, .output_path = "/tmp/unused.gguf"});
        QVERIFY2(plan.ok(), plan.status().message().c_str());
        QCOMPARE(plan->n_params, n_params);
        QCOMPARE(int(plan->tensors.size()), n_tensors);
        const ModelShape & s = plan->shape;
        // Shapes and types of the tensors the loader checks; vectors F32, matrices Q8_0.
        uint64_t n_bytes = 0;
        for (const PlannedTensor & t : plan->tensors) {
            QCOMPARE(t.type, t.is_vector() ? DType::F32 : DType::Q8_0);
            QCOMPARE(t.n_bytes, t.is_vector() ? t.ne0 * 4 : t.n_elements() / 32 * 34);
            n_bytes += t.n_bytes;
        }
        QCOMPARE(plan->n_tensor_bytes, n_bytes);
        QVERIFY(plan->notes.empty());
        const PlannedTensor * embd = find_planned(*plan, "token_embd.weight");
        QVERIFY(embd && embd->ne0 == s.n_embd && embd->ne1 == s.n_vocab);
        const PlannedTensor * k = find_planned(*plan, "blk.0.attn_k.weight");
        QVERIFY(k && k->ne0 == s.n_embd && k->ne1 == uint64_t(s.n_head_kv) * s.head_dim());
        const PlannedTensor * down = find_planned(*plan, "blk." + std::to_string(s.n_layer - 1) + ".ffn_down.weight");
        QVERIFY(down && down->ne0 == s.n_ff && down->ne1 == s.n_embd);
        QCOMPARE(find_planned(*plan, "output.weight") == nullptr, s.tied_output);
        QCOMPARE(find_planned(*plan, "blk.0.attn_q.bias") != nullptr, s.qkv_bias);
        QVERIFY(model_preset_names().find(p->name) != std::string::npos);
    }

    // The sizes llama-quantize gives for these shapes (../shared/reference/README.md: TinyLlama
    // shapes, 32000-token vocabulary; its files add about 0.5 MiB of metadata).
    void presetSizesMatchLlamaQuantize() {
        auto q4_k_m = plan_random_model(
            {.preset = "tinyllama-1.1b", .weights = *weight_format_from_name("Q4_K_M"), .output_path = "x.gguf"});
        QVERIFY(q4_k_m.ok());
        const double mib = 1024.0 * 1024.0;
        qInfo("tinyllama-1.1b Q4_K_M tensor data %.1f MiB (llama-quantize file 636.2 MiB)", double(q4_k_m->n_tensor_bytes) / mib);
        QVERIFY(std::abs(double(q4_k_m->n_tensor_bytes) / mib - 636.2) < 1.0);
        // llama-quantize's Q4_0 keeps output.weight in Q6_K; ours is pure Q4_0.
        auto q4_0 = plan_random_model({.preset = "tinyllama-1.1b", .weights = {DType::Q4_0}, .output_path = "x.gguf"});
        QVERIFY(q4_0.ok());
        const double output_q6_k_minus_q4_0 = 32000.0 * 2048 * (210.0 / 256 - 18.0 / 32);
        QVERIFY(std::abs((double(q4_0->n_tensor_bytes) + output_q6_k_minus_q4_0) / mib - 606.5) < 1.0);
        auto f16 = plan_random_model({.preset = "tinyllama-1.1b", .weights = {DType::F16}, .output_path = "x.gguf"});
        QVERIFY(f16.ok());
        QVERIFY(std::abs(double(f16->n_tensor_bytes) / (1024 * mib) - 2.05) < 0.01);
    }

    // llama.cpp's Q4_K_M rule: Q6_K for output.weight and for attn_v / ffn_down where
    // use_more_bits(il, n_layer): il < n/8, il >= 7n/8, or (il - n/8) % 3 == 2.
    void q4KMixFollowsLlamaCpp() {
        auto plan = plan_random_model({.preset = "tinyllama-1.1b", .weights = *weight_format_from_name("q4_k_m"), .output_path = "x.gguf"});
        QVERIFY(plan.ok());
        QCOMPARE(plan->file_type, 15u);
        QCOMPARE(find_planned(*plan, "output.weight")->type, DType::Q6_K);
        QCOMPARE(find_planned(*plan, "token_embd.weight")->type, DType::Q4_K);
        const std::set<uint32_t> more_bits = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};  // 22 layers
        for (uint32_t il = 0; il < 22; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            const DType expected = more_bits.count(il) ? DType::Q6_K : DType::Q4_K;
            QCOMPARE(find_planned(*plan, b + "attn_v.weight")->type, expected);
            QCOMPARE(find_planned(*plan, b + "ffn_down.weight")->type, expected);
            QCOMPARE(find_planned(*plan, b + "attn_q.weight")->type, DType::Q4_K);
            QCOMPARE(find_planned(*plan, b + "ffn_up.weight")->type, DType::Q4_K);
        }
        QVERIFY(plan->notes.empty());
    }

    // Rows of 896 (qwen2.5-0.5b) fit no 256-element block: llama-quantize's fallbacks.
    void fallbacksFollowLlamaQuantize() {
        auto q4_k = plan_random_model({.preset = "qwen2.5-0.5b", .weights = {DType::Q4_K}, .output_path = "x.gguf"});
        QVERIFY(q4_k.ok());
        QCOMPARE(find_planned(*q4_k, "blk.0.attn_q.weight")->type, DType::Q5_0);
        QCOMPARE(find_planned(*q4_k, "token_embd.weight")->type, DType::Q5_0);
        QCOMPARE(find_planned(*q4_k, "blk.0.ffn_down.weight")->type, DType::Q4_K);  // rows of 4864 = 19 x 256
        QCOMPARE(q4_k->notes.size(), size_t(1));
        QVERIFY2(q4_k->notes[0].find("Q4_K -> Q5_0 for 145 tensor(s)") != std::string::npos, q4_k->notes[0].c_str());
        for (const PlannedTensor & t : q4_k->tensors) QCOMPARE(t.ne0 % dtype_traits(t.type).block_elems, uint64_t(0));

        auto mix = plan_random_model({.preset = "qwen2.5-0.5b", .weights = *weight_format_from_name("Q4_K_M"), .output_path = "x.gguf"});
        QVERIFY(mix.ok());
        QCOMPARE(find_planned(*mix, "token_embd.weight")->type, DType::Q8_0);    // tied: the output's rule, 896 % 256 != 0
        QCOMPARE(find_planned(*mix, "blk.0.attn_v.weight")->type, DType::Q8_0);  // Q6_K -> Q8_0
        QCOMPARE(find_planned(*mix, "blk.3.attn_v.weight")->type, DType::Q5_0);  // Q4_K -> Q5_0
        QCOMPARE(find_planned(*mix, "blk.0.ffn_down.weight")->type, DType::Q6_K);

        auto q2_k = plan_random_model({.preset = "qwen2.5-0.5b", .weights = {DType::Q2_K}, .output_path = "x.gguf"});
        QVERIFY(q2_k.ok());
        QCOMPARE(find_planned(*q2_k, "blk.0.attn_q.weight")->type, DType::Q4_0);

        // A row that fits no block at all (n_ff 172, stories260K's) falls back to F16.
        ModelShape odd = find_model_preset("tiny")->shape;
        odd.n_ff = 172;
        auto q8 = plan_random_model({.shape = odd, .weights = {DType::Q8_0}, .output_path = "x.gguf"});
        QVERIFY(q8.ok());
        QCOMPARE(find_planned(*q8, "blk.0.ffn_down.weight")->type, DType::F16);
        QCOMPARE(find_planned(*q8, "blk.0.ffn_up.weight")->type, DType::Q8_0);
        QCOMPARE(q8->notes.size(), size_t(1));
    }

    // The tiny preset written for real, without a vocabulary file: hyper-parameters as
    // set, the built-in vocabulary loads as a tokenizer, and the model runs.
    void tinyPresetWritesAndLoads_data() {
        QTest::addColumn<QString>("preset");
        QTest::newRow("tiny") << "tiny";
        QTest::newRow("tiny-qwen2") << "tiny-qwen2";
    }
    void tinyPresetWritesAndLoads() {
        QFETCH(QString, preset);
        const QString file = path(preset + "-novocab.gguf");
        const Status s = write_random_model({.preset = preset.toStdString(), .weights = {DType::Q8_0}, .output_path = file.toStdString()});
        QVERIFY2(s.ok(), s.message().c_str());
        const ModelShape & shape = find_model_preset(preset.toStdString())->shape;

        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(file.toStdString(), backend);
        QVERIFY2(model.ok(), model.status().message().c_str());
        const ModelHParams & hp = (*model)->hparams();
        QCOMPARE(hp.arch, shape.arch);
        QCOMPARE(hp.n_vocab, shape.n_vocab);
        QCOMPARE(hp.n_embd, shape.n_embd);
        QCOMPARE(hp.n_layer, shape.n_layer);
        QCOMPARE(hp.n_head, shape.n_head);
        QCOMPARE(hp.n_head_kv, shape.n_head_kv);
        QCOMPARE(hp.n_ff, shape.n_ff);
        QCOMPARE(hp.n_ctx_train, shape.n_ctx_train);
        QCOMPARE(hp.rope_freq_base, shape.rope_freq_base);
        QCOMPARE(hp.rms_eps, shape.rms_eps);
        QCOMPARE(hp.name, preset.toStdString() + "-random-Q8_0");
        QCOMPARE((*model)->weights().tied_output, shape.tied_output);
        QCOMPARE((*model)->weights().layers[0].bq.has_value(), shape.qkv_bias);

        auto vocab = load_vocab((*model)->file());
        QVERIFY2(vocab.ok(), vocab.status().message().c_str());
        QCOMPARE(vocab->n_tokens(), int32_t(shape.n_vocab));
        auto tokenizer = Tokenizer::create(std::move(vocab).value());
        QVERIFY2(tokenizer.ok(), tokenizer.status().message().c_str());
        // Letters merge into the filler pieces ("▁ab"), anything else falls back to bytes.
        const std::vector<int32_t> words = tokenizer->encode("ab ba", true, false);
        QCOMPARE(words.size(), size_t(3));
        QCOMPARE(words[0], 1);  // BOS
        QCOMPARE(tokenizer->token_to_piece(words[1], false), std::string(" ab"));
        QCOMPARE(tokenizer->token_to_piece(words[2], false), std::string(" ba"));
        const std::string text = "hello world, \xC3\xA9t\xC3\xA9!";
        const std::vector<int32_t> ids = tokenizer->encode(text, true, false);
        QCOMPARE(tokenizer->decode(std::span(ids).subspan(1)), text);

        QString failure;
        const std::vector<double> p = next_token_probs(file, failure);
        QVERIFY2(!p.empty(), qPrintable(failure));
        for (double x : p) QVERIFY(std::isfinite(x));
    }

    // The 2026 families' presets: their parameter counts, and their layout (head size apart
    // from n_embd / n_head, q/k norms, gemma3's post-norms, sliding layers and linear rope
    // scaling) written and loaded at a small width.
    void familyPresetsWriteAndLoad_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<double>("billions");
        QTest::newRow("qwen3-8b") << "qwen3-8b" << 8.19;    // Qwen3-8B: 8.2B
        QTest::newRow("gemma3-4b") << "gemma3-4b" << 3.88;  // Gemma 3 4B's language model
    }
    void familyPresetsWriteAndLoad() {
        QFETCH(QString, preset);
        QFETCH(double, billions);
        auto full = plan_random_model({.preset = preset.toStdString(), .output_path = "x.gguf"});
        QVERIFY2(full.ok(), full.status().message().c_str());
        QVERIFY2(std::abs(double(full->n_params) / 1e9 - billions) < 0.01, qPrintable(QString::number(double(full->n_params) / 1e9)));

        ModelShape small = find_model_preset(preset.toStdString())->shape;
        small.n_vocab = 512;
        small.n_embd = 64;
        small.n_layer = 7;
        small.n_head = 4;
        small.n_head_kv = 2;
        small.n_embd_head = 32;
        small.n_ff = 128;
        const QString file = path(preset + "-small.gguf");
        const Status s = write_random_model({.shape = small, .weights = {DType::Q8_0}, .output_path = file.toStdString()});
        QVERIFY2(s.ok(), s.message().c_str());
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(file.toStdString(), backend);
        QVERIFY2(model.ok(), model.status().message().c_str());
        const ModelHParams & hp = (*model)->hparams();
        QCOMPARE(hp.arch, small.arch);
        QCOMPARE(hp.head_dim, 32u);
        QCOMPARE(hp.n_embd_q(), 128u);
        QVERIFY((*model)->weights().layers[0].q_norm.has_value());
        const bool gemma = small.arch == ModelArch::gemma3;
        QCOMPARE((*model)->weights().layers[0].attn_post_norm.has_value(), gemma);
        QCOMPARE(hp.n_swa, gemma ? 1024u : 0u);
        if (gemma) {
            // Five sliding layers, then a global one.
            QCOMPARE(std::vector<uint8_t>(hp.swa_layers), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1}));
            QCOMPARE(hp.rope_scaling, RopeScaling::linear);
            QCOMPARE(hp.rope_freq_scale, 0.125f);
            QCOMPARE(hp.rope_freq_base_swa, 10000.0f);
        }
        QString failure;
        const std::vector<double> p = next_token_probs(file, failure);
        QVERIFY2(!p.empty(), qPrintable(failure));
        for (double x : p) QVERIFY(std::isfinite(x));
    }

    void byteVocabIsWellFormed() {
        const ByteVocab v = make_byte_vocab(20000);
        QCOMPARE(v.tokens.size(), size_t(20000));
        QCOMPARE(v.scores.size(), v.tokens.size());
        QCOMPARE(v.token_types.size(), v.tokens.size());
        QCOMPARE(v.tokens[3], std::string("<0x00>"));
        QCOMPARE(v.tokens[258], std::string("<0xFF>"));
        QCOMPARE(std::set<std::string>(v.tokens.begin(), v.tokens.end()).size(), v.tokens.size());
        // Ids do not depend on the size asked for.
        const ByteVocab small = make_byte_vocab(ByteVocab::kMinTokens + 5);
        QVERIFY(std::equal(small.tokens.begin(), small.tokens.end(), v.tokens.begin()));
    }

    // ---- Every weight type against F32 ----------------------------------------------------

    void weightTypesCloseToF32_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<uint32_t>("file_type");
        QTest::addColumn<double>("max_kl");
        QTest::addColumn<bool>("same_argmax");
        // Bounds: about 3x the KL measured with seed 7 (the qInfo lines; the F32 model's top
        // token has p 0.005 of 512). Quantized types may change the argmax of this flat
        // distribution; 8-bit and up must not.
        QTest::newRow("F16") << "F16" << 1u << 1e-7 << true;            // measured 3.1e-8
        QTest::newRow("BF16") << "BF16" << 32u << 1e-5 << true;         // 1.7e-6
        QTest::newRow("Q8_0") << "Q8_0" << 7u << 5e-5 << true;          // 1.4e-5
        QTest::newRow("Q6_K") << "Q6_K" << 18u << 3e-4 << false;        // 1.0e-4
        QTest::newRow("Q5_K") << "Q5_K" << 17u << 1.2e-3 << false;      // 4.0e-4
        QTest::newRow("Q5_1") << "Q5_1" << 9u << 1.5e-3 << false;       // 5.3e-4
        QTest::newRow("Q5_0") << "Q5_0" << 8u << 2e-3 << false;         // 6.8e-4
        QTest::newRow("Q4_K_M") << "Q4_K_M" << 15u << 4e-3 << false;    // 1.3e-3
        QTest::newRow("Q4_K") << "Q4_K" << 15u << 5e-3 << false;        // 1.7e-3
        QTest::newRow("Q4_1") << "Q4_1" << 3u << 6e-3 << false;         // 2.1e-3
        QTest::newRow("Q4_0") << "Q4_0" << 2u << 6e-3 << false;         // 2.2e-3
        QTest::newRow("IQ4_NL") << "IQ4_NL" << 25u << 5e-3 << false;    // 1.7e-3
        QTest::newRow("Q3_K") << "Q3_K" << 12u << 2e-2 << false;        // 7.0e-3
        QTest::newRow("Q2_K") << "Q2_K" << 10u << 7e-2 << false;        // 2.4e-2
        QTest::newRow("IQ4_XS") << "IQ4_XS" << 30u << 6e-3 << false;    // 1.9e-3
        QTest::newRow("MXFP4") << "MXFP4" << 38u << 1.3e-2 << false;    // 4.3e-3
        QTest::newRow("IQ3_S") << "IQ3_S" << 26u << 2.5e-2 << false;    // 7.9e-3
        QTest::newRow("IQ3_XXS") << "IQ3_XXS" << 23u << 3e-2 << false;  // 1.0e-2
        QTest::newRow("TQ2_0") << "TQ2_0" << 37u << 0.3 << false;       // 9.3e-2 (three levels)
    }
    void weightTypesCloseToF32() {
        QFETCH(QString, type);
        QFETCH(uint32_t, file_type);
        QFETCH(double, max_kl);
        QFETCH(bool, same_argmax);
        const std::optional<WeightFormat> format = weight_format_from_name(type.toStdString());
        QVERIFY(format);
        const QString file = path("tiny-" + type + ".gguf");
        const Status s = write_random_model(tiny_spec("tiny-" + type + ".gguf", *format));
        QVERIFY2(s.ok(), s.message().c_str());

        auto written = gguf::GgufFile::open(file.toStdString());
        QVERIFY(written.ok());
        QCOMPARE(written->get_uint("general.file_type")->value_or(999), uint64_t(file_type));
        QCOMPARE(written->get_uint("llama.vocab_size")->value_or(0), uint64_t(512));
        const DType attn_q_type = written->find_tensor("blk.0.attn_q.weight")->type;
        QCOMPARE(attn_q_type, format->type);
        QCOMPARE(written->find_tensor("blk.0.attn_norm.weight")->type, DType::F32);
        if (format->mix == WeightMix::q4_k_m) QCOMPARE(written->find_tensor("output.weight")->type, DType::Q6_K);

        QString failure;
        const std::vector<double> p_f32 = next_token_probs(f32_path_, failure);
        QVERIFY2(!p_f32.empty(), qPrintable(failure));
        const std::vector<double> p = next_token_probs(file, failure);
        QVERIFY2(!p.empty(), qPrintable(failure));
        QCOMPARE(p.size(), size_t(512));
        const double kl = kl_divergence(p_f32, p);
        const int32_t top_f32 = argmax(p_f32, p_f32.size());
        const int32_t top = argmax(p, p.size());
        qInfo("%-7s KL(F32 || %s) = %.3g, argmax %d (F32 %d, p %.4f)", qPrintable(type), qPrintable(type), kl, top, top_f32,
              p_f32[size_t(top_f32)]);
        QVERIFY2(kl <= max_kl, qPrintable(QString("KL %1 above %2").arg(kl).arg(max_kl)));
        if (same_argmax) QCOMPARE(top, top_f32);
    }

    // A tensor holds the same values whatever the type: F16 is F32 rounded.
    void sameValuesInEveryType() {
        auto f32 = gguf::GgufFile::open(f32_path_.toStdString());
        auto f16 = gguf::GgufFile::open(path("tiny-F16.gguf").toStdString());
        QVERIFY(f32.ok() && f16.ok());
        for (const char * name : {"blk.1.ffn_down.weight", "blk.0.attn_norm.weight", "token_embd.weight"}) {
            const gguf::TensorInfo * a = f32->find_tensor(name);
            const gguf::TensorInfo * b = f16->find_tensor(name);
            QVERIFY(a && b);
            const size_t n = a->ne[0];
            std::vector<float> x(n), y(n);
            quant::dequantize_row(a->type, a->data, x.data(), n);
            quant::dequantize_row(b->type, b->data, y.data(), n);
            double sum_sq = 0;
            for (size_t i = 0; i < n; ++i) {
                QVERIFY(std::abs(x[i] - y[i]) <= std::max(std::abs(x[i]) * 1e-3f, 1e-7f));  // F16 rounding, subnormals
                sum_sq += double(x[i]) * x[i];
            }
            if (a->n_dims == 2) {
                const double rms = std::sqrt(sum_sq / double(n));  // N(0, 0.02)
                QVERIFY2(rms > 0.015 && rms < 0.025, qPrintable(QString::number(rms)));
            } else {
                for (float v : x) QVERIFY(v > 0.4f && v < 1.6f);  // 1 + N(0, 0.1)
            }
        }
    }

    // ---- Determinism, vocabulary, metadata -------------------------------------------------

    void sameSeedSameBytes() {
        RandomModelSpec spec = tiny_spec("det-a.gguf", {DType::Q4_K});
        QVERIFY(write_random_model(spec).ok());
        spec.output_path = path("det-b.gguf").toStdString();
        spec.n_threads = 1;  // the thread count does not change the values
        QVERIFY(write_random_model(spec).ok());
        spec.output_path = path("det-c.gguf").toStdString();
        spec.seed = 8;
        QVERIFY(write_random_model(spec).ok());
        const std::vector<uint8_t> a = read_bytes(path("det-a.gguf"));
        const std::vector<uint8_t> b = read_bytes(path("det-b.gguf"));
        const std::vector<uint8_t> c = read_bytes(path("det-c.gguf"));
        QVERIFY(!a.empty());
        QVERIFY(a == b);
        QCOMPARE(c.size(), a.size());
        QVERIFY(a != c);
        // Every tensor differs with the seed, not just one.
        auto fa = gguf::GgufFile::open(path("det-a.gguf").toStdString());
        auto fc = gguf::GgufFile::open(path("det-c.gguf").toStdString());
        QVERIFY(fa.ok() && fc.ok());
        for (const gguf::TensorInfo & t : fa->tensors()) {
            QVERIFY2(std::memcmp(t.data, fc->find_tensor(t.name)->data, t.n_bytes) != 0, t.name.c_str());
        }
    }

    void tokenizerKeysCopiedExactly() {
        auto source = gguf::GgufFile::open(stories_path().toStdString());
        auto copy = gguf::GgufFile::open(f32_path_.toStdString());
        QVERIFY(source.ok() && copy.ok());
        int n_source = 0;
        for (const gguf::MetaEntry & e : source->metadata()) {
            if (!e.key.starts_with("tokenizer.")) continue;
            ++n_source;
            const gguf::MetaValue * v = copy->find(e.key);
            QVERIFY2(v, std::string(e.key).c_str());
            QVERIFY2(same_meta_value(e.value, *v), std::string(e.key).c_str());
        }
        int n_copy = 0;
        for (const gguf::MetaEntry & e : copy->metadata()) n_copy += e.key.starts_with("tokenizer.") ? 1 : 0;
        QCOMPARE(n_copy, n_source);
        QVERIFY(n_source >= 8);
        QCOMPARE(copy->get_string("general.architecture")->value_or(""), std::string_view("llama"));
        QCOMPARE(copy->get_uint("general.file_type")->value_or(999), uint64_t(0));
        QVERIFY(!copy->find("general.quantization_version"));
    }

    // The vocabulary size comes from the vocabulary file, whatever the preset says.
    void vocabFromOverridesPresetSize() {
        RandomModelSpec spec{.preset = "tinyllama-1.1b",
                             .weights = {DType::Q4_0},
                             .output_path = "x.gguf",
                             .vocab_from = stories_path().toStdString()};
        auto plan = plan_random_model(spec);
        QVERIFY(plan.ok());
        QCOMPARE(plan->shape.n_vocab, 512u);
        QCOMPARE(find_planned(*plan, "output.weight")->ne1, uint64_t(512));
        QCOMPARE(plan->notes.size(), size_t(1));
        QVERIFY(plan->notes[0].find("512 tokens") != std::string::npos);
    }

    void progressReachesTotal() {
        std::vector<std::pair<uint64_t, uint64_t>> calls;
        RandomModelSpec spec = tiny_spec("progress.gguf", {DType::Q4_0});
        spec.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
        QVERIFY(write_random_model(spec).ok());
        QVERIFY(calls.size() >= 21);
        for (size_t i = 1; i < calls.size(); ++i) QVERIFY(calls[i].first > calls[i - 1].first);
        QCOMPARE(calls.back().first, calls.back().second);
        QVERIFY(QFile::remove(path("progress.gguf")));
    }

    // ---- Failures leave no file -------------------------------------------------------------

    void invalidSpecs_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("output");  // relative to a fresh directory; absolute if it starts with '/'
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown preset") << "llama-9000b"
                                        << "Q4_0"
                                        << "m.gguf"
                                        << ""
                                        << "unknown model preset 'llama-9000b' (presets: tiny,";
        QTest::newRow("imatrix type") << "tiny"
                                      << "IQ2_XXS"
                                      << "m.gguf"
                                      << ""
                                      << "IQ2_XXS needs an importance matrix";
        QTest::newRow("imatrix type IQ1_M") << "tiny"
                                            << "IQ1_M"
                                            << "m.gguf"
                                            << ""
                                            << "IQ1_M needs an importance matrix";
        QTest::newRow("unsupported type") << "tiny"
                                          << "TQ1_0"
                                          << "m.gguf"
                                          << ""
                                          << "weight type TQ1_0 cannot be written (types: F32,";
        QTest::newRow("activation type") << "tiny"
                                         << "Q8_K"
                                         << "m.gguf"
                                         << ""
                                         << "Q8_K cannot be written";
        QTest::newRow("no output") << "tiny"
                                   << "Q4_0"
                                   << ""
                                   << ""
                                   << "no output path";
        QTest::newRow("missing directory") << "tiny"
                                           << "Q4_0"
                                           << "no/such/dir/m.gguf"
                                           << ""
                                           << "does not exist";
        QTest::newRow("directory") << "tiny"
                                   << "Q4_0"
                                   << "."
                                   << ""
                                   << "is a directory";
        QTest::newRow("unwritable") << "tiny"
                                    << "Q4_0"
                                    << "/proc/m.gguf"
                                    << ""
                                    << "cannot create";
        QTest::newRow("missing vocab") << "tiny"
                                       << "Q4_0"
                                       << "m.gguf"
                                       << "no-such-vocab.gguf"
                                       << "no-such-vocab.gguf";
        QTest::newRow("vocab without tokens") << "tiny"
                                              << "Q4_0"
                                              << "m.gguf"
                                              << "SELF_NO_TOKENS"
                                              << "no tokenizer.ggml.tokens";
    }
    void invalidSpecs() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, output);
        QFETCH(QString, vocab);
        QFETCH(QString, message);
        QTemporaryDir out;
        QVERIFY(out.isValid());
        QString vocab_path = vocab.isEmpty() ? QString() : out.filePath(vocab);
        if (vocab == "SELF_NO_TOKENS") {
            // A model file written without tokenizer keys.
            gguf::GgufWriter w;
            w.set_string("general.architecture", "llama");
            vocab_path = dir_.filePath("no-tokens.gguf");
            QVERIFY(w.write_file(vocab_path.toStdString(), [](size_t, uint64_t, std::span<uint8_t>) { return Status{}; }).ok());
        }
        const std::optional<WeightFormat> format = weight_format_from_name(type.toStdString());
        QVERIFY(format);
        const RandomModelSpec spec{.preset = preset.toStdString(),
                                   .weights = *format,
                                   .output_path = output.isEmpty()         ? ""
                                                  : output.startsWith('/') ? output.toStdString()
                                                                           : out.filePath(output).toStdString(),
                                   .vocab_from = vocab_path.toStdString()};
        const Status s = write_random_model(spec);
        QVERIFY(!s.ok());
        qInfo("%s", s.message().c_str());
        QVERIFY2(s.message().find(message.toStdString()) != std::string::npos, s.message().c_str());
        QCOMPARE(dir_entries(out), QStringList());
        QVERIFY(!QFile::exists("/proc/m.gguf.partial"));
    }

    void unknownTypeNameParsesToNothing() {
        QVERIFY(!weight_format_from_name("Q4_K_X"));
        QVERIFY(!weight_format_from_name(""));
        QCOMPARE(weight_format_name(*weight_format_from_name("q4_k_m")), std::string("Q4_K_M"));
        QCOMPARE(weight_format_name(*weight_format_from_name("bf16")), std::string("BF16"));
        QVERIFY(writable_weight_format_names().find("IQ4_NL") != std::string::npos);
    }

    // A full disk (here: a file-size limit) fails cleanly: io_error, and no file left.
    void fullDiskLeavesNoFile() {
#ifndef Q_OS_UNIX
        QSKIP("needs RLIMIT_FSIZE");
#else
        QTemporaryDir out;
        QVERIFY(out.isValid());
        const RandomModelSpec spec{.preset = "tiny", .weights = {DType::F32}, .output_path = out.filePath("big.gguf").toStdString()};
        Status s;
        {
            FileSizeLimit limit(1 << 20);  // the model is about 7.5 MiB
            QVERIFY(limit.ok());
            s = write_random_model(spec);
        }
        QVERIFY(!s.ok());
        qInfo("%s", s.message().c_str());
        QCOMPARE(s.code(), StatusCode::io_error);
        QCOMPARE(dir_entries(out), QStringList());
#endif
    }

    void cancelLeavesNoFile() {
        QTemporaryDir out;
        QVERIFY(out.isValid());
        std::stop_source stop;
        RandomModelSpec spec{.preset = "tiny", .weights = {DType::Q4_0}, .output_path = out.filePath("c.gguf").toStdString()};
        spec.progress = [&](uint64_t, uint64_t) { stop.request_stop(); };
        const Status s = write_random_model(spec, stop.get_token());
        QCOMPARE(s.code(), StatusCode::cancelled);
        QCOMPARE(dir_entries(out), QStringList());
    }
};

QTEST_GUILESS_MAIN(TestMakeModel)
#include "test_make_model.moc"
