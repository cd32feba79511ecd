// eval-kv --attention-out: the PNG encoder's output read back byte by byte (signature,
// chunk CRCs, IHDR, the stored deflate blocks and their Adler-32, every pixel, and zlib's
// own inflate through qUncompress), the JSON's documented shape, and on stories260K a full
// and an H2O run of one window whose plot marks the evictions in the policy's map only.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/runtime/attention_map.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

uint32_t be32(const std::vector<uint8_t> & b, size_t at) {
    return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

// Bit by bit, as the PNG specification's sample code: a second opinion on the table's.
uint32_t slow_crc32(const uint8_t * p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

struct Chunk {
    std::string type;
    std::vector<uint8_t> data;
};

// The chunks of a PNG file, every CRC checked.
std::vector<Chunk> read_chunks(const std::vector<uint8_t> & png) {
    std::vector<Chunk> chunks;
    const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (png.size() < 8 || !std::equal(signature, signature + 8, png.begin())) {
        qWarning("bad signature");
        return {};
    }
    size_t at = 8;
    while (at + 12 <= png.size()) {
        const uint32_t n = be32(png, at);
        if (at + 12 + n > png.size()) break;
        const uint32_t crc = be32(png, at + 8 + n);
        if (crc != slow_crc32(png.data() + at + 4, 4 + n)) {
            qWarning("chunk CRC mismatch");
            return {};
        }
        chunks.push_back({std::string(png.begin() + std::ptrdiff_t(at + 4), png.begin() + std::ptrdiff_t(at + 8)),
                          std::vector<uint8_t>(png.begin() + std::ptrdiff_t(at + 8), png.begin() + std::ptrdiff_t(at + 8 + n))});
        at += 12 + n;
    }
    if (at != png.size()) qWarning("trailing bytes");
    return chunks;
}

// The raw scanlines of a zlib stream of stored blocks; empty when malformed.
std::vector<uint8_t> read_stored(const std::vector<uint8_t> & z, int & blocks) {
    std::vector<uint8_t> raw;
    blocks = 0;
    if (z.size() < 6 || z[0] != 0x78 || (z[0] * 256 + z[1]) % 31 != 0) return {};
    size_t at = 2;
    for (bool last = false; !last;) {
        if (at + 5 > z.size() || (z[at] & 0x06) != 0) return {};  // BTYPE 00
        last = z[at] & 1;
        const uint32_t len = z[at + 1] | uint32_t(z[at + 2]) << 8, nlen = z[at + 3] | uint32_t(z[at + 4]) << 8;
        if ((len ^ 0xFFFFu) != nlen || at + 5 + len > z.size()) return {};
        raw.insert(raw.end(), z.begin() + std::ptrdiff_t(at + 5), z.begin() + std::ptrdiff_t(at + 5 + len));
        at += 5 + len;
        ++blocks;
    }
    if (at + 4 != z.size() || be32(z, at) != adler32(raw)) return {};
    return raw;
}

RgbImage test_pattern(uint32_t w, uint32_t h) {
    RgbImage im(w, h, {});
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) im.at(x, y) = {uint8_t(x * 7), uint8_t(y * 13), uint8_t(x ^ y)};
    }
    return im;
}

// Two layers, six positions; the policy evicted positions 2 and 3 of layer 1.
AttentionComparison synthetic() {
    AttentionMass a;
    a.n_positions = 6;
    a.n_query_heads = 2;
    a.n_queries = 6;
    a.layers = {0, 1};
    a.queries = {6, 5, 4, 3, 2, 1};
    a.mass = {6, 2, 1, 1, 1, 1, 6, 2, 1, 1, 1, 1};
    a.held.assign(12, 1.0f);
    AttentionMass b = a;
    b.held[6 + 2] = b.held[6 + 3] = 0.0f;
    KvSettings kv;
    kv.policy = KvPolicy::h2o;
    kv.budget_tokens = 4;
    return {.window_tokens = 7, .prompt_tokens = 3, .policy = kv, .full = a, .policy_run = b};
}

}  // namespace

class TestAttentionMap : public QObject {
    Q_OBJECT

private slots:
    void checksumsMatchTheirStandards() {
        const std::string digits = "123456789";
        const auto bytes = std::span(reinterpret_cast<const uint8_t *>(digits.data()), digits.size());
        QCOMPARE(crc32(bytes), 0xCBF43926u);
        const std::string wiki = "Wikipedia";
        QCOMPARE(adler32(std::span(reinterpret_cast<const uint8_t *>(wiki.data()), wiki.size())), 0x11E60398u);
    }

