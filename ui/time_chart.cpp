#include "time_chart.h"

#include <QEvent>
#include <QPainter>

#include <algorithm>

#include "ui/theme.h"

namespace lr::ui {
namespace {

constexpr int kXTicks = 4;  // -60 s, -40 s, -20 s, 0 s
constexpr int kYTicks = 3;  // 0, half the top, the top

}  // namespace

TimeChart::TimeChart(const QString & title, int historySeconds, QWidget * parent)
    : QWidget(parent), m_title(title), m_history(historySeconds) {
    setAccessibleName(title);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    // The frame fills the whole widget: what is behind it need not be painted first.
    setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimeChart::setPoints(QList<QPointF> points) {
    if (points.isEmpty() && m_points.isEmpty()) return;
    m_points = std::move(points);
    update(m_plot.toAlignedRect().adjusted(-2, -2, 2, 2));
}

void TimeChart::setTop(double top) {
    if (top == m_top) return;
    m_top = top;
    m_frame = QPixmap();
    update();
}

QSize TimeChart::sizeHint() const { return {260, 130}; }
QSize TimeChart::minimumSizeHint() const { return {140, 130}; }

void TimeChart::resizeEvent(QResizeEvent * event) {
    m_frame = QPixmap();
    QWidget::resizeEvent(event);
}

void TimeChart::changeEvent(QEvent * event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) m_frame = QPixmap();
    QWidget::changeEvent(event);
}

void TimeChart::paintFrame() {
    m_frame = QPixmap(size() * devicePixelRatioF());
    m_frame.setDevicePixelRatio(devicePixelRatioF());
    const QPalette & pal = palette();
    m_frame.fill(pal.color(QPalette::Window));
    QPainter p(&m_frame);
    p.setFont(theme::captionFont(font()));
    const QFontMetrics fm = p.fontMetrics();
    const int line = fm.height();
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(0, 0, width(), line), Qt::AlignCenter, m_title);

    QStringList yLabels;
    int yLabelWidth = 0;
    for (int i = 0; i < kYTicks; ++i) {
        yLabels << QString::number(m_top * i / (kYTicks - 1), 'g', 6);
        yLabelWidth = std::max(yLabelWidth, fm.horizontalAdvance(yLabels.back()));
    }
    // Below the title, right of the y labels, above the x labels, with room for half a
    // label beyond its corners.
    m_plot = QRectF(QPointF(yLabelWidth + 6.5, line * 2 + 0.5),
                    QPointF(width() - fm.horizontalAdvance(QStringLiteral("0 s")) / 2 - 2.5, height() - line - 4.5));
    for (int i = 0; i < kYTicks; ++i) {
        const double y = m_plot.bottom() - m_plot.height() * i / (kYTicks - 1);
        p.setPen(theme::border(pal));
        p.drawLine(QPointF(m_plot.left(), y), QPointF(m_plot.right(), y));
        p.setPen(theme::subtleText(pal));
        p.drawText(QRectF(0, y - line / 2.0, yLabelWidth + 2, line), Qt::AlignRight | Qt::AlignVCenter, yLabels[i]);
    }
    for (int i = 0; i < kXTicks; ++i) {
        const int secondsAgo = -m_history + m_history * i / (kXTicks - 1);
        const double x = m_plot.right() + m_plot.width() * secondsAgo / m_history;
        p.setPen(theme::border(pal));
        p.drawLine(QPointF(x, m_plot.top()), QPointF(x, m_plot.bottom()));
        p.setPen(theme::subtleText(pal));
        p.drawText(QRectF(x - 40, m_plot.bottom() + 2, 80, line), Qt::AlignHCenter | Qt::AlignTop, tr("%1 s").arg(secondsAgo));
    }
}

void TimeChart::paintEvent(QPaintEvent *) {
    if (m_frame.isNull()) paintFrame();
    QPainter p(this);
    p.drawPixmap(0, 0, m_frame);
    if (m_points.size() < 2 || m_plot.width() < 10 || m_plot.height() < 10) return;
    QPolygonF polyline;
    polyline.reserve(m_points.size());
    for (const QPointF & pt : m_points) {
        polyline << QPointF(m_plot.right() + m_plot.width() * pt.x() / m_history,
                            m_plot.bottom() - m_plot.height() * std::clamp(pt.y() / m_top, 0.0, 1.0));
    }
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(theme::accent(palette()), 2));
    p.drawPolyline(polyline);
}

}  // namespace lr::ui
