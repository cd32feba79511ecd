#include "prefix_store.h"

#include <sqlite3.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace lr {
namespace {

struct StmtDeleter {
    void operator()(sqlite3_stmt * s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

Stmt prepare(sqlite3 * db, const char * sql) {
    sqlite3_stmt * s = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
    return Stmt(s);
}

// SQLite integers are signed; hashes are not.
int64_t as_sql(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

uint64_t PrefixStore::chain_next(uint64_t previous, std::span<const int32_t> block_tokens) {
    return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), previous);
}

Result<std::unique_ptr<PrefixStore>> PrefixStore::open(const std::string & dir, uint64_t capacity_bytes, std::shared_ptr<FileIo> io) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return error(StatusCode::io_error, "KV cache directory " + dir + " cannot be created (" + ec.message() + ")");
    std::unique_ptr<PrefixStore> store(new PrefixStore(dir, capacity_bytes, std::move(io)));
    const std::string path = dir + "/prefix-index.sqlite";
    if (sqlite3_open_v2(path.c_str(), &store->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        return error(StatusCode::io_error, path + ": cannot open the prefix cache index (" +
                                               std::string(store->db_ ? sqlite3_errmsg(store->db_) : "out of memory") + ")");
    }
    sqlite3_busy_timeout(store->db_, 10000);  // other Longread processes may hold the write lock briefly
    // synchronous=NORMAL: a commit survives the process being killed; only a power cut may
    // lose the last ones, which a cache can afford (the checksums catch the rest).
    const char * schema =
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS blocks (chain INTEGER NOT NULL, layer INTEGER NOT NULL, depth INTEGER NOT NULL,"
        " size INTEGER NOT NULL, slot INTEGER NOT NULL, checksum INTEGER NOT NULL, last_used INTEGER NOT NULL,"
        " PRIMARY KEY (chain, layer));"
        "CREATE INDEX IF NOT EXISTS blocks_lru ON blocks (last_used, depth);"
        "CREATE TABLE IF NOT EXISTS free_slots (size INTEGER NOT NULL, slot INTEGER NOT NULL, PRIMARY KEY (size, slot));"
        "CREATE TABLE IF NOT EXISTS size_classes (size INTEGER PRIMARY KEY, next_slot INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), used INTEGER NOT NULL);"
        "INSERT OR IGNORE INTO totals (id, used) SELECT 0, COALESCE(SUM(size), 0) FROM blocks;";
    // Switching a new index to WAL does not wait for the busy handler, so a process that
    // creates the index while another one does sees "locked": wait for it like the handler would.
    Status s = store->exec(schema);
    for (int waited_ms = 0; !s.ok() && sqlite3_errcode(store->db_) == SQLITE_BUSY && waited_ms < 10000; waited_ms += 20) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        s = store->exec(schema);
    }
    if (!s.ok() && sqlite3_errcode(store->db_) == SQLITE_BUSY) {
        return error(StatusCode::io_error, path + ": another process has kept the prefix cache index locked for 10 s");
    }
    if (s.ok()) s = store->load_used();
    if (!s.ok()) {
        return error(StatusCode::corrupt_data, path + ": the prefix cache index is unusable (" + s.message() + "); delete the directory " +
                                                   dir + " to start a fresh cache");
    }
    return store;
}

PrefixStore::~PrefixStore() {
    for (auto & [size, fd] : files_) io_->close(fd);
    sqlite3_close(db_);
}

Status PrefixStore::exec(const char * sql) {
    char * msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
        std::string text = msg ? msg : "unknown error";
        sqlite3_free(msg);
        return error(StatusCode::io_error, dir_ + "/prefix-index.sqlite: " + text);
    }
    return {};
}

Status PrefixStore::index_error(const char * what) const {
    return error(StatusCode::io_error, dir_ + "/prefix-index.sqlite: " + what + " failed (" + sqlite3_errmsg(db_) + ")");
}

template <class Body>
Status PrefixStore::transaction(Body && body) {
    LR_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status s = load_used();
    if (s.ok()) s = body();
    if (s.ok()) {
        Stmt save = prepare(db_, "UPDATE totals SET used = ? WHERE id = 0");
        sqlite3_bind_int64(save.get(), 1, int64_t(used_.load()));
        if (sqlite3_step(save.get()) != SQLITE_DONE) s = index_error("storing the byte total");
    }
    if (s.ok()) s = exec("COMMIT");
    if (!s.ok()) {
        (void)exec("ROLLBACK");
        (void)load_used();
    }
    return s;
}

Status PrefixStore::load_used() {
    Stmt st = prepare(db_, "SELECT used FROM totals WHERE id = 0");
    if (sqlite3_step(st.get()) != SQLITE_ROW) return index_error("reading the byte total");
    used_ = uint64_t(sqlite3_column_int64(st.get(), 0));
    return {};
}

int64_t PrefixStore::now_tick() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<int> PrefixStore::data_file(size_t n_bytes) {
    if (auto it = files_.find(n_bytes); it != files_.end()) return it->second;
    LR_ASSIGN_OR_RETURN(int fd, io_->open(dir_ + "/prefix-" + std::to_string(n_bytes) + ".bin", true));
    files_[n_bytes] = fd;
    return fd;
}

bool PrefixStore::contains(uint64_t chain, uint32_t n_layer) {
    std::lock_guard lock(mutex_);
    Stmt st = prepare(db_, "SELECT COUNT(*) FROM blocks WHERE chain = ? AND layer <> ?");
    sqlite3_bind_int64(st.get(), 1, as_sql(chain));
    sqlite3_bind_int64(st.get(), 2, kStatesLayer);
    return sqlite3_step(st.get()) == SQLITE_ROW && uint32_t(sqlite3_column_int64(st.get(), 0)) == n_layer;
}

void PrefixStore::touch(uint64_t chain) {
    std::lock_guard lock(mutex_);
    Stmt st = prepare(db_, "UPDATE blocks SET last_used = ? WHERE chain = ?");
    sqlite3_bind_int64(st.get(), 1, now_tick());
    sqlite3_bind_int64(st.get(), 2, as_sql(chain));
    sqlite3_step(st.get());  // a lost touch only ages the entry
}

Status PrefixStore::drop(uint64_t chain, uint32_t layer) {
    Stmt del = prepare(db_, "DELETE FROM blocks WHERE chain = ? AND layer = ? RETURNING size, slot");
    sqlite3_bind_int64(del.get(), 1, as_sql(chain));
    sqlite3_bind_int64(del.get(), 2, layer);
    const int rc = sqlite3_step(del.get());
    if (rc == SQLITE_DONE) return {};
    if (rc != SQLITE_ROW) return index_error("dropping a block");
    const int64_t size = sqlite3_column_int64(del.get(), 0), slot = sqlite3_column_int64(del.get(), 1);
    if (sqlite3_step(del.get()) != SQLITE_DONE) return index_error("dropping a block");
    del.reset();
    Stmt free_slot = prepare(db_, "INSERT OR IGNORE INTO free_slots (size, slot) VALUES (?, ?)");
    sqlite3_bind_int64(free_slot.get(), 1, size);
    sqlite3_bind_int64(free_slot.get(), 2, slot);
    if (sqlite3_step(free_slot.get()) != SQLITE_DONE) return index_error("freeing a slot");
    used_ -= std::min<uint64_t>(used_.load(), uint64_t(size));
    return {};
}

Status PrefixStore::read(uint64_t chain, uint32_t layer, uint8_t * dst, size_t n_bytes) {
    std::lock_guard lock(mutex_);
    Stmt st = prepare(db_, "SELECT size, slot, checksum FROM blocks WHERE chain = ? AND layer = ?");
    sqlite3_bind_int64(st.get(), 1, as_sql(chain));
    sqlite3_bind_int64(st.get(), 2, layer);
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_DONE) return error(StatusCode::not_found, "prefix block not cached");
    if (rc != SQLITE_ROW) return index_error("looking up a block");
    const size_t size = size_t(sqlite3_column_int64(st.get(), 0));
    const uint64_t slot = uint64_t(sqlite3_column_int64(st.get(), 1));
    const uint64_t checksum = uint64_t(sqlite3_column_int64(st.get(), 2));
    st.reset();
    Status s;
    if (size != n_bytes) {
        s = error(StatusCode::corrupt_data, "prefix cache in " + dir_ + ": a block has the wrong size");
    } else {
        Result<int> fd = data_file(n_bytes);
        s = fd.ok() ? io_->pread(*fd, dst, n_bytes, slot * n_bytes, "prefix cache in " + dir_) : fd.status();
        if (s.ok() && XXH3_64bits(dst, n_bytes) != checksum) {
            s = error(StatusCode::corrupt_data, "prefix cache in " + dir_ + ": a block failed its checksum");
        }
    }
    if (!s.ok()) {
        (void)transaction([&] { return drop(chain, layer); });  // never read twice; a failed drop is retried next time
        return error(StatusCode::corrupt_data, s.message());
    }
    return {};
}

