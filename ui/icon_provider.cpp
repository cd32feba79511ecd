#include "icon_provider.h"

#include <QFile>
#include <QIconEngine>
#include <QPainter>
#include <QSvgRenderer>

// resources/longread.qrc is compiled into this static library: its initializer must be
// called explicitly (outside any namespace), or the linker drops it.
static void initLongreadResources() { Q_INIT_RESOURCE(longread); }

namespace lr::ui {
namespace {

// Renders the SVG at whatever size and device pixel ratio the icon is asked for.
class SvgIconEngine final : public QIconEngine {
public:
    explicit SvgIconEngine(QByteArray svg) : m_svg(std::move(svg)) {}
    void paint(QPainter * painter, const QRect & rect, QIcon::Mode mode, QIcon::State) override {
        QSvgRenderer renderer(m_svg);
        if (mode == QIcon::Disabled) painter->setOpacity(0.35);
        renderer.render(painter, rect);
    }
    QPixmap pixmap(const QSize & size, QIcon::Mode mode, QIcon::State state) override {
        QPixmap pm(size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        paint(&p, QRect(QPoint(0, 0), size), mode, state);
        return pm;
    }
    QPixmap scaledPixmap(const QSize & size, QIcon::Mode mode, QIcon::State state, qreal scale) override {
        QPixmap pm = pixmap(size * scale, mode, state);
        pm.setDevicePixelRatio(scale);
        return pm;
    }
    QIconEngine * clone() const override { return new SvgIconEngine(m_svg); }

private:
    QByteArray m_svg;
};

}  // namespace

IconProvider::IconProvider(QColor color) : m_color(std::move(color)) { initLongreadResources(); }

void IconProvider::setColor(const QColor & color) {
    if (color == m_color) return;
    m_color = color;
    m_cache.clear();
}

QIcon IconProvider::icon(const QString & name) const { return icon(name, m_color); }

QIcon IconProvider::icon(const QString & name, const QColor & color) const {
    const QString key = name + QLatin1Char('|') + color.name(QColor::HexArgb);
    if (auto it = m_cache.constFind(key); it != m_cache.constEnd()) return *it;
    QFile file(QStringLiteral(":/icons/%1.svg").arg(name));
    if (!file.open(QIODevice::ReadOnly)) return {};
    QByteArray svg = file.readAll();
    svg.replace("currentColor", color.name(QColor::HexRgb).toLatin1());
    const QIcon icon(new SvgIconEngine(svg));
    m_cache.insert(key, icon);
    return icon;
}

}  // namespace lr::ui
