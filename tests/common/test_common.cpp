#include <QtTest>

#include <cmath>
#include <random>

#include "engine/common/dtype.h"
#include "engine/common/fp16.h"
#include "engine/common/status.h"

using namespace lr;

class TestCommon : public QObject {
    Q_OBJECT
private slots:
    void resultCarriesValueOrStatus() {
        Result<int> good = 42;
        QVERIFY(good.ok());
        QCOMPARE(*good, 42);
        Result<int> bad = error(StatusCode::not_found, "model.gguf: no such file");
        QVERIFY(!bad.ok());
        QCOMPARE(bad.status().code(), StatusCode::not_found);
        QCOMPARE(QString::fromStdString(bad.status().message()), QString("model.gguf: no such file"));
    }

    void resultFromOkStatusIsAnError() {
        Result<int> r = Status::ok_status();
        QVERIFY(!r.ok());
        QCOMPARE(r.status().code(), StatusCode::internal);
    }

    void withContextPrefixes() {
        Status s = error(StatusCode::io_error, "short read").with_context("a.gguf");
        QCOMPARE(QString::fromStdString(s.message()), QString("a.gguf: short read"));
        QVERIFY(Status().with_context("x").ok());
    }

    void fp16RoundTrip_data() {
        QTest::addColumn<float>("value");
        QTest::addColumn<float>("expected");
        QTest::newRow("one") << 1.0f << 1.0f;
        QTest::newRow("neg") << -2.5f << -2.5f;
        QTest::newRow("max") << 65504.0f << 65504.0f;
        QTest::newRow("overflow") << 1e6f << INFINITY;
        QTest::newRow("subnormal") << 5.960464477539063e-08f << 5.960464477539063e-08f;
        QTest::newRow("rounds-to-even") << 1.00048828125f << 1.0f;  // halfway between 1 and 1+2^-10
        QTest::newRow("tiny-to-zero") << 1e-9f << 0.0f;
    }
    void fp16RoundTrip() {
        QFETCH(float, value);
        QFETCH(float, expected);
        QCOMPARE(fp16_to_fp32(fp32_to_fp16(value)), expected);
    }

    void fp16AllHalfValuesRoundTrip() {
        for (uint32_t h = 0; h < 0x10000; ++h) {
            const float f = fp16_to_fp32(static_cast<uint16_t>(h));
            if (std::isnan(f)) continue;
            QCOMPARE(fp32_to_fp16(f), static_cast<uint16_t>(h));
        }
    }

    // Outward rounding: the half below (above) f, and no half between it and f; exact
    // values stay as they are.
    void fp16RoundsOutward() {
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
        std::uniform_int_distribution<int> exponent(-30, 18);
        for (int i = 0; i < 20000; ++i) {
            const float f = std::ldexp(mantissa(rng), exponent(rng));
            const uint16_t down = fp16_round_down(f), up = fp16_round_up(f);
            QVERIFY2(fp16_to_fp32(down) <= f && fp16_to_fp32(up) >= f, qPrintable(QString::number(double(f), 'g', 9)));
            const uint16_t nearest = fp32_to_fp16(f);
            QVERIFY(down == nearest || up == nearest);
            // Neighbours: the only halves around f (0x8000 and 0 are both zero).
            if (fp16_to_fp32(nearest) != f) QVERIFY(fp16_to_fp32(up) > fp16_to_fp32(down));
        }
        QCOMPARE(fp16_round_down(1.0f), fp32_to_fp16(1.0f));
        QCOMPARE(fp16_round_up(1.0f), fp32_to_fp16(1.0f));
        QCOMPARE(fp16_to_fp32(fp16_round_up(1e6f)), INFINITY);
        QCOMPARE(fp16_to_fp32(fp16_round_down(1e6f)), 65504.0f);
        QCOMPARE(fp16_to_fp32(fp16_round_down(-1e-9f)), -std::ldexp(1.0f, -24));
        QCOMPARE(fp16_to_fp32(fp16_round_up(1e-9f)), std::ldexp(1.0f, -24));
        QCOMPARE(fp16_to_fp32(fp16_round_up(1.0f + 1e-4f)), 1.0f + std::ldexp(1.0f, -10));
    }

    void bf16RoundsToNearestEven() {
        QCOMPARE(bf16_to_fp32(fp32_to_bf16(1.0f)), 1.0f);
        QCOMPARE(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), uint16_t(0x3f80));  // tie -> even
        QCOMPARE(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), uint16_t(0x3f82));  // tie -> even (up)
        QVERIFY(std::isnan(bf16_to_fp32(fp32_to_bf16(NAN))));
    }

    void dtypeTraits() {
        QCOMPARE(dtype_traits(DType::Q4_K).block_bytes, 144u);
        QCOMPARE(dtype_traits(DType::Q6_K).block_elems, 256u);
        QCOMPARE(row_bytes(DType::Q8_0, 64), size_t(68));
        QVERIFY(!dtype_traits(4).has_value());  // removed Q4_2
        QCOMPARE(dtype_from_name("q4_k").value(), DType::Q4_K);
        QVERIFY(!dtype_from_name("Q9_9").has_value());
    }
};

QTEST_GUILESS_MAIN(TestCommon)
#include "test_common.moc"
