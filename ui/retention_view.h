#pragma once
// The document's text shaded by what the KV cache still holds of it: what the model still
// "remembers". Each token's span is tinted by the fraction of the layers' heads that keep
// it (kept: the accent tint; evicted: faded); the view names the kind of layers whose cache
// it shades ("full-attention layers"). While the policy keeps everything, the whole
// document is kept and the view says so; a document outside the context is all faded.

#include <QWidget>

#include <optional>

#include "app/core/retention_snapshot.h"

class QLabel;

namespace lr::ui {

class ShadedText;

class RetentionView : public QWidget {
    Q_OBJECT
public:
    explicit RetentionView(QWidget * parent = nullptr);

    void setRetention(const std::optional<app::RetentionSnapshot> & retention);
    void refreshStyle();

    // Shading levels (0: evicted ... kLevels - 1: kept), per run of characters.
    static constexpr int kLevels = 5;
    static int levelOf(float kept);
    // [begin, end) character runs of one level each, in order, from a snapshot.
    struct Run {
        int begin = 0;
        int end = 0;
        int level = 0;
    };
    static std::vector<Run> runs(const app::RetentionSnapshot & retention);

    QLabel * summaryLabel() const { return m_summary; }
    QLabel * layersLabel() const { return m_layers; }
    ShadedText * textView() const { return m_text; }
    const std::vector<Run> & shownRuns() const { return m_runs; }

private:
    void applyShading();

    std::optional<app::RetentionSnapshot> m_retention;
    std::vector<Run> m_runs;
    QLabel * m_summary;
    QLabel * m_layers;  // which layers' cache the shading shows
    QLabel * m_legend;
    ShadedText * m_text;
};

}  // namespace lr::ui
