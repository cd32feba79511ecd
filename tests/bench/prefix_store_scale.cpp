// How the prefix store's writes and lookups scale: persisting a long prompt's blocks as
// the cache writes them (one batch per ubatch), and an index growing to 100,000 blocks.
// Usage: prefix_store_scale DIR [TOKENS] [LAYERS] [BLOCK_BYTES]
// (defaults 32768 tokens, 22 layers, 32 KiB: TinyLlama-1.1B's f16 blocks of 32 tokens).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "kvcache/prefix_store.h"

using namespace lr;

namespace {

constexpr uint32_t kBlockTokens = 32;
constexpr uint32_t kUbatchBlocks = 512 / kBlockTokens;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Writes `n_depths` blocks of every layer, a batch per ubatch, chains base + depth.
bool write_blocks(PrefixStore & store, uint64_t base, uint32_t n_depths, uint32_t n_layer, const std::vector<uint8_t> & bytes) {
    std::vector<PrefixBlockWrite> batch;
    for (uint32_t d0 = 0; d0 < n_depths; d0 += kUbatchBlocks) {
        batch.clear();
        for (uint32_t d = d0; d < std::min(n_depths, d0 + kUbatchBlocks); ++d) {
            for (uint32_t il = 0; il < n_layer; ++il) batch.push_back({.chain = base + d, .layer = il, .depth = d, .bytes = bytes});
        }
        const Status s = store.write(batch);
        if (!s.ok()) {
            std::fprintf(stderr, "write failed: %s\n", s.message().c_str());
            return false;
        }
    }
    return true;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: prefix_store_scale DIR [TOKENS] [LAYERS] [BLOCK_BYTES]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const uint32_t n_tokens = argc > 2 ? uint32_t(std::atoi(argv[2])) : 32768;
    const uint32_t n_layer = argc > 3 ? uint32_t(std::atoi(argv[3])) : 22;
    const size_t block_bytes = argc > 4 ? size_t(std::atoll(argv[4])) : 32768;
    std::filesystem::remove_all(dir);

    // A long prompt's blocks, persisted as the cache does.
    {
        auto store = PrefixStore::open(dir + "/prompt", uint64_t(64) << 30);
        if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().message().c_str()), 1;
        const std::vector<uint8_t> bytes(block_bytes, 0x5a);
        const auto t0 = std::chrono::steady_clock::now();
        if (!write_blocks(**store, 1, n_tokens / kBlockTokens, n_layer, bytes)) return 1;
        const double s = seconds_since(t0);
        const double mib = double(n_tokens / kBlockTokens) * n_layer * double(block_bytes) / (1 << 20);
        std::printf("persist %u tokens x %u layers (%.0f MiB in %u blocks): %.2f s, %.0f MiB/s\n", n_tokens, n_layer, mib,
                    n_tokens / kBlockTokens * n_layer, s, mib / s);
    }

    // An index of 100,000 blocks (1 KiB each): a ubatch's write and a lookup as it grows.
    auto store = PrefixStore::open(dir + "/index", uint64_t(64) << 30);
    if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().message().c_str()), 1;
    const std::vector<uint8_t> small(1024, 0x33);
    std::vector<uint8_t> back(1024);
    constexpr uint32_t kStepDepths = 25'000 / 22;  // ~25,000 blocks of 22 layers per step
    uint64_t base = 1'000'000;
    std::printf("%10s %18s %18s\n", "blocks", "ubatch write ms", "lookup+read us");
    for (int step = 0; step <= 4; ++step) {
        // Time ubatches of 16 blocks x 22 layers and lookups of random stored blocks.
        const uint64_t timed_base = base + 10'000'000;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 8; ++i) {
            if (!write_blocks(**store, timed_base + uint64_t(i) * kUbatchBlocks, kUbatchBlocks, 22, small)) return 1;
        }
        const double write_ms = seconds_since(t0) * 1000 / 8;
        const auto t1 = std::chrono::steady_clock::now();
        constexpr int kLookups = 2000;
        uint64_t rng = 12345;
        for (int i = 0; i < kLookups; ++i) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t chain = timed_base + (rng >> 33) % (8 * kUbatchBlocks);
            if (!(*store)->contains(chain, 22) || !(*store)->read(chain, uint32_t(rng % 22), back.data(), back.size()).ok()) {
                std::fprintf(stderr, "lookup failed\n");
                return 1;
            }
        }
        const double lookup_us = seconds_since(t1) * 1e6 / kLookups;
        std::printf("%10llu %18.2f %18.1f\n", (unsigned long long)(*store)->n_blocks(), write_ms, lookup_us);
        if (step < 4 && !write_blocks(**store, base, kStepDepths, 22, small)) return 1;
        base += kStepDepths;
    }
    std::filesystem::remove_all(dir);
    return 0;
}
