// The quantization reference: hand-built blocks, round-trip error bounds, dot products, and
// the oracle: quantize_row must reproduce llama-quantize's bytes for the tiny models.

#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/common/dtype.h"
#include "engine/common/fp16.h"
#include "engine/gguf/gguf_file.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "quant_test_util.h"

using namespace lr;
using namespace lr::quant;
using namespace lr::test;

namespace {

// ---- hand-built blocks ----------------------------------------------------------------------

// A block under construction: raw bytes and the floats it must decode to.
struct Built {
    QByteArray bytes;
    QVector<float> expected;
};

template <class Block>
Built built_from(const Block & b, const QVector<float> & expected) {
    return {QByteArray(reinterpret_cast<const char *>(&b), sizeof(b)), expected};
}

constexpr int8_t kIq4nlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Nibble pattern of the 32-element types: byte j holds j (low) and 15 - j (high).
uint8_t legacy_byte(int j) { return static_cast<uint8_t>(j | ((15 - j) << 4)); }
constexpr uint32_t kQh = 0xA5C3F00Fu;  // fifth bits of the Q5 blocks
int qh_bit(int i) { return static_cast<int>((kQh >> i) & 1); }

// Element i of the 32-element nibble layout: low nibble of byte i for i < 16, else high
// nibble of byte i - 16.
int legacy_nibble(int i) { return i < 16 ? i : 15 - (i - 16); }

// Packs 16 six-bit Q3_K scales as the format describes (see block_q3_K).
void pack_q3_scales(const int * sc6, uint8_t * scales) {
    std::memset(scales, 0, 12);
    for (int j = 0; j < 16; ++j) {
        scales[j % 8] |= static_cast<uint8_t>((sc6[j] & 0xF) << (j < 8 ? 0 : 4));
        scales[8 + j % 4] |= static_cast<uint8_t>((sc6[j] >> 4) << (2 * (j / 4)));
    }
}

// Packs 8 six-bit scales and mins of Q4_K/Q5_K (see unpack_scale_min_k4).
void pack_k4_scales(const int * sc6, const int * m6, uint8_t * scales) {
    for (int j = 0; j < 4; ++j) {
        scales[j] = static_cast<uint8_t>(sc6[j] | ((sc6[j + 4] >> 4) << 6));
        scales[j + 4] = static_cast<uint8_t>(m6[j] | ((m6[j + 4] >> 4) << 6));
        scales[j + 8] = static_cast<uint8_t>((sc6[j + 4] & 0xF) | ((m6[j + 4] & 0xF) << 4));
    }
}

Built build(DType type) {
    QVector<float> e;
    switch (type) {
        case DType::F32: {
            const float v[4] = {1.5f, -2.0f, 0.0f, 3.0e-7f};
            return {QByteArray(reinterpret_cast<const char *>(v), sizeof(v)), {1.5f, -2.0f, 0.0f, 3.0e-7f}};
        }
        case DType::F16: {
            const uint16_t v[4] = {0x3C00, 0xC000, 0x7BFF, 0x0001};
            return {QByteArray(reinterpret_cast<const char *>(v), sizeof(v)), {1.0f, -2.0f, 65504.0f, 5.960464477539063e-08f}};
        }
        case DType::BF16: {
            const uint16_t v[3] = {0x3F80, 0xC040, 0x4049};
            return {QByteArray(reinterpret_cast<const char *>(v), sizeof(v)), {1.0f, -3.0f, 3.140625f}};
        }
        case DType::Q4_0: {
            block_q4_0 b{};
            b.d = 0x3800;  // 0.5
            for (int j = 0; j < 16; ++j) b.qs[j] = legacy_byte(j);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(legacy_nibble(i) - 8) * 0.5f);
            return built_from(b, e);
        }
        case DType::Q4_1: {
            block_q4_1 b{};
            b.d = 0x3800;  // 0.5
            b.m = 0xBC00;  // -1
            for (int j = 0; j < 16; ++j) b.qs[j] = legacy_byte(j);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(legacy_nibble(i)) * 0.5f - 1.0f);
            return built_from(b, e);
        }
        case DType::Q5_0: {
            block_q5_0 b{};
            b.d = 0x3400;  // 0.25
            std::memcpy(b.qh, &kQh, 4);
            for (int j = 0; j < 16; ++j) b.qs[j] = legacy_byte(j);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>((legacy_nibble(i) | (qh_bit(i) << 4)) - 16) * 0.25f);
            return built_from(b, e);
        }
        case DType::Q5_1: {
            block_q5_1 b{};
            b.d = 0x3400;  // 0.25
            b.m = 0x3C00;  // 1
            std::memcpy(b.qh, &kQh, 4);
            for (int j = 0; j < 16; ++j) b.qs[j] = legacy_byte(j);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(legacy_nibble(i) | (qh_bit(i) << 4)) * 0.25f + 1.0f);
            return built_from(b, e);
        }
        case DType::Q8_0: {
            block_q8_0 b{};
            b.d = 0x3000;  // 0.125
            for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(i * 8 - 128);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(i * 8 - 128) * 0.125f);
            return built_from(b, e);
        }
        case DType::Q8_1: {
            block_q8_1 b{};
            b.d = 0x3000;  // 0.125
            b.s = 0x4000;  // not used by dequantization
            for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(127 - i * 8);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(127 - i * 8) * 0.125f);
            return built_from(b, e);
        }
        case DType::IQ4_NL: {
            block_iq4_nl b{};
            b.d = 0x3800;  // 0.5
            for (int j = 0; j < 16; ++j) b.qs[j] = legacy_byte(j);
            for (int i = 0; i < 32; ++i) e.push_back(static_cast<float>(kIq4nlLevels[legacy_nibble(i)]) * 0.5f);
            return built_from(b, e);
        }
        case DType::Q2_K: {
            block_q2_K b{};
            b.d = 0x3800;     // 0.5
            b.dmin = 0x3400;  // 0.25
            for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
            for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 37 + 11);
            for (int i = 0; i < 256; ++i) {
                // 128-element halves; within a half, 32-element groups take bit pairs 0-1, 2-3, ...
                const int q = (b.qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
                const int sub = i / 16;
                e.push_back(0.5f * static_cast<float>(sub * q) - 0.25f * static_cast<float>(15 - sub));
            }
            return built_from(b, e);
        }
        case DType::Q3_K: {
            block_q3_K b{};
            b.d = 0x3800;  // 0.5
            int sc6[16];
            for (int j = 0; j < 16; ++j) sc6[j] = (j * 9 + 5) & 63;
            pack_q3_scales(sc6, b.scales);
            for (int k = 0; k < 32; ++k) b.hmask[k] = static_cast<uint8_t>(k * 53 + 7);
            for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 37 + 11);
            for (int i = 0; i < 256; ++i) {
                const int low = (b.qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
                const int high = (b.hmask[i % 32] >> (i / 32)) & 1;
                const int q = (low | (high << 2)) - 4;
                e.push_back(0.5f * static_cast<float>((sc6[i / 16] - 32) * q));
            }
            return built_from(b, e);
        }
        case DType::Q4_K:
        case DType::Q5_K: {
            int sc6[8];
            int m6[8];
            for (int j = 0; j < 8; ++j) {
                sc6[j] = 10 + 7 * j;
                m6[j] = 63 - 5 * j;
            }
            uint8_t qs[128];
            uint8_t qh[32];
            for (int k = 0; k < 128; ++k) qs[k] = static_cast<uint8_t>(k * 37 + 11);
            for (int k = 0; k < 32; ++k) qh[k] = static_cast<uint8_t>(k * 13 + 3);
            const bool five = type == DType::Q5_K;
            for (int i = 0; i < 256; ++i) {
                // 64-element chunks: low nibbles of 32 bytes, then their high nibbles.
                const uint8_t byte = qs[32 * (i / 64) + i % 32];
                int q = (i % 64) < 32 ? (byte & 0xF) : (byte >> 4);
                if (five) q |= ((qh[i % 32] >> (i / 32)) & 1) << 4;
                e.push_back(0.5f * static_cast<float>(sc6[i / 32] * q) - 0.25f * static_cast<float>(m6[i / 32]));
            }
            if (five) {
                block_q5_K b{};
                b.d = 0x3800;     // 0.5
                b.dmin = 0x3400;  // 0.25
                pack_k4_scales(sc6, m6, b.scales);
                std::memcpy(b.qs, qs, sizeof(qs));
                std::memcpy(b.qh, qh, sizeof(qh));
                return built_from(b, e);
            }
            block_q4_K b{};
            b.d = 0x3800;     // 0.5
            b.dmin = 0x3400;  // 0.25
            pack_k4_scales(sc6, m6, b.scales);
            std::memcpy(b.qs, qs, sizeof(qs));
            return built_from(b, e);
        }
        case DType::Q6_K: {
            block_q6_K b{};
            b.d = 0x3400;  // 0.25
            for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j * 16 - 121);
            for (int k = 0; k < 128; ++k) b.ql[k] = static_cast<uint8_t>(k * 29 + 1);
            for (int k = 0; k < 64; ++k) b.qh[k] = static_cast<uint8_t>(k * 11 + 5);
            for (int i = 0; i < 256; ++i) {
                const int h = i / 128;         // half
                const int g = (i % 128) / 32;  // group of 32 within the half
                const int l = i % 32;
                const uint8_t lb = b.ql[64 * h + (g % 2) * 32 + l];
                const int low = g < 2 ? (lb & 0xF) : (lb >> 4);
                const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
                e.push_back(0.25f * static_cast<float>(b.scales[i / 16] * ((low | (high << 4)) - 32)));
            }
            return built_from(b, e);
        }
        case DType::Q8_K: {
            block_q8_K b{};
            b.d = 0.5f;
            for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
            for (int i = 0; i < 256; ++i) e.push_back(0.5f * static_cast<float>(i - 128));
            return built_from(b, e);
        }
        default: qFatal("no hand-built block for %s", std::string(dtype_name(type)).c_str());
    }
    return {};
}

