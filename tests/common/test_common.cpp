#include <QtTest>

#include <cmath>

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
