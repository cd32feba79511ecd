#include "document_loader.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QStringDecoder>
#include <QTextDocument>

#include <poppler-qt6.h>

#include <memory>

namespace lr::app {
namespace {

QString sizeText(qint64 bytes) {
    if (bytes >= (qint64(1) << 30)) return QString::number(double(bytes) / double(qint64(1) << 30), 'f', 1) + QStringLiteral(" GB");
    if (bytes >= (1 << 20)) return QString::number(double(bytes) / double(1 << 20), 'f', 1) + QStringLiteral(" MB");
    if (bytes >= 1024) return QString::number(double(bytes) / 1024.0, 'f', 1) + QStringLiteral(" KB");
    return QString::number(bytes) + QStringLiteral(" bytes");
}

DocumentLoadResult failure(const QString & message) { return {.document = std::nullopt, .error = message}; }

bool isBlank(const QString & text) {
    for (QChar c : text) {
        if (!c.isSpace()) return false;
    }
    return true;
}

// Text that is not text: NUL bytes, or many control characters.
bool looksBinary(const QByteArray & bytes) {
    const qsizetype n = std::min<qsizetype>(bytes.size(), 1 << 16);
    qsizetype control = 0;
    for (qsizetype i = 0; i < n; ++i) {
        const unsigned char c = static_cast<unsigned char>(bytes[i]);
        if (c == 0) return true;
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b) ++control;
    }
    return n > 0 && control * 20 > n;  // more than 5%
}

// UTF-8 (with or without a BOM), UTF-16 with a BOM, or else Latin-1 (with a note).
QString decodeText(const QByteArray & bytes, QString * note) {
    if (bytes.startsWith("\xFF\xFE") || bytes.startsWith("\xFE\xFF")) {
        QStringDecoder decoder(bytes.startsWith("\xFF\xFE") ? QStringDecoder::Utf16LE : QStringDecoder::Utf16BE,
                               QStringDecoder::Flag::Stateless);
        return decoder.decode(bytes.mid(2));
    }
    QStringDecoder utf8(QStringDecoder::Utf8);  // drops an initial BOM
    QString text = utf8.decode(bytes);
    if (!utf8.hasError()) return text;
    *note = QStringLiteral("decoded as Latin-1: the file is not valid UTF-8");
    return QString::fromLatin1(bytes);
}

QString formatOf(const QString & suffix) {
    const QString s = suffix.toLower();
    if (s == QLatin1String("txt") || s == QLatin1String("text") || s == QLatin1String("log")) return QStringLiteral("txt");
    if (s == QLatin1String("md") || s == QLatin1String("markdown")) return QStringLiteral("md");
    if (s == QLatin1String("pdf")) return QStringLiteral("pdf");
    if (s == QLatin1String("html") || s == QLatin1String("htm") || s == QLatin1String("xhtml")) return QStringLiteral("html");
    return {};
}

DocumentLoadResult loadPdf(const QString & path, LoadedDocument doc) {
    // Poppler prints its parser's complaints; the message below says what matters.
    static const bool quiet = [] {
        Poppler::setDebugErrorFunction([](const QString &, const QVariant &) {}, QVariant());
        return true;
    }();
    Q_UNUSED(quiet);
    std::unique_ptr<Poppler::Document> pdf = Poppler::Document::load(path);
    if (!pdf) {
        return failure(QStringLiteral("%1 cannot be opened as a PDF: the file is damaged or is not a PDF.").arg(doc.title));
    }
    if (pdf->isLocked()) {
        return failure(
            QStringLiteral("%1 is password-protected. Open it in a PDF viewer, save an unprotected copy, and open that.").arg(doc.title));
    }
    doc.pages = pdf->numPages();
    if (doc.pages <= 0) return failure(QStringLiteral("%1 has no pages.").arg(doc.title));
    QStringList pages;
    for (int i = 0; i < doc.pages; ++i) {
        std::unique_ptr<Poppler::Page> page = pdf->page(i);
        pages << (page ? page->text(QRectF()).trimmed() : QString());
    }
    doc.text = pages.join(QStringLiteral("\n\n"));
    if (isBlank(doc.text)) {
        return failure(QStringLiteral("%1 has no text layer: its %2 page(s) are images (a scan?). Run OCR on it first "
                                      "(for example with ocrmypdf) and open the result.")
                           .arg(doc.title)
                           .arg(doc.pages));
    }
    return {.document = std::move(doc)};
}

}  // namespace