const char * const kAllTypes[] = {"F32",  "F16",  "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                                  "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ4_NL"};

// Weight types (those with a dot product) with their error bounds. Inputs are generated
// deterministically, so the bounds sit about 1.3-2x above the measured values (in the
// comments) and still catch a scale that is off by a few percent.
struct TypeBounds {
    const char * name;
    double rmse;      // relative RMSE of dequantize(quantize(x)), x ~ N(0, s), 4 super-blocks
    double constant;  // the same for a constant row (only the fp16 rounding of a scale)
    double dot;       // |vec_dot - w.a| / (|w| |a|) against the unquantized rows
};

const TypeBounds kWeightTypes[] = {
    {"F32", 0.0, 0.0, 2e-7},       // dot 5.2e-8
    {"F16", 3e-4, 5e-4, 1.5e-5},   // 2.2e-4, 2.8e-4, 5.4e-6
    {"BF16", 2.5e-3, 4e-3, 2e-4},  // 1.7e-3, 2.4e-3, 8.7e-5
    {"Q8_0", 6.5e-3, 5e-4, 8e-4},  // 5.4e-3, 2.4e-4, 3.2e-4
    {"Q4_0", 0.11, 5e-4, 6e-3},    // 0.086, 2.8e-4, 2.7e-3
    {"Q4_1", 0.10, 5e-4, 8e-3},    // 0.080, 2.8e-4, 3.7e-3
    {"Q5_0", 0.055, 5e-4, 3e-3},   // 0.044, 2.8e-4, 1.4e-3
    {"Q5_1", 0.05, 5e-4, 3e-3},    // 0.039, 2.8e-4, 1.5e-3
    {"Q2_K", 0.40, 5e-4, 0.025},   // 0.306, 5.0e-5, 0.010
    {"Q3_K", 0.20, 5e-4, 0.012},   // 0.156, 2.8e-4, 5.9e-3
    {"Q4_K", 0.10, 5e-4, 6e-3},    // 0.074, 2.9e-4, 3.0e-3
    {"Q5_K", 0.05, 5e-4, 1.2e-3},  // 0.036, 2.4e-4, 5.3e-4
    {"Q6_K", 0.025, 5e-4, 2e-3},   // 0.018, 2.8e-4, 8.7e-4
    {"IQ4_NL", 0.10, 5e-4, 6e-3},  // 0.078, 2.4e-4, 3.1e-3
};

const TypeBounds & bounds_of(DType type) {
    for (const TypeBounds & t : kWeightTypes) {
        if (type_named(t.name) == type) return t;
    }
    qFatal("no bounds for %s", std::string(dtype_name(type)).c_str());
}

}  // namespace

