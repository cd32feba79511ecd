#include <QtTest>

#include <cstring>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

using namespace lr;
using namespace lr::gguf;

namespace {

const QString kShared = QStringLiteral(LONGREAD_SHARED_DIR);

// A small valid file: a few metadata types and two tensors.
GgufWriter small_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_uint32("llama.block_count", 2);
    w.set_float32("llama.rope.freq_base", 10000.0f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.set_float32_array("tokenizer.ggml.scores", {0, 0, 0, -1.5f});
    w.set_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
    w.add_tensor("a.weight", DType::F32, {4, 3});
    w.add_tensor("b.weight", DType::Q8_0, {32, 2});
    return w;
}

std::vector<uint8_t> small_file() {
    auto bytes = small_writer().write_bytes([](size_t i, uint64_t, std::span<uint8_t> dst) {
        for (size_t j = 0; j < dst.size(); ++j) dst[j] = static_cast<uint8_t>(i * 31 + j);
        return Status{};
    });
    return std::move(bytes).value();
}

QString message_of(const Result<GgufFile> & r) { return QString::fromStdString(r.status().message()); }

void put_u64(std::vector<uint8_t> & b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }
void put_u32(std::vector<uint8_t> & b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

// Offset of the first occurrence of `needle` in `bytes`.
size_t find_bytes(const std::vector<uint8_t> & bytes, std::string_view needle) {
    auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
    return static_cast<size_t>(it - bytes.begin());
}

}  // namespace

class TestGguf : public QObject {
    Q_OBJECT
private slots:
    void readsSharedModels_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("arch");
        QTest::addColumn<int>("n_tensors");
        QTest::newRow("stories260K") << "models/stories260K.gguf"
                                     << "llama" << 48;
        QTest::newRow("llama-2-tiny-random") << "models/llama-2-tiny-random.gguf"
                                             << "llama" << -1;
        QTest::newRow("tiny-q4_k_m") << "models/tiny/tiny-llama-Q4_K_M.gguf"
                                     << "llama" << 21;
        QTest::newRow("tiny-tied") << "models/tiny/tiny-llama-tied-f32.gguf"
                                   << "llama" << 20;
        QTest::newRow("qwen2") << "models/tiny/tiny-qwen2-Q8_0.gguf"
                               << "qwen2" << 27;
        QTest::newRow("vocab-only") << "data/tokenizer/ggml-vocab-qwen2.gguf"
                                    << "" << 0;
    }
    void readsSharedModels() {
        QFETCH(QString, file);
        QFETCH(QString, arch);
        QFETCH(int, n_tensors);
        auto f = GgufFile::open((kShared + "/" + file).toStdString());
        QVERIFY2(f.ok(), qPrintable(message_of(f)));
        QVERIFY(f->version() == 2 || f->version() == 3);
        if (n_tensors >= 0) QCOMPARE(int(f->tensors().size()), n_tensors);
        if (!arch.isEmpty()) {
            auto a = f->get_string("general.architecture");
            QVERIFY(a.ok() && a->has_value());
            QCOMPARE(QString::fromUtf8(a->value().data(), qsizetype(a->value().size())), arch);
        }
        for (const TensorInfo & t : f->tensors()) {
            QVERIFY(t.data >= f->bytes().data());
            QVERIFY(t.data + t.n_bytes <= f->bytes().data() + f->bytes().size());
            QCOMPARE(t.n_bytes, uint64_t(row_bytes(t.type, t.ne[0]) * t.ne[1] * t.ne[2] * t.ne[3]));
        }
    }

    void stories260KShapes() {
        auto f = GgufFile::open((kShared + "/models/stories260K.gguf").toStdString());
        QVERIFY(f.ok());
        const TensorInfo * emb = f->find_tensor("token_embd.weight");
        QVERIFY(emb);
        QCOMPARE(emb->ne[0], uint64_t(64));
        QCOMPARE(emb->ne[1], uint64_t(512));
        QCOMPARE(emb->type, DType::F32);
        auto tokens = f->get_string_array("tokenizer.ggml.tokens");
        QVERIFY(tokens.ok() && tokens->has_value());
        QCOMPARE(tokens->value().size(), size_t(512));
        QCOMPARE(QString::fromStdString(std::string(tokens->value()[1])), QString("<s>"));
        auto n_layer = f->get_uint("llama.block_count");
        QVERIFY(n_layer.ok());
        QCOMPARE(n_layer->value(), uint64_t(5));
    }