Status PrefixStore::evict_to_locked(uint64_t bytes) {
    while (used_ > bytes) {
        Stmt oldest = prepare(db_, "SELECT chain, layer FROM blocks ORDER BY last_used ASC, depth DESC LIMIT 64");
        std::vector<std::pair<uint64_t, uint32_t>> victims;
        int rc;
        while ((rc = sqlite3_step(oldest.get())) == SQLITE_ROW) {
            victims.emplace_back(uint64_t(sqlite3_column_int64(oldest.get(), 0)), uint32_t(sqlite3_column_int64(oldest.get(), 1)));
        }
        if (rc != SQLITE_DONE) return index_error("choosing blocks to evict");
        oldest.reset();
        if (victims.empty()) return error(StatusCode::out_of_memory, "prefix cache: nothing left to evict");
        for (const auto & [chain, layer] : victims) {
            LR_RETURN_IF_ERROR(drop(chain, layer));
            if (layer != kStatesLayer) LR_RETURN_IF_ERROR(drop(chain, kStatesLayer));
            if (used_ <= bytes) break;
        }
    }
    return {};
}

Result<int64_t> PrefixStore::take_slot(size_t n_bytes) {
    Stmt pick = prepare(db_, "DELETE FROM free_slots WHERE rowid = (SELECT rowid FROM free_slots WHERE size = ? LIMIT 1) RETURNING slot");
    sqlite3_bind_int64(pick.get(), 1, int64_t(n_bytes));
    int rc = sqlite3_step(pick.get());
    if (rc == SQLITE_ROW) return sqlite3_column_int64(pick.get(), 0);
    if (rc != SQLITE_DONE) return index_error("taking a free slot");
    Stmt next = prepare(db_,
                        "INSERT INTO size_classes (size, next_slot) VALUES (?, 1) "
                        "ON CONFLICT(size) DO UPDATE SET next_slot = next_slot + 1 RETURNING next_slot - 1");
    sqlite3_bind_int64(next.get(), 1, int64_t(n_bytes));
    if (sqlite3_step(next.get()) != SQLITE_ROW) return index_error("allocating a slot");
    return sqlite3_column_int64(next.get(), 0);
}