    void pngReadsBack_data() {
        QTest::addColumn<uint32_t>("width");
        QTest::addColumn<uint32_t>("height");
        QTest::addColumn<int>("blocks");
        QTest::newRow("3x2, one block") << 3u << 2u << 1;
        QTest::newRow("200x120, two blocks") << 200u << 120u << 2;  // 72,120 raw bytes
    }
    void pngReadsBack() {
        QFETCH(uint32_t, width);
        QFETCH(uint32_t, height);
        QFETCH(int, blocks);
        const RgbImage im = test_pattern(width, height);
        const std::vector<uint8_t> png = encode_png(im);
        const std::vector<Chunk> chunks = read_chunks(png);
        QCOMPARE(chunks.size(), size_t(3));
        QCOMPARE(chunks[0].type, std::string("IHDR"));
        QCOMPARE(chunks[1].type, std::string("IDAT"));
        QCOMPARE(chunks[2].type, std::string("IEND"));
        const std::vector<uint8_t> & ihdr = chunks[0].data;
        QCOMPARE(ihdr.size(), size_t(13));
        QCOMPARE(be32(ihdr, 0), width);
        QCOMPARE(be32(ihdr, 4), height);
        QCOMPARE(int(ihdr[8]), 8);   // bit depth
        QCOMPARE(int(ihdr[9]), 2);   // RGB
        QCOMPARE(int(ihdr[10]), 0);  // deflate
        QCOMPARE(int(ihdr[11]), 0);  // filter method
        QCOMPARE(int(ihdr[12]), 0);  // no interlace
        QVERIFY(chunks[2].data.empty());
        int n_blocks = 0;
        const std::vector<uint8_t> raw = read_stored(chunks[1].data, n_blocks);
        QCOMPARE(raw.size(), size_t(height) * (1 + 3 * size_t(width)));
        QCOMPARE(n_blocks, blocks);
        for (uint32_t y = 0; y < height; ++y) {
            const uint8_t * row = raw.data() + size_t(y) * (1 + 3 * size_t(width));
            QCOMPARE(int(row[0]), 0);  // filter none
            for (uint32_t x = 0; x < width; ++x) {
                const Rgb p = im.at(x, y);
                QVERIFY(row[1 + 3 * x] == p.r && row[2 + 3 * x] == p.g && row[3 + 3 * x] == p.b);
            }
        }
        // zlib's own inflate (Adler-32 checked there too) agrees.
        QByteArray sized(4, '\0');
        qToBigEndian(quint32(raw.size()), sized.data());
        sized.append(reinterpret_cast<const char *>(chunks[1].data.data()), qsizetype(chunks[1].data.size()));
        const QByteArray inflated = qUncompress(sized);
        QCOMPARE(size_t(inflated.size()), raw.size());
        QVERIFY(std::equal(raw.begin(), raw.end(), reinterpret_cast<const uint8_t *>(inflated.constData())));
    }

    void emptyImageIsRefused() {
        QVERIFY(encode_png({}).empty());
        QTemporaryDir dir;
        QCOMPARE(write_png((dir.path() + "/x.png").toStdString(), {}).code(), StatusCode::invalid_argument);
    }