    void writerRoundTrip() {
        const std::vector<uint8_t> bytes = small_file();
        auto f = GgufFile::parse(bytes, "small.gguf");
        QVERIFY2(f.ok(), qPrintable(message_of(f)));
        QCOMPARE(f->version(), 3u);
        QCOMPARE(f->metadata().size(), size_t(7));
        QCOMPARE(f->get_uint("llama.block_count")->value(), uint64_t(2));
        QCOMPARE(f->get_float("llama.rope.freq_base")->value(), 10000.0);
        QCOMPARE(f->get_bool("tokenizer.ggml.add_bos_token")->value(), true);
        QCOMPARE(f->get_float_array("tokenizer.ggml.scores")->value()[3], -1.5f);
        QCOMPARE(f->get_int_array("tokenizer.ggml.token_type")->value()[1], int64_t(3));
        QCOMPARE(f->get_string_array("tokenizer.ggml.tokens")->value()[3], std::string_view("a"));
        const TensorInfo * b = f->find_tensor("b.weight");
        QVERIFY(b);
        QCOMPARE(b->n_bytes, uint64_t(68));
        QCOMPARE(b->data[5], uint8_t(31 + 5));
        QCOMPARE(uintptr_t(b->data - bytes.data()) % 32, uintptr_t(0));
        // Absent keys are nullopt, not errors; a key of another type is an error naming it.
        QVERIFY(f->get_uint("no.such.key").ok() && !f->get_uint("no.such.key")->has_value());
        auto wrong = f->get_string("llama.block_count");
        QVERIFY(!wrong.ok());
        QVERIFY(QString::fromStdString(wrong.status().message()).contains("llama.block_count"));
    }

    void writerFileAndCopyEntry() {
        QTemporaryDir dir;
        const std::string path = (dir.path() + "/copy.gguf").toStdString();
        const std::vector<uint8_t> bytes = small_file();  // parse() reads from it: it must outlive src
        auto src = GgufFile::parse(bytes, "src");
        QVERIFY(src.ok());
        GgufWriter w;
        for (const MetaEntry & e : src->metadata()) w.copy_entry(e);
        w.add_tensor("t", DType::F16, {8});
        QVERIFY(w.write_file(path, [](size_t, uint64_t, std::span<uint8_t> d) {
                     std::fill(d.begin(), d.end(), uint8_t(7));
                     return Status{};
                 }).ok());
        auto f = GgufFile::open(path);
        QVERIFY2(f.ok(), qPrintable(message_of(f)));
        QCOMPARE(f->metadata().size(), src->metadata().size());
        QCOMPARE(f->get_string_array("tokenizer.ggml.tokens")->value()[2], std::string_view("</s>"));
        QCOMPARE(f->find_tensor("t")->data[15], uint8_t(7));
        QVERIFY(!QFile::exists(QString::fromStdString(path + ".partial")));
    }

    // A tensor larger than one piece is produced in whole-row pieces, in order.
    void largeTensorsAreFilledPieceByPiece() {
        GgufWriter w;
        w.add_tensor("big", DType::F32, {1000, 9000});  // 36 MB: three pieces of 16 MiB or less
        std::vector<uint64_t> firsts;
        auto bytes = w.write_bytes([&](size_t, uint64_t first_row, std::span<uint8_t> dst) {
            firsts.push_back(first_row);
            if (dst.size() % 4000 != 0) return error(StatusCode::internal, "piece is not whole rows");
            auto * f = reinterpret_cast<float *>(dst.data());
            for (size_t r = 0; r < dst.size() / 4000; ++r) f[r * 1000] = float(first_row + r);
            return Status{};
        });
        QVERIFY(bytes.ok());
        QVERIFY(firsts.size() >= 3);
        QCOMPARE(firsts.front(), uint64_t(0));
        QVERIFY(std::is_sorted(firsts.begin(), firsts.end()));
        auto f = GgufFile::parse(*bytes, "big");
        QVERIFY(f.ok());
        const auto * data = reinterpret_cast<const float *>(f->find_tensor("big")->data);
        for (uint64_t r : {uint64_t(0), uint64_t(4193), uint64_t(8999)}) QCOMPARE(data[r * 1000], float(r));
    }

