#include "notices.h"

#include <array>

namespace lr {
namespace {

// NOTE: keep in step with the libraries the CMake files link (and install-deps.sh installs).
constexpr std::array kNotices = {
    Notice{"stories260K (Andrej Karpathy, llama2.c tinyllamas)", "the bundled model, compiled into the binaries", "MIT"},
    Notice{"Qt 6", "the desktop app's widgets, SQL and threads", "LGPL-3.0-only (or GPL)"},
    Notice{"SQLite", "conversations, settings and the prefix cache's index", "public domain"},
    Notice{"Poppler (poppler-qt6)", "text of PDF documents", "GPL-2.0-or-later"},
    Notice{"ICU", "Unicode normalization and categories in the tokenizers", "Unicode-3.0 (ICU licence)"},
    Notice{"SentencePiece", "the SentencePiece tokenizer's model format", "Apache-2.0"},
    Notice{"xxHash", "the prefix cache's hash chains and checksums", "BSD-2-Clause"},
    Notice{"cpp-httplib", "longread-cli serve's HTTP server", "MIT"},
    Notice{"nlohmann/json", "longread-cli serve's JSON", "MIT"},
    Notice{"NVIDIA CUDA runtime and cuBLAS", "the CUDA backend, when built with it", "NVIDIA CUDA Toolkit EULA"},
};

}  // namespace

std::span<const Notice> third_party_notices() { return kNotices; }

}  // namespace lr
