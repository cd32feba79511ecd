#pragma once
// One KV cache tier as a bar: used of capacity, or "absent" when the tier does not exist
// (never a made-up number).

#include <QWidget>

namespace lr::ui {

class TierBar : public QWidget {
    Q_OBJECT
public:
    explicit TierBar(const QString & name, QWidget * parent = nullptr);

    void setName(const QString & name);
    // A present tier's use; blocks are shown next to the bytes.
    void setUsage(quint64 usedBytes, quint64 capacityBytes, quint64 blocks);
    // The tier does not exist; `why` becomes the tooltip.
    void setAbsent(const QString & why);

    bool isPresent() const { return m_present; }
    QString valueText() const;
    double fraction() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent * event) override;

private:
    QString m_name;
    bool m_present = false;
    quint64 m_used = 0;
    quint64 m_capacity = 0;
    quint64 m_blocks = 0;
};

}  // namespace lr::ui