class TestQuant : public QObject {
    Q_OBJECT
private slots:
    void blockSizesMatchDtypeTable() {
        QCOMPARE(sizeof(block_q4_0), size_t(dtype_traits(DType::Q4_0).block_bytes));
        QCOMPARE(sizeof(block_q4_1), size_t(dtype_traits(DType::Q4_1).block_bytes));
        QCOMPARE(sizeof(block_q5_0), size_t(dtype_traits(DType::Q5_0).block_bytes));
        QCOMPARE(sizeof(block_q5_1), size_t(dtype_traits(DType::Q5_1).block_bytes));
        QCOMPARE(sizeof(block_q8_0), size_t(dtype_traits(DType::Q8_0).block_bytes));
        QCOMPARE(sizeof(block_q8_1), size_t(dtype_traits(DType::Q8_1).block_bytes));
        QCOMPARE(sizeof(block_q2_K), size_t(dtype_traits(DType::Q2_K).block_bytes));
        QCOMPARE(sizeof(block_q3_K), size_t(dtype_traits(DType::Q3_K).block_bytes));
        QCOMPARE(sizeof(block_q4_K), size_t(dtype_traits(DType::Q4_K).block_bytes));
        QCOMPARE(sizeof(block_q5_K), size_t(dtype_traits(DType::Q5_K).block_bytes));
        QCOMPARE(sizeof(block_q6_K), size_t(dtype_traits(DType::Q6_K).block_bytes));
        QCOMPARE(sizeof(block_q8_K), size_t(dtype_traits(DType::Q8_K).block_bytes));
        QCOMPARE(sizeof(block_iq4_nl), size_t(dtype_traits(DType::IQ4_NL).block_bytes));
        QCOMPARE(sizeof(block_iq2_xxs), size_t(dtype_traits(DType::IQ2_XXS).block_bytes));
        QCOMPARE(sizeof(block_iq2_xs), size_t(dtype_traits(DType::IQ2_XS).block_bytes));
        QCOMPARE(sizeof(block_iq2_s), size_t(dtype_traits(DType::IQ2_S).block_bytes));
        QCOMPARE(sizeof(block_iq3_xxs), size_t(dtype_traits(DType::IQ3_XXS).block_bytes));
        QCOMPARE(sizeof(block_iq3_s), size_t(dtype_traits(DType::IQ3_S).block_bytes));
        QCOMPARE(sizeof(block_iq1_s), size_t(dtype_traits(DType::IQ1_S).block_bytes));
        QCOMPARE(sizeof(block_iq1_m), size_t(dtype_traits(DType::IQ1_M).block_bytes));
        QCOMPARE(sizeof(block_iq4_xs), size_t(dtype_traits(DType::IQ4_XS).block_bytes));
        QCOMPARE(sizeof(block_tq2_0), size_t(dtype_traits(DType::TQ2_0).block_bytes));
        QCOMPARE(sizeof(block_mxfp4), size_t(dtype_traits(DType::MXFP4).block_bytes));
    }

