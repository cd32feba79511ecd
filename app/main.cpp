// longread: the desktop app. Wires the objects together (LongreadApp) and runs the event loop.
#include <QApplication>
#include <QCommandLineParser>

#include "app/core/app_settings.h"
#include "ui/longread_app.h"

int main(int argc, char ** argv) {
    QGuiApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Longread"));
    QApplication::setOrganizationName(QStringLiteral("Longread"));
    QApplication::setApplicationVersion(QStringLiteral(LONGREAD_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("longread"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Chat with a local LLM about long documents."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")},
                                   QStringLiteral("GGUF model to load (default: the last one)."), QStringLiteral("file"));
    parser.addOption(model);
    parser.addPositionalArgument(QStringLiteral("document"), QStringLiteral("A .txt, .md, .pdf or .html file to open."),
                                 QStringLiteral("[document]"));
    parser.process(app);

    lr::ui::LongreadApp longread({.settings = lr::app::AppSettings::userStore(),
                                  .modelPath = parser.value(model),
                                  .documentPath = parser.positionalArguments().value(0)});
    if (!longread.start()) return 1;
    return QApplication::exec();
}
