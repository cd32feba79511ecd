#include "tier_bar.h"

#include <QPainter>
#include <QPainterPath>

#include "app/core/model_list_model.h"
#include "ui/theme.h"

namespace lr::ui {

TierBar::TierBar(const QString & name, QWidget * parent) : QWidget(parent), m_name(name) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setAccessibleName(name);
    setAbsent(QString());
}

void TierBar::setName(const QString & name) {
    m_name = name;
    setAccessibleName(name);
    update();
}

void TierBar::setUsage(quint64 usedBytes, quint64 capacityBytes, quint64 blocks) {
    m_present = true;
    m_used = usedBytes;
    m_capacity = capacityBytes;
    m_blocks = blocks;
    setToolTip(tr("%1: %2 used of %3, %4 blocks").arg(m_name, app::formatBytes(m_used), app::formatBytes(m_capacity)).arg(m_blocks));
    setAccessibleDescription(valueText());
    update();
}

void TierBar::setAbsent(const QString & why) {
    m_present = false;
    m_used = m_capacity = m_blocks = 0;
    setToolTip(why);
    setAccessibleDescription(tr("absent"));
    update();
}

double TierBar::fraction() const { return m_present && m_capacity > 0 ? std::min(1.0, double(m_used) / double(m_capacity)) : 0.0; }

QString TierBar::valueText() const {
    if (!m_present) return tr("absent");
    return tr("%1 / %2 \u00b7 %3 blocks").arg(app::formatBytes(m_used), app::formatBytes(m_capacity)).arg(m_blocks);
}

QSize TierBar::sizeHint() const { return {260, fontMetrics().height() * 2 + 10}; }
QSize TierBar::minimumSizeHint() const { return {140, fontMetrics().height() * 2 + 10}; }

void TierBar::paintEvent(QPaintEvent *) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette & pal = palette();
    const QFontMetrics fm = fontMetrics();
    // Line 1: the name and the value.
    p.setPen(pal.color(QPalette::WindowText));
    const QRect textRect(0, 0, width(), fm.height());
    p.drawText(textRect, Qt::AlignLeft | Qt::AlignVCenter, m_name);
    p.setPen(m_present ? theme::subtleText(pal) : theme::subtleText(pal));
    QFont caption = theme::captionFont(font());
    p.setFont(caption);
    p.drawText(textRect, Qt::AlignRight | Qt::AlignVCenter, valueText());
    // Line 2: the bar.
    const QRectF track(0.5, fm.height() + 4.5, width() - 1.0, 8.0);
    QPainterPath trackPath;
    trackPath.addRoundedRect(track, 4, 4);
    if (!m_present) {
        QPen dashed(theme::border(pal), 1, Qt::DashLine);
        p.setPen(dashed);
        p.setBrush(Qt::NoBrush);
        p.drawPath(trackPath);
        return;
    }
    p.setPen(Qt::NoPen);
    p.setBrush(theme::mix(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.1));
    p.drawPath(trackPath);
    const double f = fraction();
    if (f > 0) {
        QRectF fill = track;
        fill.setWidth(std::max(8.0, track.width() * f));
        QPainterPath fillPath;
        fillPath.addRoundedRect(fill, 4, 4);
        p.setBrush(theme::accent(pal));
        p.drawPath(fillPath);
    }
}

}  // namespace lr::ui