    void jsonHasTheDocumentedShape() {
        const AttentionComparison c = synthetic();
        QJsonParseError err;
        const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(attention_json(c)), &err).object();
        QCOMPARE(err.error, QJsonParseError::NoError);
        QCOMPARE(o["window_tokens"].toInt(), 7);
        QCOMPARE(o["prompt_tokens"].toInt(), 3);
        QCOMPARE(o["layers"].toArray(), QJsonArray({0, 1}));
        QCOMPARE(o["n_query_heads"].toInt(), 2);
        QCOMPARE(o["queries"].toArray(), QJsonArray({6, 5, 4, 3, 2, 1}));
        for (const char * name : {"full", "policy"}) {
            const QJsonObject run = o[name].toObject();
            QVERIFY(run["policy"].isString());
            QCOMPARE(run["n_queries"].toInt(), 6);
            QCOMPARE(run["mass"].toArray().size(), 2);
            QCOMPARE(run["mass"].toArray()[1].toArray(), QJsonArray({6, 2, 1, 1, 1, 1}));
            QCOMPARE(run["held"].toArray().size(), 2);
            QCOMPARE(run["evicted"].toArray().size(), 2);
        }
        QVERIFY(o["full"].toObject()["policy"].toString().startsWith("none"));
        QVERIFY(o["policy"].toObject()["policy"].toString().startsWith("h2o"));
        QCOMPARE(o["full"].toObject()["evicted"].toArray(), QJsonArray({QJsonArray(), QJsonArray()}));
        QCOMPARE(o["policy"].toObject()["evicted"].toArray(), QJsonArray({QJsonArray(), QJsonArray({2, 3})}));
        QCOMPARE(o["policy"].toObject()["held"].toArray()[1].toArray()[2].toDouble(), 0.0);
    }

    void plotMarksWhatThePolicyEvicted() {
        const AttentionComparison c = synthetic();
        const RgbImage im = attention_plot(c);
        // Six bins a map, rows of 16 pixels, 8 of margin, 16 between the maps.
        QCOMPARE(im.width, 8u + 6 + 16 + 6 + 8);
        QCOMPARE(im.height, 8u + 2 * 16 + 8);
        auto evicted_mark = [&](uint32_t map_x, uint32_t bin, uint32_t layer) {
            return im.at(map_x + bin, 8 + layer * 16 + 15) == kPlotEvicted;
        };
        const uint32_t full_x = 8, policy_x = 8 + 6 + 16;
        for (uint32_t layer = 0; layer < 2; ++layer) {
            for (uint32_t bin = 0; bin < 6; ++bin) {
                QVERIFY(!evicted_mark(full_x, bin, layer));
                QCOMPARE(evicted_mark(policy_x, bin, layer), layer == 1 && (bin == 2 || bin == 3));
            }
        }
        // The most attended position is the brightest; the top of an evicted bin still shows its heat.
        const Rgb hot = im.at(full_x, 8), cold = im.at(full_x + 2, 8);
        QVERIFY(hot.r + hot.g > cold.r + cold.g);
        QCOMPARE(im.at(policy_x + 2, 8 + 16), im.at(full_x + 2, 8 + 16));
    }

    void plotGoesNextToTheJson() {
        QCOMPARE(attention_plot_path("out/attn.json"), std::string("out/attn.png"));
        QCOMPARE(attention_plot_path("attn"), std::string("attn.png"));
        QCOMPARE(attention_plot_path("dir.d/attn"), std::string("dir.d/attn.png"));
        QTemporaryDir dir;
        QCOMPARE(write_attention_files((dir.path() + "/a.png").toStdString(), synthetic()).code(), StatusCode::invalid_argument);
        const std::string json = (dir.path() + "/a.json").toStdString();
        QVERIFY(write_attention_files(json, synthetic()).ok());
        QVERIFY(QFile::exists(dir.path() + "/a.png"));
        QVERIFY(QFileInfo(dir.path() + "/a.json").size() > 0);
    }

    // One window of stories260K, full cache against H2O at 25%.
    void fullAndPolicyRunsOfOneWindow() {
        CpuBackend backend({.n_threads = 2});
        auto model = Model::load(shared_path("models/stories260K.gguf").toStdString(), backend);
        QVERIFY(model.ok());
        QFile text(shared_path("data/text/tinystories_style_eval.txt"));
        QVERIFY(text.open(QIODevice::ReadOnly));
        const std::vector<int32_t> tokens = (*model)->tokenizer().encode(text.read(2000).toStdString(), true, false);
        KvSettings h2o;
        h2o.policy = KvPolicy::h2o;
        h2o.keep_ratio = 0.25;
        auto c = compare_attention(*model, tokens, 128, h2o);
        QVERIFY2(c.ok(), c.ok() ? "" : c.status().message().c_str());
        QCOMPARE(c->full.n_positions, 127u);
        QCOMPARE(c->policy_run.n_positions, 127u);
        QCOMPARE(c->full.n_queries, uint64_t(127));
        int evicted_full = 0, evicted_policy = 0;
        for (size_t l = 0; l < c->full.layers.size(); ++l) {
            for (uint32_t p = 0; p < 127; ++p) {
                evicted_full += c->full.held_at(l, p) == 0.0f;
                evicted_policy += c->policy_run.held_at(l, p) == 0.0f;
            }
        }
        QCOMPARE(evicted_full, 0);
        QVERIFY(evicted_policy > 0);
        const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(attention_json(*c))).object();
        QCOMPARE(o["queries"].toArray().size(), 127);
        QCOMPARE(o["policy"].toObject()["mass"].toArray()[0].toArray().size(), 127);
        QCOMPARE(o["full"].toObject()["mass"].toArray().size(), qsizetype(c->full.layers.size()));
        QVERIFY(compare_attention(*model, std::span(tokens).first(50), 128, h2o).status().code() == StatusCode::invalid_argument);
    }
};

QTEST_GUILESS_MAIN(TestAttentionMap)
#include "test_attention_map.moc"
