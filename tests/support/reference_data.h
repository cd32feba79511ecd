#pragma once
// Readers for the llama.cpp reference outputs in ../shared/reference (JSON), shared by
// the model, runtime and CLI tests.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <vector>

namespace lr::test {

inline QString shared_path(const QString & relative) { return QStringLiteral(LONGREAD_SHARED_DIR) + "/" + relative; }

struct ReferenceStep {
    std::vector<float> logits;
    int32_t argmax = -1;
};

struct ReferenceRun {
    QString prompt;
    std::vector<int32_t> prompt_tokens;
    std::vector<std::vector<float>> prompt_position_logits;
    std::vector<ReferenceStep> steps;  // steps[0]: after the prompt; steps[i]: after generated[i-1]
    std::vector<int32_t> generated;
};

inline std::vector<float> to_floats(const QJsonArray & a) {
    std::vector<float> out;
    out.reserve(size_t(a.size()));
    for (const QJsonValue & v : a) out.push_back(float(v.toDouble()));
    return out;
}

inline std::vector<int32_t> to_ints(const QJsonArray & a) {
    std::vector<int32_t> out;
    out.reserve(size_t(a.size()));
    for (const QJsonValue & v : a) out.push_back(int32_t(v.toInt()));
    return out;
}

inline QJsonObject read_json(const QString & path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// Parses a logits file with the schema of stories260K_logits.json.
inline std::vector<ReferenceRun> read_reference_logits(const QString & path) {
    std::vector<ReferenceRun> runs;
    for (const QJsonValue & rv : read_json(path)["results"].toArray()) {
        const QJsonObject r = rv.toObject();
        ReferenceRun run;
        run.prompt = r["prompt"].toString();
        run.prompt_tokens = to_ints(r["prompt_tokens"].toArray());
        for (const QJsonValue & row : r["prompt_position_logits"].toArray()) run.prompt_position_logits.push_back(to_floats(row.toArray()));
        for (const QJsonValue & sv : r["steps"].toArray()) {
            const QJsonObject s = sv.toObject();
            run.steps.push_back({to_floats(s["logits"].toArray()), int32_t(s["argmax"].toInt())});
        }
        run.generated = to_ints(r["generated_tokens"].toArray());
        runs.push_back(std::move(run));
    }
    return runs;
}

inline float max_abs_diff(const float * a, const std::vector<float> & b) {
    float m = 0.0f;
    for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

template <class V>
inline int32_t argmax(const V & v, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
        if (v[i] > v[best]) best = i;
    }
    return int32_t(best);
}

// The gap between the largest and second largest logit.
inline float top2_gap(const std::vector<float> & v) {
    float a = -INFINITY, b = -INFINITY;
    for (float x : v) {
        if (x > a) {
            b = a;
            a = x;
        } else if (x > b) {
            b = x;
        }
    }
    return a - b;
}

}  // namespace lr::test