    void supportedTypes() {
        for (const char * name : kAllTypes) {
            QVERIFY2(can_dequantize(type_named(name)), name);
            QVERIFY2(can_quantize(type_named(name)), name);
        }
        QVERIFY(!can_dequantize(DType::TQ1_0));
        QVERIFY(!can_dequantize(DType::I8));
        QCOMPARE(vec_dot_type(DType::F16), DType::F16);
        QCOMPARE(vec_dot_type(DType::IQ4_NL), DType::Q8_0);
        QCOMPARE(vec_dot_type(DType::Q5_1), DType::Q8_1);
        QCOMPARE(vec_dot_type(DType::Q3_K), DType::Q8_K);
    }

    // 1. A block written byte by byte decodes to exactly the floats its layout describes.
    void dequantizeHandBuiltBlock_data() {
        QTest::addColumn<QString>("type");
        for (const char * name : kAllTypes) QTest::newRow(name) << QString(name);
    }
    void dequantizeHandBuiltBlock() {
        QFETCH(QString, type);
        const DType t = type_named(type);
        const Built b = build(t);
        const size_t n = static_cast<size_t>(b.expected.size());
        QCOMPARE(row_bytes(t, n), static_cast<size_t>(b.bytes.size()));
        const std::vector<float> y = dequantized(t, b.bytes.constData(), n);
        for (size_t i = 0; i < n; ++i) {
            if (y[i] != b.expected[static_cast<qsizetype>(i)]) {
                QFAIL(qPrintable(QString("element %1: got %2, expected %3")
                                     .arg(i)
                                     .arg(double(y[i]), 0, 'g', 9)
                                     .arg(double(b.expected[static_cast<qsizetype>(i)]), 0, 'g', 9)));
            }
        }
    }

