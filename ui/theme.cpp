#include "theme.h"

namespace lr::ui::theme {

bool isDark(const QPalette & p) { return p.color(QPalette::Window).lightnessF() < 0.5; }

QColor mix(const QColor & a, const QColor & b, double t) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

QColor accent(const QPalette & p) { return p.color(QPalette::Highlight); }
QColor userBubble(const QPalette & p) { return mix(p.color(QPalette::Base), accent(p), isDark(p) ? 0.28 : 0.12); }
QColor assistantBubble(const QPalette & p) { return mix(p.color(QPalette::Base), p.color(QPalette::Text), isDark(p) ? 0.07 : 0.035); }
QColor subtleText(const QPalette & p) { return mix(p.color(QPalette::Text), p.color(QPalette::Base), 0.45); }
QColor border(const QPalette & p) { return mix(p.color(QPalette::Window), p.color(QPalette::Text), 0.15); }
QColor good(const QPalette & p) { return isDark(p) ? QColor(0x4c, 0xc3, 0x8a) : QColor(0x1a, 0x8a, 0x55); }
QColor caution(const QPalette & p) { return isDark(p) ? QColor(0xe8, 0xb3, 0x4a) : QColor(0xa8, 0x6b, 0x00); }
QColor bad(const QPalette & p) { return isDark(p) ? QColor(0xf0, 0x6a, 0x6a) : QColor(0xc0, 0x2b, 0x2b); }

QFont captionFont(const QFont & base) {
    QFont f = base;
    if (f.pointSizeF() > 0) f.setPointSizeF(f.pointSizeF() * 0.88);
    return f;
}

QFont titleFont(const QFont & base) {
    QFont f = base;
    if (f.pointSizeF() > 0) f.setPointSizeF(f.pointSizeF() * 1.25);
    f.setWeight(QFont::DemiBold);
    return f;
}

}  // namespace lr::ui::theme
