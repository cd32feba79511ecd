#pragma once
// Colours and sizes derived from the system palette, so the app follows light and dark
// themes (QApplication's palette changes when the system's does).

#include <QColor>
#include <QFont>
#include <QPalette>

namespace lr::ui {

namespace theme {

bool isDark(const QPalette & palette);
// A colour between a and b (t = 0: a, 1: b).
QColor mix(const QColor & a, const QColor & b, double t);

QColor userBubble(const QPalette & p);       // the user's messages
QColor assistantBubble(const QPalette & p);  // the model's messages
QColor subtleText(const QPalette & p);       // notes, captions
QColor border(const QPalette & p);
QColor good(const QPalette & p);     // fits, kept
QColor caution(const QPalette & p);  // needs the disk tier
QColor bad(const QPalette & p);      // won't fit, failed
QColor accent(const QPalette & p);

QFont captionFont(const QFont & base);  // ~85%
QFont titleFont(const QFont & base);    // bold, ~125%

// Spacing on a 4 px grid (scaled by Qt's high-DPI handling).
constexpr int kGap = 8;
constexpr int kPad = 12;
constexpr int kRadius = 10;

}  // namespace theme

}  // namespace lr::ui
