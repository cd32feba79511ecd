#pragma once
// Where the model looks in the document: the text shaded by the attention each part of it
// received (summed over the full-attention layers, or one layer chosen), and a heat map of
// layers x positions; with an evicting policy, what the cache dropped is marked on both
// (struck through in red in the text, a red band in the map), so a person can see whether
// the cache kept what the model reads. The data come with the retention snapshot (the
// cache records attention while the app runs).
//
// Shading: a token's brightness is the mean share of attention one query head gave it
// over the queries that could see it, against the document's 99th percentile (the few
// tokens above it, often the first, an "attention sink", are clipped), square-rooted.

#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

#include "app/core/retention_snapshot.h"

class QComboBox;
class QLabel;

namespace lr::ui {

class AttentionHeatMap;
class ShadedText;

class AttentionView : public QWidget {
    Q_OBJECT
public:
    explicit AttentionView(QWidget * parent = nullptr);

    void setRetention(const std::optional<app::RetentionSnapshot> & retention);
    void refreshStyle();

    static constexpr int kLevels = 5;  // shading levels, 0: least attention
    // [begin, end) character runs of one level and eviction state each, in order.
    struct Run {
        int begin = 0;
        int end = 0;
        int level = 0;
        bool evicted = false;
    };
    // Per document token of `a`: its mean weight (one layer, or -1: the mean over layers)
    // and whether that layer (or most layers) dropped it.
    struct TokenLook {
        float mean = 0;
        bool evicted = false;
    };
    static std::vector<TokenLook> looks(const AttentionMass & a, int layer);
    // The shading scale of `looks`: their 99th percentile, interpolated (not below a tiny
    // positive value).
    static float scaleOf(const std::vector<TokenLook> & looks);
    static std::vector<Run> runs(const app::RetentionSnapshot & retention, const std::vector<TokenLook> & looks, float scale);

    QLabel * summaryLabel() const { return m_summary; }
    QComboBox * layerChoice() const { return m_layer; }
    AttentionHeatMap * heatMap() const { return m_map; }
    ShadedText * textView() const { return m_text; }
    const std::vector<Run> & shownRuns() const { return m_runs; }

private:
    void showLayer();
    void applyShading();

    std::optional<app::RetentionSnapshot> m_retention;
    std::vector<Run> m_runs;
    QLabel * m_summary;
    QComboBox * m_layer;
    AttentionHeatMap * m_map;
    QLabel * m_mapCaption;
    QLabel * m_legend;
    ShadedText * m_text;
};

}  // namespace lr::ui
