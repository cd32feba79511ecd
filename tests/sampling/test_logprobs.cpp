#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/sampling/logprobs.h"

using namespace lr;

class TestLogprobs : public QObject {
    Q_OBJECT
private slots:
    void areTheLogSoftmax() {
        const std::vector<float> logits{float(std::log(0.5)), float(std::log(0.25)), float(std::log(0.125)), float(std::log(0.125))};
        const double expected[] = {0.5, 0.25, 0.125, 0.125};
        double total = 0;
        for (int32_t t = 0; t < 4; ++t) {
            const TokenLogprobs lp = token_logprobs(logits, t, 0);
            QCOMPARE(lp.token, t);
            QVERIFY(std::abs(lp.logprob - std::log(expected[t])) < 1e-6);
            QVERIFY(lp.top.empty());
            total += std::exp(double(lp.logprob));
        }
        QVERIFY(std::abs(total - 1.0) < 1e-6);
    }

    void doNotDependOnTheLogitsOffset() {
        std::vector<float> logits(32000), shifted(32000);
        for (size_t i = 0; i < logits.size(); ++i) {
            logits[i] = float(std::sin(double(i) * 0.37) * 8.0);
            shifted[i] = logits[i] + 1000.0f;  // exp() of these would overflow without the max taken out
        }
        for (const int32_t t : {0, 17, 31999}) {
            const float a = token_logprobs(logits, t, 0).logprob, b = token_logprobs(shifted, t, 0).logprob;
            QVERIFY(std::isfinite(a) && a < 0);
            QVERIFY2(std::abs(a - b) < 2e-3f, qPrintable(QString("%1 vs %2").arg(a).arg(b)));  // float rounding of +1000
        }
    }

    void topListsTheMostLikelyFirst() {
        const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f};
        const TokenLogprobs lp = token_logprobs(logits, 4, 4);
        QCOMPARE(lp.token, 4);
        QCOMPARE(lp.top.size(), size_t(4));
        const int32_t order[] = {1, 3, 2, 0};  // the tie 1 / 3 to the lower id
        for (size_t i = 0; i < 4; ++i) {
            QCOMPARE(lp.top[i].first, order[i]);
            QCOMPARE(lp.top[i].second, token_logprobs(logits, order[i], 0).logprob);
        }
        QVERIFY(lp.logprob < lp.top.back().second);                    // the sampled token need not be among them
        QCOMPARE(token_logprobs(logits, 0, 6).top.size(), size_t(6));  // the whole vocabulary
    }

    void maskedTokensHaveMinusInfinity() {
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<float> logits{0.0f, -inf, 0.0f};
        QCOMPARE(token_logprobs(logits, 1, 0).logprob, -inf);
        QVERIFY(std::abs(token_logprobs(logits, 0, 0).logprob - std::log(0.5f)) < 1e-6f);
        const TokenLogprobs lp = token_logprobs(logits, 0, 3);
        QCOMPARE(lp.top.back().first, 1);
        QCOMPARE(lp.top.back().second, -inf);
    }
};

QTEST_APPLESS_MAIN(TestLogprobs)
#include "test_logprobs.moc"
