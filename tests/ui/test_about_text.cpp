// The About box names Longread's version and licence, the Qt it runs on, and every
// component of resources/notices.h with its licence.
#include <QApplication>
#include <QtTest>

#include "resources/notices.h"
#include "ui/about_text.h"

using namespace lr;

class TestAboutText : public QObject {
    Q_OBJECT

private slots:
    void namesVersionQtAndEveryLicence() {
        QApplication::setApplicationVersion(QStringLiteral("9.8.7"));
        const QString text = ui::aboutText();
        QVERIFY(text.contains(QStringLiteral("Longread 9.8.7")));
        QVERIFY(text.contains(QStringLiteral("MIT licence")));
        QVERIFY(text.contains(QString::fromLatin1(qVersion())));
        QVERIFY(third_party_notices().size() >= 5);
        for (const Notice & n : third_party_notices()) {
            const QString component = QString::fromUtf8(n.component.data(), qsizetype(n.component.size())).toHtmlEscaped();
            const QString licence = QString::fromUtf8(n.licence.data(), qsizetype(n.licence.size())).toHtmlEscaped();
            QVERIFY2(text.contains(component), qPrintable(component));
            QVERIFY2(text.contains(licence), qPrintable(licence));
        }
        QVERIFY(text.contains(QStringLiteral("stories260K")));
    }
};

QTEST_MAIN(TestAboutText)
#include "test_about_text.moc"
