#pragma once
// A read-only text whose runs of characters carry formats (the retention and attention
// views shade the document this way). Only the runs on screen become extra selections,
// again as the text scrolls or resizes: QPlainTextEdit lays out every block an extra
// selection touches and measures its rectangle (a 16,384-token document's 3,057 runs took
// 60-170 ms of the GUI thread when shown or resized).

#include <QPlainTextEdit>
#include <QTextCharFormat>

#include <vector>

namespace lr::ui {

class ShadedText : public QPlainTextEdit {
    Q_OBJECT
public:
    struct Span {
        int begin = 0;  // [begin, end) in the text
        int end = 0;
        QTextCharFormat format;
    };

    explicit ShadedText(QWidget * parent = nullptr);

    // In order, not overlapping.
    void setShading(std::vector<Span> spans);

protected:
    void resizeEvent(QResizeEvent * event) override;
    void showEvent(QShowEvent * event) override;
    void scrollContentsBy(int dx, int dy) override;

private:
    void shadeVisible();

    std::vector<Span> m_spans;
};

}  // namespace lr::ui
