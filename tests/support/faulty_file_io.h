#pragma once
// A FileIo that injects the faults the KV cache must survive: disk full, I/O errors,
// bytes changed on disk (checksum mismatch), files truncated or deleted under it.

#include <atomic>
#include <cerrno>
#include <cstring>

#include "kvcache/file_io.h"

namespace lr::test {

class FaultyFileIo final : public FileIo {
public:
    enum class Fault { none, disk_full, write_error, read_error, corrupt_read, truncated_read, missing_file };

    explicit FaultyFileIo(Fault fault, int after = 0) : fault_(fault), countdown_(after), real_(posix_file_io()) {}

    int faults_injected() const { return injected_.load(); }

    Result<int> open(const std::string & path, bool create) override {
        if (fault_ == Fault::missing_file && trigger()) return error(StatusCode::not_found, path + ": No such file or directory");
        return real_->open(path, create);
    }
    Result<int> open_private(const std::string & dir, const std::string & prefix) override { return real_->open_private(dir, prefix); }
    void close(int fd) override { real_->close(fd); }
    Status unlink(const std::string & path) override { return real_->unlink(path); }

    Status pwrite(int fd, const void * data, size_t n, uint64_t offset, const std::string & what) override {
        if (fault_ == Fault::disk_full && trigger())
            return error(StatusCode::out_of_memory, what + ": write failed (" + std::strerror(ENOSPC) + ")");
        if (fault_ == Fault::write_error && trigger())
            return error(StatusCode::io_error, what + ": write failed (" + std::strerror(EIO) + ")");
        return real_->pwrite(fd, data, n, offset, what);
    }

    Status pread(int fd, void * data, size_t n, uint64_t offset, const std::string & what) override {
        if (fault_ == Fault::read_error && trigger())
            return error(StatusCode::io_error, what + ": read failed (" + std::strerror(EIO) + ")");
        if (fault_ == Fault::truncated_read && trigger()) {
            return error(StatusCode::corrupt_data, what + ": the file is shorter than expected (truncated?)");
        }
        LR_RETURN_IF_ERROR(real_->pread(fd, data, n, offset, what));
        if (fault_ == Fault::corrupt_read && n > 0 && trigger()) static_cast<uint8_t *>(data)[n / 2] ^= 0x5a;
        return {};
    }

    Status resize(int fd, uint64_t n_bytes, const std::string & what) override { return real_->resize(fd, n_bytes, what); }
    Status free_range(int fd, uint64_t offset, uint64_t n, const std::string & what) override {
        return real_->free_range(fd, offset, n, what);
    }

private:
    // Fires once the countdown has run out, then keeps firing (a broken disk stays broken).
    bool trigger() {
        if (countdown_.fetch_sub(1) > 0) return false;
        ++injected_;
        return true;
    }

    Fault fault_;
    std::atomic<int> countdown_;
    std::atomic<int> injected_{0};
    std::shared_ptr<FileIo> real_;
};

}  // namespace lr::test
