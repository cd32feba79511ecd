# Initial cache for building poppler's Qt 6 wrapper where no package builds it against the Qt
# in use (Windows and macOS, .github/workflows): the core and the wrapper, no optional
# decoders, tools or tests. Written for poppler 22.12 (the version Debian 12 ships).
#   cmake -C packaging/poppler-qt6.cmake -S poppler-22.12.0 -B poppler-build ...
set(ENABLE_QT6 ON CACHE BOOL "")
set(ENABLE_QT5 OFF CACHE BOOL "")
set(ENABLE_GLIB OFF CACHE BOOL "")
set(ENABLE_CPP OFF CACHE BOOL "")
set(ENABLE_UTILS OFF CACHE BOOL "")
set(ENABLE_BOOST OFF CACHE BOOL "")
set(ENABLE_LIBCURL OFF CACHE BOOL "")
set(ENABLE_CMS none CACHE STRING "")
set(ENABLE_LIBOPENJPEG none CACHE STRING "")
set(ENABLE_DCTDECODER unmaintained CACHE STRING "")
set(BUILD_GTK_TESTS OFF CACHE BOOL "")
set(BUILD_QT5_TESTS OFF CACHE BOOL "")
set(BUILD_QT6_TESTS OFF CACHE BOOL "")
set(BUILD_CPP_TESTS OFF CACHE BOOL "")
set(BUILD_MANUAL_TESTS OFF CACHE BOOL "")
set(CMAKE_BUILD_TYPE Release CACHE STRING "")