// Within the transaction, so concurrent processes never hand out the same slot, and the row
// points at bytes already written.
Status PrefixStore::write_one(const PrefixBlockWrite & block) {
    const size_t n_bytes = block.bytes.size();
    {
        Stmt st = prepare(db_, "SELECT 1 FROM blocks WHERE chain = ? AND layer = ?");
        sqlite3_bind_int64(st.get(), 1, as_sql(block.chain));
        sqlite3_bind_int64(st.get(), 2, block.layer);
        const int rc = sqlite3_step(st.get());
        if (rc == SQLITE_ROW) return {};  // stored already (by us or another process)
        if (rc != SQLITE_DONE) return index_error("looking up a block");
    }
    if (n_bytes > capacity_) return error(StatusCode::out_of_memory, "prefix cache: a block is larger than the disk budget");
    LR_RETURN_IF_ERROR(evict_to_locked(capacity_ - n_bytes));
    LR_ASSIGN_OR_RETURN(const int64_t slot, take_slot(n_bytes));
    LR_ASSIGN_OR_RETURN(const int fd, data_file(n_bytes));
    LR_RETURN_IF_ERROR(io_->pwrite(fd, block.bytes.data(), n_bytes, uint64_t(slot) * n_bytes, "prefix cache in " + dir_));
    Stmt ins = prepare(db_, "INSERT INTO blocks (chain, layer, depth, size, slot, checksum, last_used) VALUES (?, ?, ?, ?, ?, ?, ?)");
    sqlite3_bind_int64(ins.get(), 1, as_sql(block.chain));
    sqlite3_bind_int64(ins.get(), 2, block.layer);
    sqlite3_bind_int64(ins.get(), 3, block.depth);
    sqlite3_bind_int64(ins.get(), 4, int64_t(n_bytes));
    sqlite3_bind_int64(ins.get(), 5, slot);
    sqlite3_bind_int64(ins.get(), 6, as_sql(XXH3_64bits(block.bytes.data(), n_bytes)));
    sqlite3_bind_int64(ins.get(), 7, now_tick());
    if (sqlite3_step(ins.get()) != SQLITE_DONE) return index_error("recording a block");
    used_ += n_bytes;
    return {};
}

