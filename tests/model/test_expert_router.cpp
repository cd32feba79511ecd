// The router of the mixture-of-experts layers (expert_router.h) against the choice and the
// weights written out in double: qwen3moe's softmax over every expert with renormalized
// weights, gpt-oss's softmax over the chosen logits, the order of the chosen experts
// (descending, ties to the lower index), the scale, and tokens routed independently.
#include <QtTest>

#include <cmath>
#include <vector>

#include "engine/model/expert_router.h"

using namespace lr;

namespace {

struct Routed {
    std::vector<int32_t> ids;
    std::vector<float> weights;
};

Routed route(const RouterParams & p, const std::vector<float> & logits) {
    const int64_t n_tokens = int64_t(logits.size() / p.n_expert);
    Routed r{std::vector<int32_t>(size_t(n_tokens) * p.n_used), std::vector<float>(size_t(n_tokens) * p.n_used)};
    route_experts(p, logits.data(), n_tokens, r.ids.data(), r.weights.data());
    return r;
}

void verify_weights(const std::vector<float> & got, const std::vector<double> & want) {
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        QVERIFY2(std::fabs(double(got[i]) - want[i]) <= 1e-6 * std::fabs(want[i]) + 1e-9,
                 qPrintable(QString("weight %1: %2 vs %3").arg(i).arg(double(got[i]), 0, 'g', 9).arg(want[i], 0, 'g', 9)));
    }
}

}  // namespace

class TestExpertRouter : public QObject {
    Q_OBJECT
private slots:
    // qwen3moe: p = softmax(all logits); the two most probable, weights p / (p1 + p2).
    void softmaxRenormalized() {
        const RouterParams p{.n_expert = 5, .n_used = 2, .gating = ExpertGating::softmax, .norm_weights = true};
        const Routed r = route(p, {0.5f, 2.0f, -1.0f, 1.5f, 0.0f});
        QCOMPARE(r.ids, (std::vector<int32_t>{1, 3}));
        const double a = std::exp(2.0), b = std::exp(1.5);
        verify_weights(r.weights, {a / (a + b), b / (a + b)});
    }

    // Without renormalization the chosen probabilities are kept as they are.
    void softmaxProbabilities() {
        const std::vector<float> logits{0.5f, 2.0f, -1.0f, 1.5f, 0.0f};
        const RouterParams p{.n_expert = 5, .n_used = 3, .gating = ExpertGating::softmax};
        const Routed r = route(p, logits);
        QCOMPARE(r.ids, (std::vector<int32_t>{1, 3, 0}));
        double sum = 0;
        for (float l : logits) sum += std::exp(double(l));
        verify_weights(r.weights, {std::exp(2.0) / sum, std::exp(1.5) / sum, std::exp(0.5) / sum});
    }

    // gpt-oss: the largest logits (bias included by the caller), weights = softmax of those.
    void softmaxOverChosen() {
        const RouterParams p{.n_expert = 6, .n_used = 3, .gating = ExpertGating::softmax_weight};
        const Routed r = route(p, {-3.0f, 4.0f, 1.0f, 7.0f, 2.0f, -0.5f});
        QCOMPARE(r.ids, (std::vector<int32_t>{3, 1, 4}));
        const double s = std::exp(7.0) + std::exp(4.0) + std::exp(2.0);
        verify_weights(r.weights, {std::exp(7.0) / s, std::exp(4.0) / s, std::exp(2.0) / s});
    }

    // Equal scores: the lower expert first (llama.cpp leaves their order unspecified).
    void tiesGoToTheLowerIndex() {
        const RouterParams p{.n_expert = 6, .n_used = 4, .gating = ExpertGating::softmax_weight};
        const Routed r = route(p, {1.0f, 3.0f, 1.0f, 3.0f, 0.0f, 1.0f});
        QCOMPARE(r.ids, (std::vector<int32_t>{1, 3, 0, 2}));
    }

    // expert_weights_scale multiplies after the normalization; 0 and 1 leave the weights.
    void scale() {
        const std::vector<float> logits{0.1f, 0.9f, 0.4f, 0.3f};
        RouterParams p{.n_expert = 4, .n_used = 2, .gating = ExpertGating::softmax, .norm_weights = true};
        const Routed plain = route(p, logits);
        p.weights_scale = 1.0f;
        QCOMPARE(route(p, logits).weights, plain.weights);
        p.weights_scale = 2.5f;
        const Routed scaled = route(p, logits);
        QCOMPARE(scaled.ids, plain.ids);
        for (size_t j = 0; j < 2; ++j) QCOMPARE(scaled.weights[j], plain.weights[j] * 2.5f);
    }

    // Every expert chosen (n_used = n_expert) with renormalization: weights sum to 1.
    void allExperts() {
        const RouterParams p{.n_expert = 4, .n_used = 4, .gating = ExpertGating::softmax, .norm_weights = true};
        const Routed r = route(p, {-20.0f, 30.0f, 0.0f, 29.0f});
        QCOMPARE(r.ids, (std::vector<int32_t>{1, 3, 2, 0}));
        double sum = 0;
        for (float w : r.weights) sum += w;
        QVERIFY(std::fabs(sum - 1.0) < 1e-6);
    }

    // Each token of a ubatch is routed by its own row.
    void tokensAreIndependent() {
        const RouterParams p{.n_expert = 3, .n_used = 1, .gating = ExpertGating::softmax_weight};
        const Routed r = route(p, {0.0f, 1.0f, 2.0f, 5.0f, 1.0f, 2.0f, 0.0f, 9.0f, -1.0f});
        QCOMPARE(r.ids, (std::vector<int32_t>{2, 0, 1}));
        QCOMPARE(r.weights, (std::vector<float>{1.0f, 1.0f, 1.0f}));
    }
};

QTEST_GUILESS_MAIN(TestExpertRouter)
#include "test_expert_router.moc"