    void failedFillLeavesNoFile() {
        QTemporaryDir dir;
        const std::string path = (dir.path() + "/bad.gguf").toStdString();
        GgufWriter w = small_writer();
        Status s = w.write_file(path, [](size_t, uint64_t, std::span<uint8_t>) { return error(StatusCode::cancelled, "stop"); });
        QCOMPARE(s.code(), StatusCode::cancelled);
        QVERIFY(!QFile::exists(QString::fromStdString(path)));
        QVERIFY(!QFile::exists(QString::fromStdString(path + ".partial")));
    }

    void missingAndEmptyFiles() {
        auto missing = GgufFile::open("/nonexistent/model.gguf");
        QCOMPARE(missing.status().code(), StatusCode::not_found);
        QVERIFY(message_of(missing).contains("/nonexistent/model.gguf"));
        QTemporaryDir dir;
        QFile empty(dir.path() + "/empty.gguf");
        QVERIFY(empty.open(QIODevice::WriteOnly));
        empty.close();
        auto e = GgufFile::open(empty.fileName().toStdString());
        QCOMPARE(e.status().code(), StatusCode::corrupt_data);
        QVERIFY(message_of(e).contains("empty"));
        auto dirfile = GgufFile::open(dir.path().toStdString());
        QVERIFY(!dirfile.ok());
    }

    // Every truncation point of a valid file is an error, never a crash.
    void truncatedAtEveryByte() {
        const std::vector<uint8_t> bytes = small_file();
        for (size_t n = 0; n < bytes.size(); ++n) {
            auto f = GgufFile::parse(std::span(bytes.data(), n), "cut.gguf");
            QVERIFY2(!f.ok(), qPrintable(QString("accepted a file cut at %1 of %2 bytes").arg(n).arg(bytes.size())));
            QVERIFY(message_of(f).startsWith("cut.gguf: "));
        }
    }