QStringList documentSuffixes() {
    return {QStringLiteral("txt"), QStringLiteral("text"), QStringLiteral("log"), QStringLiteral("md"),   QStringLiteral("markdown"),
            QStringLiteral("pdf"), QStringLiteral("html"), QStringLiteral("htm"), QStringLiteral("xhtml")};
}

QString documentFileFilter() {
    QStringList globs;
    for (const QString & s : documentSuffixes()) globs << QStringLiteral("*.") + s;
    return QStringLiteral("Documents (%1);;All files (*)").arg(globs.join(QLatin1Char(' ')));
}

DocumentLoadResult loadDocument(const QString & path, const DocumentLoadOptions & options) {
    const QFileInfo info(path);
    LoadedDocument doc;
    doc.path = info.absoluteFilePath();
    doc.title = info.fileName();
    if (!info.exists()) return failure(QStringLiteral("%1 does not exist (moved or deleted?).").arg(path));
    if (info.isDir()) return failure(QStringLiteral("%1 is a folder: open a file in it.").arg(doc.title));
    if (!info.isReadable()) return failure(QStringLiteral("%1 cannot be read: check its permissions.").arg(doc.title));
    doc.fileBytes = info.size();
    if (doc.fileBytes == 0) return failure(QStringLiteral("%1 is empty: there is nothing to read.").arg(doc.title));
    if (doc.fileBytes > options.maxFileBytes) {
        return failure(QStringLiteral("%1 is %2; Longread opens documents up to %3. Split it, or open the part you need.")
                           .arg(doc.title, sizeText(doc.fileBytes), sizeText(options.maxFileBytes)));
    }
    doc.format = formatOf(info.suffix());

    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return failure(QStringLiteral("%1 cannot be read: %2").arg(doc.title, file.errorString()));
    const QByteArray bytes = file.readAll();
    file.close();
    doc.sha256 = QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());

    if (doc.format.isEmpty()) {
        if (bytes.startsWith("%PDF-")) {
            doc.format = QStringLiteral("pdf");
        } else if (!looksBinary(bytes)) {
            doc.format = QStringLiteral("txt");
        } else {
            return failure(QStringLiteral("%1 is not a format Longread reads. Open a .txt, .md, .pdf or .html file.").arg(doc.title));
        }
    }
    if (doc.format == QLatin1String("pdf")) {
        const QString pdfPath = doc.path;
        return loadPdf(pdfPath, std::move(doc));
    }

    const bool utf16 = bytes.startsWith("\xFF\xFE") || bytes.startsWith("\xFE\xFF");
    if (!utf16 && looksBinary(bytes)) {
        return failure(QStringLiteral("%1 is not text: it contains binary data (is it really a .%2 file?). "
                                      "Open a text, Markdown, PDF or HTML document.")
                           .arg(doc.title, info.suffix()));
    }
    if (doc.format == QLatin1String("html")) {
        QStringDecoder decoder = QStringDecoder::decoderForHtml(bytes);
        const QString html = decoder.isValid() ? QString(decoder.decode(bytes)) : QString::fromUtf8(bytes);
        QTextDocument parsed;
        parsed.setHtml(html);
        doc.text = parsed.toPlainText();
        // QTextDocument writes non-breaking spaces and paragraph separators as such.
        doc.text.replace(QChar::Nbsp, QLatin1Char(' ')).replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
    } else {
        doc.text = decodeText(bytes, &doc.note);
    }
    if (isBlank(doc.text)) {
        return failure(QStringLiteral("%1 has no text: only spaces, blank lines or markup.").arg(doc.title));
    }
    return {.document = std::move(doc)};
}

}  // namespace lr::app