    // Literal values read off the layouts by hand, so a mistake shared by the block builder
    // above and the library cannot hide.
    void dequantizeSpotValues() {
        // Q4_K element 1: sub-block 0 (scale 10, min 63), q = low nibble of qs[1] = 48 & 15 = 0
        // -> 0.5*10*0 - 0.25*63.
        const Built q4k = build(DType::Q4_K);
        std::vector<float> y = dequantized(DType::Q4_K, q4k.bytes.constData(), 256);
        QCOMPARE(y[1], -15.75f);
        // Element 33: sub-block 1 (scale 17, min 58), q = high nibble of qs[1] = 3.
        QCOMPARE(y[33], 0.5f * 17 * 3 - 0.25f * 58);
        // Element 255: sub-block 7 (scale 59, min 28), high nibble of qs[127] = (127*37+11)&255 = 102 -> 6.
        QCOMPARE(y[255], 170.0f);
        // Q6_K element 0: ql[0] = 1, qh[0] = 5 (bits 0-1 = 1) -> q = 1 | 16 = 17; scale -121.
        const Built q6k = build(DType::Q6_K);
        y = dequantized(DType::Q6_K, q6k.bytes.constData(), 256);
        QCOMPARE(y[0], 0.25f * -121 * (17 - 32));
        // Q5_0 element 16: high nibble of qs[0] = 15, fifth bit = bit 16 of 0xA5C3F00F = 1 -> 31.
        const Built q50 = build(DType::Q5_0);
        y = dequantized(DType::Q5_0, q50.bytes.constData(), 32);
        QCOMPARE(y[16], 0.25f * (31 - 16));
        QCOMPARE(y[4], 0.25f * (4 - 16));  // bit 4 of kQh is 0
    }