    void malformed_data() {
        QTest::addColumn<QString>("mutation");
        QTest::addColumn<QString>("expected");
        QTest::newRow("magic") << "magic"
                               << "wrong magic";
        QTest::newRow("version-1") << "version1"
                                   << "version 1";
        QTest::newRow("version-99") << "version99"
                                    << "unknown GGUF version 99";
        QTest::newRow("huge-kv-count") << "kvcount"
                                       << "metadata count";
        QTest::newRow("huge-tensor-count") << "tcount"
                                           << "tensor count";
        QTest::newRow("huge-string") << "keylen"
                                     << "truncated file";
        QTest::newRow("huge-array") << "arraylen"
                                    << "tokenizer.ggml.scores";
        QTest::newRow("unknown-value-type") << "valuetype"
                                            << "unknown value type";
        QTest::newRow("bad-alignment") << "alignment"
                                       << "general.alignment";
        QTest::newRow("unknown-tensor-type") << "tensortype"
                                             << "unknown type number";
        QTest::newRow("too-many-dims") << "ndims"
                                       << "dimensions";
        QTest::newRow("zero-dim") << "zerodim"
                                  << "invalid shape";
        QTest::newRow("misaligned-offset") << "offset"
                                           << "alignment";
        QTest::newRow("data-past-end") << "pastend"
                                       << "past the end";
        QTest::newRow("duplicate-key") << "dupkey"
                                       << "duplicate metadata key";
        QTest::newRow("nested-array") << "nested"
                                      << "array of arrays";
        QTest::newRow("block-size") << "blocksize"
                                    << "block size";
    }
    void malformed() {
        QFETCH(QString, mutation);
        QFETCH(QString, expected);
        std::vector<uint8_t> b = small_file();
        if (mutation == "magic") {
            b[0] = 'X';
        } else if (mutation == "version1") {
            put_u32(b, 4, 1);
        } else if (mutation == "version99") {
            put_u32(b, 4, 99);
        } else if (mutation == "kvcount") {
            put_u64(b, 16, uint64_t(1) << 60);
        } else if (mutation == "tcount") {
            put_u64(b, 8, uint64_t(1) << 60);
        } else if (mutation == "keylen") {
            put_u64(b, 24, uint64_t(1) << 62);
        } else if (mutation == "arraylen") {
            const size_t at = find_bytes(b, "tokenizer.ggml.scores") + 21 + 4 + 4;  // key, type, element type
            put_u64(b, at, uint64_t(1) << 61);
        } else if (mutation == "valuetype") {
            put_u32(b, 24 + 8 + std::strlen("general.architecture"), 77);
        } else if (mutation == "alignment") {
            GgufWriter w = small_writer();
            w.set_uint32("general.alignment", 3);  // writer keeps 32, reader must refuse 3
            b = w.write_bytes([](size_t, uint64_t, std::span<uint8_t>) { return Status{}; }).value();
        } else if (mutation == "tensortype" || mutation == "ndims" || mutation == "zerodim" || mutation == "offset" ||
                   mutation == "pastend" || mutation == "blocksize") {
            // Tensor info of "b.weight": name, n_dims, ne[2], type, offset.
            const size_t at = find_bytes(b, "b.weight") + 8;
            if (mutation == "ndims") put_u32(b, at, 5);
            if (mutation == "zerodim") put_u64(b, at + 4, 0);
            if (mutation == "blocksize") put_u64(b, at + 4, 33);
            if (mutation == "tensortype") put_u32(b, at + 4 + 16, 4);
            if (mutation == "offset") put_u64(b, at + 4 + 16 + 4, 48 + 1);
            if (mutation == "pastend") put_u64(b, at + 4 + 16 + 4, 4096);
        } else if (mutation == "dupkey") {
            GgufWriter w;
            w.set_string("k", "1");
            w.set_string("j", "2");
            b = w.write_bytes([](size_t, uint64_t, std::span<uint8_t>) { return Status{}; }).value();
            b[find_bytes(b, "j")] = 'k';
        } else if (mutation == "nested") {
            const size_t at = find_bytes(b, "tokenizer.ggml.scores") + 21 + 4;  // element type
            put_u32(b, at, 9);
        }
        auto f = GgufFile::parse(b, "bad.gguf");
        QVERIFY2(!f.ok(), qPrintable("accepted: " + mutation));
        QVERIFY2(message_of(f).contains(expected), qPrintable(message_of(f)));
        QVERIFY(message_of(f).startsWith("bad.gguf: "));
    }

    // A quick random mutation run over the shared models' headers: errors, never crashes.
    // (The libFuzzer target in tests/fuzz goes much further.)
    void randomMutationsNeverCrash() {
        auto f = GgufFile::open((kShared + "/models/stories260K.gguf").toStdString());
        QVERIFY(f.ok());
        const std::vector<uint8_t> original(f->bytes().begin(), f->bytes().end());
        std::mt19937 rng(1234);
        int rejected = 0;
        for (int iter = 0; iter < 3000; ++iter) {
            std::vector<uint8_t> b = original;
            const int n_flips = 1 + int(rng() % 8);
            for (int k = 0; k < n_flips; ++k) {
                const size_t at = rng() % 40000;  // the header and metadata
                b[at] = static_cast<uint8_t>(rng());
            }
            if (rng() % 4 == 0) b.resize(rng() % b.size());
            auto g = GgufFile::parse(b, "mutated");
            if (!g.ok()) ++rejected;
        }
        QVERIFY(rejected > 0);
    }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
