#include "file_io.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lr {
namespace {

class PosixFileIo final : public FileIo {
public:
    Result<int> open(const std::string & path, bool create) override {
        const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (fd < 0) return error(errno == ENOENT ? StatusCode::not_found : StatusCode::io_error, path + ": " + std::strerror(errno));
        return fd;
    }

    Result<int> open_private(const std::string & dir, const std::string & prefix) override {
        std::string path = dir + "/" + prefix + "XXXXXX";
        const int fd = ::mkostemp(path.data(), O_CLOEXEC);
        if (fd < 0) return error(StatusCode::io_error, dir + ": cannot create a cache file (" + std::strerror(errno) + ")");
        ::unlink(path.c_str());
        return fd;
    }

    void close(int fd) override { ::close(fd); }

    Status unlink(const std::string & path) override {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return error(StatusCode::io_error, path + ": " + std::strerror(errno));
        return {};
    }

    Status pwrite(int fd, const void * data, size_t n, uint64_t offset, const std::string & what) override {
        const auto * p = static_cast<const uint8_t *>(data);
        while (n > 0) {
            const ssize_t w = ::pwrite(fd, p, n, off_t(offset));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int err = w < 0 ? errno : ENOSPC;
                return error(err == ENOSPC ? StatusCode::out_of_memory : StatusCode::io_error,
                             what + ": write failed (" + std::strerror(err) + ")");
            }
            p += w;
            n -= size_t(w);
            offset += uint64_t(w);
        }
        return {};
    }

    Status pread(int fd, void * data, size_t n, uint64_t offset, const std::string & what) override {
        auto * p = static_cast<uint8_t *>(data);
        while (n > 0) {
            const ssize_t r = ::pread(fd, p, n, off_t(offset));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return error(StatusCode::io_error, what + ": read failed (" + std::strerror(errno) + ")");
            if (r == 0) return error(StatusCode::corrupt_data, what + ": the file is shorter than expected (truncated?)");
            p += r;
            n -= size_t(r);
            offset += uint64_t(r);
        }
        return {};
    }

    Status resize(int fd, uint64_t n_bytes, const std::string & what) override {
        while (::ftruncate(fd, off_t(n_bytes)) != 0) {
            if (errno != EINTR) return error(StatusCode::io_error, what + ": cannot resize (" + std::strerror(errno) + ")");
        }
        return {};
    }

    Status free_range(int fd, uint64_t offset, uint64_t n, const std::string & what) override {
        if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(n)) == 0) return {};
        const int err = errno;
        return error(err == EOPNOTSUPP ? StatusCode::unsupported : StatusCode::io_error,
                     what + ": cannot free disk space (" + std::strerror(err) + ")");
    }
};

}  // namespace

std::shared_ptr<FileIo> posix_file_io() { return std::make_shared<PosixFileIo>(); }

}  // namespace lr
