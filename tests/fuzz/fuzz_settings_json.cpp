// libFuzzer entry point for the settings JSON: the engine settings a conversation stores in
// SQLite and the defaults AppSettings keeps, read as SettingsRepository, AppSettings and
// SessionController read them (QJsonDocument, then engineSettingsFromJson). Any bytes give
// settings that validate: the file's where they are valid, the defaults where not. What
// was read is written and read back unchanged.
#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "app/core/engine_settings.h"

namespace {

[[noreturn]] void fail(const char * what) {
    std::fprintf(stderr, "fuzz_settings_json: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    using namespace lr::app;
    const QByteArray bytes = QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size));
    const EngineSettings defaults;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes);
    const EngineSettings read = doc.isObject() ? engineSettingsFromJson(doc.object(), defaults) : defaults;
    if (!validationError(read).isEmpty()) fail("the settings read do not validate");

    const QJsonObject written = toJson(read);
    if (toJson(engineSettingsFromJson(written, defaults)) != written) fail("the settings change on a JSON round trip");
    (void)policyDescription(read.kv);
    (void)codecsDescription(read.kv);
    return 0;
}
