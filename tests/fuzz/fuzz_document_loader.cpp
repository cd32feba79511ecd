// libFuzzer entry point for the document loaders: any bytes, saved as a .txt, .md, .html or
// .pdf file or one with no known suffix, give text or a message, never a crash. Text in odd
// encodings (UTF-16 with a BOM, Latin-1, broken UTF-8) and HTML in any charset load; a
// loaded document is never blank and says its format, size, hash and (PDF) pages.
// NOTE: broken UTF-16 keeps its lone surrogates in the QString; the conversion to UTF-8
// for the tokenizer makes them U+FFFD.
//
// Input: byte 0 picks the suffix; the rest is the file.
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QStringList>
#include <QTemporaryDir>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "app/core/document_loader.h"

namespace {

[[noreturn]] void fail(const char * what) {
    std::fprintf(stderr, "fuzz_document_loader: %s\n", what);
    std::abort();
}

const char * const kSuffixes[] = {"txt", "md", "html", "xhtml", "pdf", "bin"};

}  // namespace

// QTextDocument (the HTML path) needs a QGuiApplication; offscreen needs no display.
extern "C" int LLVMFuzzerInitialize(int * argc, char *** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    static QGuiApplication app(*argc, *argv);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static QTemporaryDir dir;
    if (size == 0) return 0;
    const QString path = dir.filePath(QStringLiteral("document.") + QLatin1String(kSuffixes[data[0] % std::size(kSuffixes)]));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) fail("cannot write the document");
    file.write(reinterpret_cast<const char *>(data + 1), qint64(size - 1));
    file.close();

    const lr::app::DocumentLoadResult result = lr::app::loadDocument(path);
    if (!result.ok()) {
        if (result.error.isEmpty()) fail("a document refused without a message");
        return 0;
    }
    const lr::app::LoadedDocument & doc = *result.document;
    if (doc.text.trimmed().isEmpty()) fail("a blank document was loaded");
    if (!result.error.isEmpty()) fail("a loaded document with an error");
    if (!QStringList{"txt", "md", "pdf", "html"}.contains(doc.format)) fail("a loaded document of no known format");
    if (doc.fileBytes != qint64(size - 1) || doc.sha256.size() != 64) fail("a loaded document with a wrong size or hash");
    if ((doc.format == QLatin1String("pdf")) != (doc.pages > 0)) fail("pages counted for a document that is not a PDF, or not for one");
    return 0;
}
