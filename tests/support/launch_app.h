#pragma once
// The desktop app as the GUI tests start it: settings and database in `dir`, one engine
// thread, no dialogs. The bundled model loads unless the settings name another.
#include <QDir>
#include <QSettings>

#include <memory>

#include "ui/longread_app.h"

namespace lr::test {

inline std::unique_ptr<ui::LongreadApp> launch_app(const QDir & dir) {
    auto settings = std::make_unique<QSettings>(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    settings->setValue("storage/database", dir.filePath(QStringLiteral("conversations.sqlite")));
    settings->setValue("engine/threads", 1);
    auto app = std::make_unique<ui::LongreadApp>(ui::LongreadAppOptions{.settings = std::move(settings), .interactive = false});
    if (!app->start()) qFatal("%s", qPrintable(app->databaseError()));
    return app;
}

}  // namespace lr::test
