#pragma once
// A heat map of where the model looks: a row per full-attention layer (the first at the
// top), a column per bin of the document's tokens (the widget's width in bins, start at the
// left), brighter where a query head gave the bin more attention on average. Bins a layer
// evicted (held by fewer than half its KV heads) carry a band in the "bad" colour along
// the bottom of their row. One layer may be highlighted (the others dimmed).
//
// The bins are computed when the data, the highlighted layer or the width change (a pass
// over layers x tokens), then painted from a cached image: repaints are cheap.

#include <QImage>
#include <QWidget>

#include <algorithm>
#include <memory>

#include "engine/api/attention_mass.h"

namespace lr::ui {

class AttentionHeatMap : public QWidget {
    Q_OBJECT
public:
    explicit AttentionHeatMap(QWidget * parent = nullptr);

    // `scale`: the mean weight shown brightest (brighter values are clipped).
    void setAttention(std::shared_ptr<const AttentionMass> attention, float scale);
    void setHighlightedLayer(int layer);  // an index into layers; -1: none
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    // Brightness of a mean weight against the scale, in [0, 1] (square root: attention is
    // heavy-tailed, a few tokens take most of it).
    static float brightness(float mean, float scale);
    // The evicted band's height in a row of `rowHeight` pixels.
    static int bandHeight(int rowHeight) { return std::max(2, rowHeight / 4); }
    int rowHeight() const;

protected:
    void paintEvent(QPaintEvent * event) override;
    void resizeEvent(QResizeEvent * event) override;
    void changeEvent(QEvent * event) override;

private:
    void rebuild();

    std::shared_ptr<const AttentionMass> m_attention;
    float m_scale = 1.0f;
    int m_highlight = -1;
    QImage m_image;  // [layers][bins], one pixel per cell, marks included
};

}  // namespace lr::ui
