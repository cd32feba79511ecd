#include "attention_heat_map.h"

#include <QEvent>
#include <QPainter>

#include <cmath>

#include "ui/theme.h"

namespace lr::ui {
namespace {

constexpr int kMaxRowHeight = 14;
constexpr int kMinRowHeight = 3;

}  // namespace

AttentionHeatMap::AttentionHeatMap(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("Attention by layer and position"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void AttentionHeatMap::setAttention(std::shared_ptr<const AttentionMass> attention, float scale) {
    m_attention = std::move(attention);
    m_scale = scale > 0 ? scale : 1.0f;
    updateGeometry();
    rebuild();
}

void AttentionHeatMap::setHighlightedLayer(int layer) {
    if (layer == m_highlight) return;
    m_highlight = layer;
    rebuild();
}

float AttentionHeatMap::brightness(float mean, float scale) { return std::sqrt(std::clamp(mean / scale, 0.0f, 1.0f)); }

int AttentionHeatMap::rowHeight() const {
    const int layers = m_attention ? int(m_attention->layers.size()) : 0;
    return layers ? std::clamp(240 / layers, kMinRowHeight, kMaxRowHeight) : kMaxRowHeight;
}

QSize AttentionHeatMap::sizeHint() const {
    const int layers = m_attention ? int(m_attention->layers.size()) : 4;
    return {320, layers * rowHeight()};
}

QSize AttentionHeatMap::minimumSizeHint() const { return {120, sizeHint().height()}; }

void AttentionHeatMap::rebuild() {
    m_image = QImage();
    if (m_attention && !m_attention->empty() && width() > 0) {
        const QPalette & p = palette();
        const QColor base = p.color(QPalette::Base), hot = theme::accent(p), mark = theme::bad(p);
        const int layers = int(m_attention->layers.size()), bins = width(), row = rowHeight();
        m_image = QImage(bins, layers * row, QImage::Format_RGB32);
        const int band = bandHeight(row);
        for (int l = 0; l < layers; ++l) {
            const std::vector<AttentionBin> cells = attention_bins(*m_attention, size_t(l), uint32_t(bins));
            const bool dimmed = m_highlight >= 0 && m_highlight != l;
            for (int x = 0; x < bins; ++x) {
                QColor c = theme::mix(base, hot, brightness(cells[size_t(x)].mean, m_scale));
                if (dimmed) c = theme::mix(c, base, 0.6);
                const bool evicted = cells[size_t(x)].held < 0.5f;
                for (int y = 0; y < row; ++y) m_image.setPixel(x, l * row + y, (evicted && y >= row - band ? mark : c).rgb());
            }
        }
    }
    update();
}

void AttentionHeatMap::paintEvent(QPaintEvent *) {
    QPainter painter(this);
    if (m_image.isNull()) {
        painter.fillRect(rect(), theme::mix(palette().color(QPalette::Base), palette().color(QPalette::Window), 0.5));
        return;
    }
    painter.drawImage(QPoint(0, 0), m_image);
}

void AttentionHeatMap::resizeEvent(QResizeEvent *) {
    if (m_image.width() != width()) rebuild();
}

void AttentionHeatMap::changeEvent(QEvent * event) {
    if (event->type() == QEvent::PaletteChange) rebuild();
    QWidget::changeEvent(event);
}

}  // namespace lr::ui
