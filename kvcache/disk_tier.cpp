#include "disk_tier.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <vector>

namespace lr {

Result<std::unique_ptr<DiskTier>> DiskTier::create(const std::string & dir, uint64_t capacity_bytes, std::shared_ptr<FileIo> io) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return error(StatusCode::io_error, "KV cache directory " + dir + " cannot be created (" + ec.message() + ")");
    // Probe that the directory is writable now rather than at the first spill.
    LR_ASSIGN_OR_RETURN(int fd, io->open_private(dir, "probe-"));
    io->close(fd);
    return std::unique_ptr<DiskTier>(new DiskTier(dir, capacity_bytes, std::move(io)));
}

DiskTier::~DiskTier() {
    for (auto & [size, c] : classes_) {
        if (c.fd >= 0) io_->close(c.fd);
    }
}

uint64_t DiskTier::used_bytes() const {
    std::lock_guard lock(mutex_);
    return used_;
}

uint64_t DiskTier::n_blocks() const {
    std::lock_guard lock(mutex_);
    return n_blocks_;
}

Result<DiskTier::SizeClass *> DiskTier::size_class(size_t n_bytes) {
    SizeClass & c = classes_[n_bytes];
    if (c.fd < 0) {
        LR_ASSIGN_OR_RETURN(c.fd, io_->open_private(dir_, "spill-" + std::to_string(n_bytes) + "-"));
    }
    return &c;
}

Result<TierSlot> DiskTier::allocate(size_t n_bytes) {
    std::lock_guard lock(mutex_);
    if (used_ + n_bytes > capacity_) return error(StatusCode::out_of_memory, "KV disk tier full");
    LR_ASSIGN_OR_RETURN(SizeClass * c, size_class(n_bytes));
    uint64_t index;
    if (!c->free.empty()) {
        index = c->free.back();
        c->free.pop_back();
    } else {
        index = c->next_index++;
    }
    used_ += n_bytes;
    ++n_blocks_;
    return TierSlot{slot_id(n_bytes, index), nullptr};
}

void DiskTier::release(const TierSlot & slot, size_t n_bytes) {
    std::lock_guard lock(mutex_);
    classes_[n_bytes].free.push_back(slot.id & 0xffffffffu);
    checksums_.erase(slot.id);
    used_ -= n_bytes;
    --n_blocks_;
}

Status DiskTier::write(const TierSlot & slot, const uint8_t * host_src, size_t n_bytes) {
    int fd;
    {
        std::lock_guard lock(mutex_);
        fd = classes_.at(n_bytes).fd;
    }
    LR_RETURN_IF_ERROR(io_->pwrite(fd, host_src, n_bytes, (slot.id & 0xffffffffu) * n_bytes, "KV disk tier in " + dir_));
    const uint64_t sum = XXH3_64bits(host_src, n_bytes);
    std::lock_guard lock(mutex_);
    checksums_[slot.id] = sum;
    return {};
}

Status DiskTier::read(const TierSlot & slot, uint8_t * host_dst, size_t n_bytes) {
    int fd;
    uint64_t expected = 0;
    bool known = false;
    {
        std::lock_guard lock(mutex_);
        fd = classes_.at(n_bytes).fd;
        if (auto it = checksums_.find(slot.id); it != checksums_.end()) {
            expected = it->second;
            known = true;
        }
    }
    if (!known) return error(StatusCode::corrupt_data, "KV disk tier: a block was read before it was written");
    LR_RETURN_IF_ERROR(io_->pread(fd, host_dst, n_bytes, (slot.id & 0xffffffffu) * n_bytes, "KV disk tier in " + dir_));
    if (XXH3_64bits(host_dst, n_bytes) != expected) {
        return error(StatusCode::corrupt_data, "KV disk tier in " + dir_ + ": a block failed its checksum");
    }
    return {};
}

TierFragmentation DiskTier::fragmentation() const {
    std::lock_guard lock(mutex_);
    TierFragmentation f;
    for (const auto & [n_bytes, c] : classes_) {
        std::vector<uint64_t> free = c.free;
        std::sort(free.begin(), free.end());
        uint64_t run = 0, largest = 0;
        for (size_t i = 0; i < free.size(); ++i) {
            run = i > 0 && free[i] == free[i - 1] + 1 ? run + 1 : 1;
            largest = std::max(largest, run);
        }
        f.n_slots += c.next_index;
        f.n_free_slots += free.size();
        f.largest_free_runs += largest;
        f.free_bytes += free.size() * n_bytes;
    }
    return f;
}

Status DiskTier::compact(const std::function<void(const TierSlot & from, const TierSlot & to)> & moved) {
    std::lock_guard lock(mutex_);
    std::vector<uint8_t> bytes;
    for (auto & [n_bytes, c] : classes_) {
        if (c.free.empty()) continue;
        const std::string what = "KV disk tier in " + dir_;
        std::sort(c.free.begin(), c.free.end());
        bytes.resize(n_bytes);
        // free[lo, hi) are the free slots still to fill, lowest first.
        size_t lo = 0, hi = c.free.size();
        while (true) {
            while (hi > lo && c.free[hi - 1] + 1 == c.next_index) {  // a free slot at the end: cut it
                --hi;
                --c.next_index;
            }
            if (lo == hi) break;
            const uint64_t from = slot_id(n_bytes, c.next_index - 1), to = slot_id(n_bytes, c.free[lo]);
            auto sum = checksums_.find(from);
            Status s = sum == checksums_.end() ? error(StatusCode::corrupt_data, what + ": a block was never written")
                                               : io_->pread(c.fd, bytes.data(), n_bytes, (from & 0xffffffffu) * n_bytes, what);
            if (s.ok() && XXH3_64bits(bytes.data(), n_bytes) != sum->second) {
                s = error(StatusCode::corrupt_data, what + ": a block failed its checksum");
            }
            if (s.ok()) s = io_->pwrite(c.fd, bytes.data(), n_bytes, (to & 0xffffffffu) * n_bytes, what);
            if (!s.ok()) {
                c.free.erase(c.free.begin() + std::ptrdiff_t(hi), c.free.end());
                c.free.erase(c.free.begin(), c.free.begin() + std::ptrdiff_t(lo));
                return s;
            }
            const uint64_t checksum = sum->second;
            checksums_.erase(sum);
            checksums_[to] = checksum;
            ++lo;
            --c.next_index;
            moved(TierSlot{from, nullptr}, TierSlot{to, nullptr});
        }
        c.free.clear();
        LR_RETURN_IF_ERROR(io_->resize(c.fd, c.next_index * n_bytes, what));
    }
    return {};
}

}  // namespace lr
