#pragma once
// Each conversation's engine settings (the cache sliders), as JSON.

#include <QJsonObject>

#include <optional>

#include "app/core/database.h"

namespace lr::app {

class SettingsRepository {
public:
    explicit SettingsRepository(Database & db) : m_db(db) {}

    std::optional<QJsonObject> load(qint64 conversationId) const;
    bool save(qint64 conversationId, const QJsonObject & settings);

private:
    Database & m_db;
};

}  // namespace lr::app
