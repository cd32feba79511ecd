#pragma once
// A small line chart of a value over the last seconds (the cache panel's hit rate and bytes
// moved): a title, a y axis from 0 to a top, an x axis in seconds ago (0 at the right).
// Painted with QPainter, the frame (title, grid, labels) from a cached pixmap: new points
// cost one polyline (Qt Charts' graphics scene took a few ms of the GUI thread for them).

#include <QList>
#include <QPixmap>
#include <QPointF>
#include <QWidget>

namespace lr::ui {

class TimeChart : public QWidget {
    Q_OBJECT
public:
    TimeChart(const QString & title, int historySeconds, QWidget * parent = nullptr);

    // (seconds ago, from -historySeconds to 0; value), oldest first.
    void setPoints(QList<QPointF> points);
    // The y axis runs from 0 to `top`.
    void setTop(double top);

    double top() const { return m_top; }
    int pointCount() const { return int(m_points.size()); }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent * event) override;
    void resizeEvent(QResizeEvent * event) override;
    void changeEvent(QEvent * event) override;

private:
    void paintFrame();  // into m_frame; sets m_plot

    QString m_title;
    int m_history;
    double m_top = 1;
    QList<QPointF> m_points;
    QPixmap m_frame;  // null: to be painted again
    QRectF m_plot;    // where the line goes, in m_frame
};

}  // namespace lr::ui
