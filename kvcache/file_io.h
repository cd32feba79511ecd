#pragma once
// The file operations the disk tier and the prefix store use, behind an interface so that
// tests can inject faults (disk full, I/O errors, truncated or deleted files).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/common/status.h"

namespace lr {

class FileIo {
public:
    virtual ~FileIo() = default;
    // Opens (creating if asked) a file for reading and writing; returns a descriptor.
    virtual Result<int> open(const std::string & path, bool create) = 0;
    // A new file in `dir` that no other process or instance can open: created with a
    // unique name and unlinked at once (it disappears when closed, or at a crash).
    virtual Result<int> open_private(const std::string & dir, const std::string & prefix) = 0;
    virtual void close(int fd) = 0;
    virtual Status unlink(const std::string & path) = 0;
    // Whole transfers or an error naming `what`.
    virtual Status pwrite(int fd, const void * data, size_t n, uint64_t offset, const std::string & what) = 0;
    virtual Status pread(int fd, void * data, size_t n, uint64_t offset, const std::string & what) = 0;
    // The health monitor's repairs. Cuts (or extends) the file to n_bytes.
    virtual Status resize(int fd, uint64_t n_bytes, const std::string & what) = 0;
    // Gives the disk space of [offset, offset + n) back to the file system (a hole that
    // reads as zeros; the file keeps its length). unsupported where the file system cannot.
    virtual Status free_range(int fd, uint64_t offset, uint64_t n, const std::string & what) = 0;
};

// The real thing: POSIX calls, EINTR retried, short transfers completed.
std::shared_ptr<FileIo> posix_file_io();

}  // namespace lr
