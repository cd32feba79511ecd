#pragma once
// A document file to plain text: .txt (and .text, .log), .md (.markdown), .pdf (poppler),
// .html (.htm). Every way a file can fail to give text has its own message that says
// what is wrong and what to do: missing, unreadable, empty, too large, binary, a PDF that
// is locked or has no text layer, an unsupported format. Safe to call from any thread.

#include <QString>
#include <QStringList>

#include <optional>

namespace lr::app {

struct LoadedDocument {
    QString path;
    QString title;   // the file name
    QString format;  // "txt", "md", "pdf", "html"
    QString text;
    QString sha256;  // of the file's bytes, hex
    qint64 fileBytes = 0;
    int pages = 0;  // PDF pages (0 for others)
    QString note;   // e.g. "decoded as Latin-1 (not valid UTF-8)"
};

struct DocumentLoadResult {
    std::optional<LoadedDocument> document;
    QString error;  // set when document is empty

    bool ok() const { return document.has_value(); }
};

struct DocumentLoadOptions {
    qint64 maxFileBytes = qint64(64) << 20;  // larger files are refused, with the size in the message
};

DocumentLoadResult loadDocument(const QString & path, const DocumentLoadOptions & options = {});

// "*.txt *.md *.pdf *.html ..." and the file dialog's filter line.
QStringList documentSuffixes();
QString documentFileFilter();

}  // namespace lr::app
