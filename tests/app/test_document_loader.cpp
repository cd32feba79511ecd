// Documents from real files made here: .txt, .md, .html, a PDF written with QPdfWriter, and
// every way a file can fail to give text: empty, huge, binary renamed .txt, a PDF with no
// text layer, a damaged PDF, a folder, a missing file. Each failure has a clear message.
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QTemporaryDir>
#include <QtTest>

#include "app/core/document_loader.h"

using namespace lr::app;

class TestDocumentLoader : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString write(const QString & name, const QByteArray & bytes) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
        f.write(bytes);
        return path;
    }

    QString writePdf(const QString & name, const QStringList & pages, bool textLayer) {
        const QString path = m_dir.filePath(name);
        QPdfWriter pdf(path);
        pdf.setPageSize(QPageSize(QPageSize::A5));
        pdf.setResolution(150);
        QPainter painter(&pdf);
        for (int i = 0; i < pages.size(); ++i) {
            if (i > 0) pdf.newPage();
            if (textLayer) {
                painter.setFont(QFont(QStringLiteral("DejaVu Sans"), 12));
                painter.drawText(QRect(50, 50, 700, 800), Qt::TextWordWrap, pages[i]);
            } else {
                // A "scan": the words as pixels only.
                QImage image(600, 200, QImage::Format_RGB32);
                image.fill(Qt::white);
                QPainter ip(&image);
                ip.fillRect(40, 80, 500, 30, Qt::black);
                painter.drawImage(QPoint(50, 50), image);
            }
        }
        painter.end();
        return path;
    }

    QString make(const QString & kind) {
        if (kind == "txt") return write("notes.txt", "Caf\xC3\xA9 opening hours.\n\nMonday to Friday, 9 to 5.\n");
        if (kind == "md") return write("readme.md", "# Title\n\nSome *markdown* with a [link](http://x).\n");
        if (kind == "html") {
            return write(
                "page.html",
                "<html><head><meta charset=\"utf-8\"><title>T</title><style>p{color:red}</style></head>"
                "<body><h1>Quarterly report</h1><p>Sales rose &amp; costs fell.</p><p>Na\xC3\xAFve caf\xC3\xA9.</p></body></html>");
        }
        if (kind == "pdf")
            return writePdf("report.pdf", {"The first page talks about apples.", "The second page talks about pears."}, true);
        if (kind == "utf16")
            return write("wide.txt", QByteArray("\xFF\xFE", 2) + QByteArray(reinterpret_cast<const char *>(u"Hello UTF-16"), 24));
        if (kind == "latin1") return write("old.txt", "na\xEFve caf\xE9\n");
        if (kind == "csv") return write("table.csv", "a,b\n1,2\n");
        if (kind == "empty") return write("empty.txt", "");
        if (kind == "blank") return write("blank.md", "   \n\n\t\n");
        if (kind == "huge") {
            const QString path = m_dir.filePath("huge.txt");
            QFile f(path);
            f.open(QIODevice::WriteOnly);
            f.resize(qint64(65) << 20);  // sparse: 65 MB of nothing, over the 64 MB limit
            return path;
        }
        if (kind == "binary") {
            QByteArray bytes;
            for (int i = 0; i < 4096; ++i) bytes.append(char((i * 7919) & 0xFF));
            return write("photo.txt", bytes);
        }
        if (kind == "binaryUnknown") return write("data.bin", QByteArray("\x00\x01\x02\x03", 4).repeated(100));
        if (kind == "scan") return writePdf("scan.pdf", {"", ""}, false);
        if (kind == "damagedPdf") return write("broken.pdf", "%PDF-1.4\nthis is not really a pdf\n");
        if (kind == "folder") return m_dir.path();
        if (kind == "missing") return m_dir.filePath("nowhere.txt");
        if (kind == "htmlEmpty") return write("empty.html", "<html><body><script>var x = 1;</script></body></html>");
        return {};
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void loads_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("expected");  // in the text, or in the error
        QTest::newRow("txt") << "txt" << true << "txt" << QString::fromUtf8("Caf\xC3\xA9 opening hours.");
        QTest::newRow("md") << "md" << true << "md"
                            << "Some *markdown*";
        QTest::newRow("html") << "html" << true << "html" << QString::fromUtf8("Sales rose & costs fell.");
        QTest::newRow("pdf") << "pdf" << true << "pdf"
                             << "second page talks about pears";
        QTest::newRow("utf-16") << "utf16" << true << "txt"
                                << "Hello UTF-16";
        QTest::newRow("latin-1") << "latin1" << true << "txt" << QString::fromUtf8("na\xC3\xAFve caf\xC3\xA9");
        QTest::newRow("unknown suffix, text") << "csv" << true << "txt"
                                              << "1,2";
        QTest::newRow("empty") << "empty" << false << ""
                               << "is empty";
        QTest::newRow("only blanks") << "blank" << false << ""
                                     << "has no text";
        QTest::newRow("huge") << "huge" << false << ""
                              << "is 65.0 MB; Longread opens documents up to 64.0 MB";
        QTest::newRow("binary renamed .txt") << "binary" << false << ""
                                             << "is not text: it contains binary data";
        QTest::newRow("unknown suffix, binary") << "binaryUnknown" << false << ""
                                                << "not a format Longread reads";
        QTest::newRow("PDF without text layer") << "scan" << false << ""
                                                << "has no text layer";
        QTest::newRow("damaged PDF") << "damagedPdf" << false << ""
                                     << "cannot be opened as a PDF";
        QTest::newRow("folder") << "folder" << false << ""
                                << "is a folder";
        QTest::newRow("missing") << "missing" << false << ""
                                 << "does not exist";
        QTest::newRow("HTML with no text") << "htmlEmpty" << false << ""
                                           << "has no text";
    }
    void loads() {
        QFETCH(QString, kind);
        QFETCH(bool, ok);
        QFETCH(QString, format);
        QFETCH(QString, expected);
        const QString path = make(kind);
        const DocumentLoadResult r = loadDocument(path);
        QCOMPARE(r.ok(), ok);
        if (ok) {
            QVERIFY(r.error.isEmpty());
            QCOMPARE(r.document->format, format);
            QVERIFY2(r.document->text.contains(expected), qPrintable(r.document->text));
            QCOMPARE(r.document->sha256.size(), 64);
            QCOMPARE(r.document->fileBytes, QFileInfo(path).size());
            QCOMPARE(r.document->title, QFileInfo(path).fileName());
            if (kind == "latin1") QVERIFY(r.document->note.contains(QStringLiteral("Latin-1")));
            if (kind == "pdf") {
                QCOMPARE(r.document->pages, 2);
                QVERIFY(r.document->text.indexOf(QStringLiteral("apples")) < r.document->text.indexOf(QStringLiteral("pears")));
            }
            if (kind == "html") QVERIFY(!r.document->text.contains(QStringLiteral("color:red")));
        } else {
            QVERIFY2(r.error.contains(expected), qPrintable(r.error));
            // Every message names the file.
            QVERIFY2(r.error.contains(QFileInfo(path).fileName()), qPrintable(r.error));
        }
    }

    void sameBytesSameHash() {
        const QString a = write("a.txt", "same words");
        const QString b = write("b.md", "same words");
        QCOMPARE(loadDocument(a).document->sha256, loadDocument(b).document->sha256);
    }

    void limitIsAnOption() {
        const QString path = write("medium.txt", QByteArray(2000, 'a'));
        QVERIFY(!loadDocument(path, {.maxFileBytes = 1000}).ok());
        QVERIFY(loadDocument(path, {.maxFileBytes = 4000}).ok());
    }

    void filterListsTheFormats() {
        const QString filter = documentFileFilter();
        for (const char * s : {"*.txt", "*.md", "*.pdf", "*.html"}) QVERIFY(filter.contains(QLatin1String(s)));
    }
};

QTEST_MAIN(TestDocumentLoader)
#include "test_document_loader.moc"
