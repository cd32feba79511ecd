#pragma once
// Qt binds a null QString as SQL NULL; the schema's text columns are NOT NULL.

#include <QString>

namespace lr::app {

inline QString sqlText(const QString & s) { return s.isNull() ? QStringLiteral("") : s; }

}  // namespace lr::app
