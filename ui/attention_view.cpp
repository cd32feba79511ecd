#include "attention_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "ui/attention_heat_map.h"
#include "ui/shaded_text.h"
#include "ui/theme.h"

namespace lr::ui {

std::vector<AttentionView::TokenLook> AttentionView::looks(const AttentionMass & a, int layer) {
    std::vector<TokenLook> out(a.n_positions);
    const size_t layers = a.layers.size();
    if (layers == 0) return out;
    for (uint32_t p = 0; p < a.n_positions; ++p) {
        if (layer >= 0) {
            out[p] = {a.mean_at(size_t(layer), p), a.held_at(size_t(layer), p) < 0.5f};
            continue;
        }
        double mean = 0, held = 0;
        for (size_t l = 0; l < layers; ++l) {
            mean += a.mean_at(l, p);
            held += a.held_at(l, p);
        }
        out[p] = {float(mean / double(layers)), held / double(layers) < 0.5};
    }
    return out;
}

float AttentionView::scaleOf(const std::vector<TokenLook> & looks) {
    if (looks.empty()) return 1.0f;
    std::vector<float> means(looks.size());
    for (size_t i = 0; i < looks.size(); ++i) means[i] = looks[i].mean;
    // Between the two order statistics around it, so that a short document has one too.
    const double rank = double(means.size() - 1) * 0.99;
    const auto at = means.begin() + std::ptrdiff_t(rank);
    std::nth_element(means.begin(), at, means.end());
    const float below = *at;
    const float above = at + 1 < means.end() ? *std::min_element(at + 1, means.end()) : below;
    return std::max(below + float(rank - std::floor(rank)) * (above - below), 1e-9f);
}

std::vector<AttentionView::Run> AttentionView::runs(const app::RetentionSnapshot & r, const std::vector<TokenLook> & looks, float scale) {
    std::vector<Run> out;
    const int length = int(r.documentText.size());
    if (length == 0 || r.tokenSpans.empty() || r.tokenSpans.size() != looks.size()) return out;
    int at = 0;
    for (size_t i = 0; i < looks.size(); ++i) {
        const int level = std::clamp(int(AttentionHeatMap::brightness(looks[i].mean, scale) * (kLevels - 1) + 0.5f), 0, kLevels - 1);
        // A token's span runs to the next token's start, so whitespace between is covered.
        const int end = i + 1 < looks.size() ? std::clamp(r.tokenSpans[i + 1].first, at, length) : length;
        if (end <= at) continue;
        if (!out.empty() && out.back().level == level && out.back().evicted == looks[i].evicted && out.back().end == at) {
            out.back().end = end;
        } else {
            out.push_back({at, end, level, looks[i].evicted});
        }
        at = end;
    }
    return out;
}

AttentionView::AttentionView(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("Where the model looks in the document"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad, theme::kPad, theme::kPad, theme::kPad);
    layout->setSpacing(theme::kGap);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setAccessibleName(tr("Attention summary"));
    layout->addWidget(m_summary);
    auto * row = new QHBoxLayout;
    auto * layerLabel = new QLabel(tr("&Shade by"), this);
    m_layer = new QComboBox(this);
    m_layer->setAccessibleName(tr("Layer shown"));
    layerLabel->setBuddy(m_layer);
    row->addWidget(layerLabel);
    row->addWidget(m_layer, 1);
    layout->addLayout(row);
    m_map = new AttentionHeatMap(this);
    layout->addWidget(m_map);
    m_mapCaption = new QLabel(tr("Rows: the model's layers, first at the top. Columns: the document, start to end."), this);
    m_mapCaption->setWordWrap(true);
    m_mapCaption->setFont(theme::captionFont(font()));
    layout->addWidget(m_mapCaption);
    m_legend = new QLabel(this);
    m_legend->setWordWrap(true);
    m_legend->setFont(theme::captionFont(font()));
    layout->addWidget(m_legend);
    m_text = new ShadedText(this);
    m_text->setAccessibleName(tr("Document text, shaded by the attention it received"));
    layout->addWidget(m_text, 1);
    connect(m_layer, &QComboBox::currentIndexChanged, this, [this] { showLayer(); });
    setRetention(std::nullopt);
    refreshStyle();
}

void AttentionView::setRetention(const std::optional<app::RetentionSnapshot> & retention) {
    const bool sameText = retention && m_retention && retention->documentText == m_retention->documentText;
    m_retention = retention;
    const std::shared_ptr<const AttentionMass> a = retention ? retention->attention : nullptr;
    {
        const QSignalBlocker block(m_layer);
        const int before = m_layer->currentIndex();
        m_layer->clear();
        if (a) {
            m_layer->addItem(tr("All layers (mean)"));
            for (uint32_t il : a->layers) m_layer->addItem(tr("Layer %1").arg(il));
            m_layer->setCurrentIndex(before > 0 && before < m_layer->count() ? before : 0);
        }
        m_layer->setEnabled(a != nullptr);
    }
    if (!retention || retention->documentText.isEmpty()) {
        m_summary->setText(tr("No document in this conversation. Open one to see where the model looks in it."));
        m_text->clear();
    } else if (!a) {
        m_summary->setText(
            retention->inContext
                ? tr("<b>Nothing recorded.</b> Where the model looks is recorded while it reads; this document "
                     "came from the prefix cache or was read before recording began. Read it again (a new chat) to see it.")
                : tr("<b>Not in the chat's context.</b> The model does not see this document now, so it looks nowhere in it."));
        if (!sameText) m_text->setPlainText(retention->documentText);
    } else {
        const QLocale locale;
        const bool evicting = retention->perPosition && retention->keptFraction() < 1.0;
        QString text = tr("<b>Where the model looks.</b> Brighter text got more of the model's attention, over the %1 tokens it "
                          "has read or written since the document came in.")
                           .arg(locale.toString(qulonglong(a->n_queries)));
        if (evicting) {
            text += QLatin1Char(' ') + tr("The policy (%1) evicted the text struck through in red: the model can no longer look there.")
                                           .arg(retention->policy.toHtmlEscaped());
        }
        m_summary->setText(text);
        if (!sameText) m_text->setPlainText(retention->documentText);
    }
    showLayer();
}

void AttentionView::showLayer() {
    const std::shared_ptr<const AttentionMass> a = m_retention ? m_retention->attention : nullptr;
    if (!a) {
        m_runs.clear();
        m_map->setAttention(nullptr, 1.0f);
        applyShading();
        return;
    }
    const int layer = m_layer->currentIndex() - 1;  // 0: all layers
    // One scale for the map (every layer) and the text (the layer shown, or the mean).
    const std::vector<TokenLook> shown = looks(*a, layer);
    const float scale = scaleOf(shown);
    m_map->setAttention(a, layer < 0 ? scaleOf(looks(*a, -1)) : scale);
    m_map->setHighlightedLayer(layer);
    m_runs = runs(*m_retention, shown, scale);
    applyShading();
}

void AttentionView::applyShading() {
    const QPalette & p = palette();
    const QColor base = p.color(QPalette::Base), hot = theme::mix(base, theme::accent(p), theme::isDark(p) ? 0.75 : 0.55);
    const QColor mark = theme::bad(p);
    QTextCharFormat formats[2][kLevels];  // [evicted][level]
    for (int level = 0; level < kLevels; ++level) {
        formats[0][level].setBackground(theme::mix(base, hot, double(level) / (kLevels - 1)));
        formats[1][level] = formats[0][level];
        formats[1][level].setForeground(mark);
        formats[1][level].setFontStrikeOut(true);
    }
    std::vector<ShadedText::Span> spans;
    spans.reserve(m_runs.size());
    for (const Run & run : m_runs) spans.push_back({run.begin, run.end, formats[run.evicted][run.level]});
    m_text->setShading(std::move(spans));
    m_legend->setText(tr("<span style='background:%1'>&nbsp;much attention&nbsp;</span>&nbsp;&nbsp;"
                         "<span style='background:%2'>&nbsp;little&nbsp;</span>&nbsp;&nbsp;"
                         "<span style='color:%3'><s>evicted from the cache</s></span> (a red band in the map). "
                         "The brightest 1% are shown alike (often the first token, which many heads rest on).")
                          .arg(hot.name(), base.name(), mark.name()));
}

void AttentionView::refreshStyle() { showLayer(); }

}  // namespace lr::ui