    // 2. dequantize(quantize(x)) stays within each type's error bound, several blocks per row.
    void roundTripError_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<double>("bound");
        for (const TypeBounds & t : kWeightTypes) {
            const QString name = t.name;
            QTest::newRow(qPrintable(name + "/random")) << name << QString("random") << t.rmse;
            QTest::newRow(qPrintable(name + "/weights")) << name << QString("weights") << t.rmse;
            QTest::newRow(qPrintable(name + "/large")) << name << QString("large") << t.rmse;
            // A few values 20x the others: the rest of their blocks lose precision.
            QTest::newRow(qPrintable(name + "/outlier")) << name << QString("outlier") << 2 * t.rmse;
            QTest::newRow(qPrintable(name + "/constant")) << name << QString("constant") << t.constant;
            QTest::newRow(qPrintable(name + "/negative")) << name << QString("negative") << t.constant;
            QTest::newRow(qPrintable(name + "/zero")) << name << QString("zero") << 0.0;
        }
        // Activation types: Q8_K has one scale per 256 values, so a larger amax per block.
        QTest::newRow("Q8_1/random") << QString("Q8_1") << QString("random") << 6.5e-3;  // 5.4e-3
        QTest::newRow("Q8_1/zero") << QString("Q8_1") << QString("zero") << 0.0;
        QTest::newRow("Q8_K/random") << QString("Q8_K") << QString("random") << 9e-3;  // 7.3e-3
        QTest::newRow("Q8_K/large") << QString("Q8_K") << QString("large") << 9e-3;
        QTest::newRow("Q8_K/zero") << QString("Q8_K") << QString("zero") << 0.0;
    }
    void roundTripError() {
        QFETCH(QString, type);
        QFETCH(QString, kind);
        QFETCH(double, bound);
        const DType t = type_named(type);
        constexpr size_t n = 1024;  // 32 legacy blocks, 4 super-blocks
        std::vector<float> x(n);
        Normal rng(1234);
        for (size_t i = 0; i < n; ++i) {
            if (kind == "random" || kind == "outlier") x[i] = rng.next(1.0f);
            if (kind == "weights") x[i] = rng.next(0.02f);
            if (kind == "large") x[i] = rng.next(1000.0f);
            if (kind == "constant") x[i] = 0.7f;
            if (kind == "negative") x[i] = -1.3f;
            if (kind == "zero") x[i] = 0.0f;
        }
        if (kind == "outlier") {
            for (size_t i = 5; i < n; i += 97) x[i] *= 20.0f;
        }
        const std::vector<uint8_t> q = quantized(t, x);
        const std::vector<float> y = dequantized(t, q.data(), n);
        const double err = relative_rmse(x.data(), y.data(), n);
        qInfo("%s %s: relative rmse %.3g (bound %.3g)", qPrintable(type), qPrintable(kind), err, bound);
        QVERIFY2(err <= bound, qPrintable(QString("relative rmse %1 > %2").arg(err).arg(bound)));
        if (kind == "zero") {
            for (float v : y) QCOMPARE(v, 0.0f);
        }
        // Quantizing is a function of the input: the same row gives the same bytes.
        QVERIFY(quantized(t, x) == q);
    }

    // 3. vec_dot against double-precision dot products: of the dequantized rows (the same
    // quantized values, so only float rounding differs) and of the original rows.
    void vecDot_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<double>("bound");
        for (const TypeBounds & t : kWeightTypes) QTest::newRow(t.name) << QString(t.name) << t.dot;
    }
    void vecDot() {
        QFETCH(QString, type);
        QFETCH(double, bound);
        const DType t = type_named(type);
        const DType at = vec_dot_type(t);
        constexpr size_t n = 2048;
        Normal rng(99);
        double worst_same = 0.0;
        double worst_exact = 0.0;
        for (int trial = 0; trial < 8; ++trial) {
            std::vector<float> w(n);
            std::vector<float> a(n);
            for (size_t i = 0; i < n; ++i) w[i] = rng.next(0.02f);
            for (size_t i = 0; i < n; ++i) a[i] = rng.next(1.0f) + (trial % 2 ? 0.5f : 0.0f);  // odd trials: mean != 0
            const std::vector<uint8_t> wq = quantized(t, w);
            const std::vector<uint8_t> aq = quantized(at, a);
            const double got = vec_dot(t, n, wq.data(), aq.data());

            const std::vector<float> wd = dequantized(t, wq.data(), n);
            const std::vector<float> ad = dequantized(at, aq.data(), n);
            double same = 0.0;
            double same_abs = 0.0;
            double exact = 0.0;
            double norm_w = 0.0;
            double norm_a = 0.0;
            for (size_t i = 0; i < n; ++i) {
                same += static_cast<double>(wd[i]) * ad[i];
                same_abs += std::fabs(static_cast<double>(wd[i]) * ad[i]);
                exact += static_cast<double>(w[i]) * a[i];
                norm_w += static_cast<double>(w[i]) * w[i];
                norm_a += static_cast<double>(a[i]) * a[i];
            }
            worst_same = std::max(worst_same, std::fabs(got - same) / same_abs);
            worst_exact = std::max(worst_exact, std::fabs(got - exact) / std::sqrt(norm_w * norm_a));
        }
        qInfo("%s: vs dequantized %.3g, vs exact %.3g (bound %.3g)", qPrintable(type), worst_same, worst_exact, bound);
        // Q4_1/Q5_1 use the activation sum s, rounded to fp16, instead of summing the
        // dequantized activations: that rounding is relative 2^-11 of the min term.
        const double same_bound = (t == DType::Q4_1 || t == DType::Q5_1) ? 5e-4 : 1e-6;  // 1e-4, 1e-7
        QVERIFY2(worst_same <= same_bound, qPrintable(QString("vs dequantized: %1").arg(worst_same)));
        QVERIFY2(worst_exact <= bound, qPrintable(QString("vs exact: %1").arg(worst_exact)));
    }

    // Activation quantizers: Q8_K's bsums are the sums of its quants; Q8_1's s is d * sum.
    void activationSums() {
        constexpr size_t n = 512;
        std::vector<float> x(n);
        Normal rng(7);
        for (float & v : x) v = rng.next(2.0f);
        std::vector<block_q8_K> k(n / QK_K);
        quantize_row(DType::Q8_K, x.data(), k.data(), n);
        for (const block_q8_K & b : k) {
            for (int j = 0; j < 16; ++j) {
                int sum = 0;
                for (int i = 0; i < 16; ++i) sum += b.qs[16 * j + i];
                QCOMPARE(int(b.bsums[j]), sum);
            }
        }
        std::vector<block_q8_1> o(n / QK8_1);
        quantize_row(DType::Q8_1, x.data(), o.data(), n);
        for (size_t ib = 0; ib < o.size(); ++ib) {
            float amax = 0.0f;
            for (int i = 0; i < QK8_1; ++i) amax = std::max(amax, std::fabs(x[ib * QK8_1 + i]));
            int sum = 0;
            for (int8_t v : o[ib].qs) sum += v;
            // s uses the unrounded float scale, d its fp16 rounding.
            QCOMPARE(o[ib].d, fp32_to_fp16(amax / 127));
            QCOMPARE(o[ib].s, fp32_to_fp16(static_cast<float>(sum) * (amax / 127)));
        }
    }

    // 4. THE ORACLE: llama-quantize --pure wrote these files from tiny-llama-f32.gguf;
    // quantize_row of each f32 tensor must reproduce the bytes of the same-named tensor.
    void oracleMatchesLlamaQuantize_data() {
        QTest::addColumn<QString>("file");
        for (const TypeBounds & t : kWeightTypes) {
            if (QString(t.name) == "F32") continue;
            QTest::newRow(t.name) << QString("tiny-llama-%1.gguf").arg(t.name);
        }
        QTest::newRow("Q4_K_M") << QString("tiny-llama-Q4_K_M.gguf");  // Q4_K and Q6_K tensors
    }
    void oracleMatchesLlamaQuantize() {
        QFETCH(QString, file);
        const std::string dir = LONGREAD_SHARED_DIR "/models/tiny/";
        auto f32 = gguf::GgufFile::open(dir + "tiny-llama-f32.gguf");
        auto quant = gguf::GgufFile::open(dir + file.toStdString());
        if (!f32.ok() || !quant.ok()) {
            QSKIP(qPrintable(QString("tiny models not available: %1")
                                 .arg(QString::fromStdString(!f32.ok() ? f32.status().message() : quant.status().message()))));
        }

        int n_quantized = 0;
        size_t n_rows_total = 0;
        double worst_err = 0.0;
        QStringList mismatches;
        for (const gguf::TensorInfo & tq : quant->tensors()) {
            const gguf::TensorInfo * tf = f32->find_tensor(tq.name);
            QVERIFY2(tf != nullptr, tq.name.c_str());
            QCOMPARE(tf->type, DType::F32);
            QVERIFY(tf->ne == tq.ne);
            const size_t n_per_row = tq.ne[0];
            const size_t n_rows = tq.n_elements() / n_per_row;
            const size_t q_row_bytes = row_bytes(tq.type, n_per_row);
            QCOMPARE(tq.n_bytes, q_row_bytes * n_rows);
            const auto * src = reinterpret_cast<const float *>(tf->data);

            std::vector<uint8_t> q(q_row_bytes);
            size_t n_rows_equal = 0;
            for (size_t r = 0; r < n_rows; ++r) {
                quantize_row(tq.type, src + r * n_per_row, q.data(), n_per_row);
                if (std::memcmp(q.data(), tq.data + r * q_row_bytes, q_row_bytes) == 0) ++n_rows_equal;
            }
            n_rows_total += n_rows;
            if (n_rows_equal != n_rows) {
                mismatches << QString("%1 (%2): %3 of %4 rows equal")
                                  .arg(QString::fromStdString(tq.name), QString::fromUtf8(dtype_name(tq.type).data()))
                                  .arg(n_rows_equal)
                                  .arg(n_rows);
            }

            // The file's tensor dequantizes close to the original (weights ~ N(0, 0.02), so the
            // round-trip bounds of N(0, s) rows apply).
            const std::vector<float> y = dequantized(tq.type, tq.data, tq.n_elements());
            const double err = relative_rmse(src, y.data(), tq.n_elements());
            const double bound = bounds_of(tq.type).rmse;
            QVERIFY2(err <= bound, qPrintable(QString("%1: relative rmse %2 > %3").arg(tq.name.c_str()).arg(err).arg(bound)));
            worst_err = std::max(worst_err, err);
            if (tq.type != DType::F32) ++n_quantized;
        }
        qInfo("%s: %zu rows of %d quantized tensors compared, worst relative rmse %.3g", qPrintable(file), n_rows_total, n_quantized,
              worst_err);
        QCOMPARE(n_quantized, 2 + 2 * 7);  // token_embd, output, 7 matrices per layer x 2 layers
        QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.join("; ")));
    }
};

QTEST_GUILESS_MAIN(TestQuant)
#include "test_quant.moc"
