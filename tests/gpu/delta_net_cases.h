#pragma once
// The Gated DeltaNet ops' cases and inputs, shared by the host emulation's test and the
// device's: random inputs as the model feeds them (q, k l2-normalized per head, g < 0,
// beta in (0, 1)), several shapes, ubatches of one and more tokens, chunk boundaries hit
// exactly, crossed and not reached, and one state carried from each call to the next.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "random_rows.h"

namespace lr::test {

struct DeltaRuleCase {
    DeltaRuleParams shape;                              // chunk_tokens: see ubatches
    std::vector<std::pair<int64_t, int32_t>> ubatches;  // (n_tokens, chunk_tokens) in turn, on one state
};

// One ubatch's inputs.
struct DeltaRuleInputs {
    std::vector<float> q, k;  // [n_tokens][n_k_heads][head_k_dim], each head's row of norm 1
    std::vector<float> v;     // [n_tokens][n_v_heads][head_v_dim]
    std::vector<float> g;     // [n_tokens][n_v_heads] in (-3, 0): log decays
    std::vector<float> beta;  // [n_tokens][n_v_heads] in (0, 1)
};

inline std::vector<float> unit_rows(Rng & rng, int64_t n_rows, int64_t n_cols) {
    std::vector<float> x = rng.activations(size_t(n_rows * n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        double sum = 0.0;
        for (int64_t c = 0; c < n_cols; ++c) sum += double(x[size_t(r * n_cols + c)]) * x[size_t(r * n_cols + c)];
        const float inv = sum > 0.0 ? float(1.0 / std::sqrt(sum)) : 0.0f;
        for (int64_t c = 0; c < n_cols; ++c) x[size_t(r * n_cols + c)] *= inv;
    }
    return x;
}

inline DeltaRuleInputs delta_rule_inputs(Rng & rng, const DeltaRuleParams & p, int64_t n_tokens) {
    DeltaRuleInputs in;
    in.q = unit_rows(rng, n_tokens * p.n_k_heads, p.head_k_dim);
    in.k = unit_rows(rng, n_tokens * p.n_k_heads, p.head_k_dim);
    in.v = rng.activations(size_t(n_tokens * p.n_v_heads * p.head_v_dim));
    for (int64_t i = 0; i < n_tokens * p.n_v_heads; ++i) {
        in.g.push_back(float(-3.0 * rng.uniform()));
        in.beta.push_back(float(rng.uniform()));
    }
    return in;
}

// A state the earlier tokens might have left.                [n_v_heads][head_v_dim][head_k_dim]
inline std::vector<float> delta_rule_state(Rng & rng, const DeltaRuleParams & p) {
    return rng.activations(size_t(p.n_v_heads) * size_t(p.head_v_dim) * size_t(p.head_k_dim), 0.3f);
}

inline int64_t total_tokens(const DeltaRuleCase & c) {
    int64_t n = 0;
    for (const auto & [n_tokens, chunk] : c.ubatches) n += n_tokens;
    return n;
}

// max |a[i] - b[i]| (infinity when the sizes differ).
inline double largest_difference(const std::vector<float> & a, const std::vector<float> & b) {
    if (a.size() != b.size()) return INFINITY;
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
}

// The rows of a data-driven test (column "c").
inline void add_delta_rule_rows() {
    QTest::addColumn<DeltaRuleCase>("c");
    const auto shape = [](int32_t n_k, int32_t n_v, int32_t dk, int32_t dv) {
        return DeltaRuleParams{.n_k_heads = n_k, .n_v_heads = n_v, .head_k_dim = dk, .head_v_dim = dv};
    };
    QTest::newRow("decode") << DeltaRuleCase{shape(2, 4, 16, 16), {{1, 0}, {1, 0}, {1, 0}}};
    QTest::newRow("recurrent-ubatches") << DeltaRuleCase{shape(1, 2, 32, 24), {{5, 0}, {3, 0}}};
    QTest::newRow("chunks-exact-partial") << DeltaRuleCase{shape(2, 4, 16, 16), {{16, 8}, {8, 8}, {5, 8}}};
    QTest::newRow("chunk-64-crossed") << DeltaRuleCase{shape(2, 2, 32, 32), {{70, 64}, {64, 64}}};
    QTest::newRow("chunked-one-token") << DeltaRuleCase{shape(1, 1, 16, 16), {{1, 64}, {2, 64}}};
    QTest::newRow("prefill-then-decode") << DeltaRuleCase{shape(2, 6, 32, 16), {{37, 16}, {1, 0}, {1, 0}, {20, 64}}};
    QTest::newRow("qwen35-heads") << DeltaRuleCase{shape(2, 4, 128, 128), {{70, 64}, {1, 0}, {2, 0}}};
}

struct ConvCase {
    int64_t n_channels, width;
    std::vector<int64_t> ubatches;  // token counts in turn, on one state
};

// Channels in whole vectors of 16 and not (ggml_expf vs expf in SiLU), kernel widths 2-4.
inline void add_conv_rows() {
    QTest::addColumn<ConvCase>("c");
    QTest::newRow("qwen35-width") << ConvCase{96, 4, {1, 3, 70, 1}};
    QTest::newRow("tail-columns") << ConvCase{40, 4, {5, 1, 2}};
    QTest::newRow("width-2") << ConvCase{33, 2, {1, 4}};
    QTest::newRow("width-3-long") << ConvCase{200, 3, {130}};
}

}  // namespace lr::test

Q_DECLARE_METATYPE(lr::test::DeltaRuleCase)
Q_DECLARE_METATYPE(lr::test::ConvCase)
