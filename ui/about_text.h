#pragma once
// The About box's text: what Longread is, its version, the Qt it runs on, and what it
// contains or links with each licence (resources/notices.h).

#include <QString>

namespace lr::ui {

QString aboutText();

}  // namespace lr::ui