Status PrefixStore::write(std::span<const PrefixBlockWrite> blocks) {
    std::lock_guard lock(mutex_);
    return transaction([&]() -> Status {
        for (const PrefixBlockWrite & block : blocks) LR_RETURN_IF_ERROR(write_one(block));
        return {};
    });
}

void PrefixStore::evict_to(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    (void)transaction([&] { return evict_to_locked(bytes); });
}

void PrefixStore::set_capacity(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    capacity_ = bytes;
}

uint64_t PrefixStore::used_bytes() {
    // The engine thread asks with every stats update: it takes the index's total (other
    // processes may have written or evicted) unless a write holds the store, then the last one.
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) (void)load_used();
    return used_;
}

uint64_t PrefixStore::n_blocks() {
    std::lock_guard lock(mutex_);
    Stmt st = prepare(db_, "SELECT COUNT(*) FROM blocks");
    return sqlite3_step(st.get()) == SQLITE_ROW ? uint64_t(sqlite3_column_int64(st.get(), 0)) : 0;
}

PrefixStore::Summary PrefixStore::summary() {
    std::lock_guard lock(mutex_);
    Summary out;
    Stmt st = prepare(db_, "SELECT COUNT(*), COALESCE(MIN(last_used), 0) FROM blocks");
    if (sqlite3_step(st.get()) == SQLITE_ROW) {
        out.blocks = uint64_t(sqlite3_column_int64(st.get(), 0));
        out.oldest_use_us = sqlite3_column_int64(st.get(), 1);
    }
    st.reset();
    (void)load_used();
    out.bytes = used_;
    return out;
}

uint64_t PrefixStore::evict_unused_before(int64_t before_us, uint32_t max_blocks) {
    std::lock_guard lock(mutex_);
    uint64_t dropped = 0;
    (void)transaction([&]() -> Status {
        const uint64_t before = used_;
        Stmt old = prepare(db_, "SELECT chain, layer FROM blocks WHERE last_used < ? ORDER BY last_used LIMIT ?");
        sqlite3_bind_int64(old.get(), 1, before_us);
        sqlite3_bind_int64(old.get(), 2, max_blocks);
        std::vector<std::pair<uint64_t, uint32_t>> victims;
        int rc;
        while ((rc = sqlite3_step(old.get())) == SQLITE_ROW) {
            victims.emplace_back(uint64_t(sqlite3_column_int64(old.get(), 0)), uint32_t(sqlite3_column_int64(old.get(), 1)));
        }
        if (rc != SQLITE_DONE) return index_error("choosing old blocks");
        old.reset();
        for (const auto & [chain, layer] : victims) {
            LR_RETURN_IF_ERROR(drop(chain, layer));
            if (layer != kStatesLayer) LR_RETURN_IF_ERROR(drop(chain, kStatesLayer));
        }
        dropped = before - used_;
        return {};
    });
    return dropped;
}

Status PrefixStore::release_free_space() {
    std::lock_guard lock(mutex_);
    // Within a write transaction: no other process takes a free slot meanwhile.
    return transaction([&]() -> Status {
        Stmt st = prepare(db_, "SELECT size, slot FROM free_slots ORDER BY size, slot");
        std::vector<std::pair<uint64_t, uint64_t>> slots;
        int rc;
        while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
            slots.emplace_back(uint64_t(sqlite3_column_int64(st.get(), 0)), uint64_t(sqlite3_column_int64(st.get(), 1)));
        }
        if (rc != SQLITE_DONE) return index_error("listing free slots");
        st.reset();
        // Adjacent slots of one file as one range.
        for (size_t i = 0; i < slots.size();) {
            const auto [size, first] = slots[i];
            size_t j = i + 1;
            while (j < slots.size() && slots[j].first == size && slots[j].second == slots[j - 1].second + 1) ++j;
            LR_ASSIGN_OR_RETURN(const int fd, data_file(size_t(size)));
            LR_RETURN_IF_ERROR(io_->free_range(fd, first * size, (j - i) * size, "prefix cache in " + dir_));
            i = j;
        }
        return {};
    });
}

}  // namespace lr
