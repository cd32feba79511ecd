#pragma once
// The app's icons: simple SVGs (resources/icons) drawn with "currentColor", tinted here with
// the palette's text colour so they suit light and dark themes, crisp at any DPI (QIcon
// renders the SVG per requested size). Owned by MainWindow and passed to the widgets.

#include <QColor>
#include <QHash>
#include <QIcon>
#include <QString>

namespace lr::ui {

class IconProvider {
public:
    explicit IconProvider(QColor color);

    // The icon named `name` (resources/icons/<name>.svg) in this provider's colour;
    // `color` overrides it (e.g. white on an accent button).
    QIcon icon(const QString & name) const;
    QIcon icon(const QString & name, const QColor & color) const;

    // After a palette change: the colour icons are drawn in from now on.
    void setColor(const QColor & color);
    QColor color() const { return m_color; }

private:
    QColor m_color;
    mutable QHash<QString, QIcon> m_cache;
};

}  // namespace lr::ui
