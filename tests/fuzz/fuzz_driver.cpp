// A small deterministic mutation fuzzer for compilers without libFuzzer (g++): it feeds
// LLVMFuzzerTestOneInput with byte flips, splices and truncations of the seed files.
// Usage: fuzz_gguf_driver ITERATIONS SEED_FILE...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s ITERATIONS SEED_FILE...\n", argv[0]);
        return 2;
    }
    const long iterations = std::strtol(argv[1], nullptr, 10);
    std::vector<std::vector<uint8_t>> seeds;
    for (int i = 2; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "cannot read seed %s\n", argv[i]);
            return 2;
        }
        seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::mt19937_64 rng(20251130);
    const uint64_t interesting[] = {0, 1, 0x7f, 0xff, 0xffff, 0xffffffffu, 0x7fffffffffffffffull, ~0ull, 1ull << 32, 1ull << 62};
    for (long it = 0; it < iterations; ++it) {
        std::vector<uint8_t> b = seeds[rng() % seeds.size()];
        // Most of the structure lives in the first bytes (header, metadata, tensor infos).
        const size_t hot = std::min<size_t>(b.size(), 1 << 16);
        const int n_mut = 1 + int(rng() % 6);
        for (int m = 0; m < n_mut && !b.empty(); ++m) {
            const size_t at = rng() % hot;
            switch (rng() % 4) {
                case 0: b[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
                case 1: b[at] = static_cast<uint8_t>(rng()); break;
                case 2: {  // an interesting 64-bit value at a 4-aligned place
                    const uint64_t v = interesting[rng() % std::size(interesting)];
                    const size_t p = at & ~size_t(3);
                    for (size_t k = 0; k < 8 && p + k < b.size(); ++k) b[p + k] = static_cast<uint8_t>(v >> (8 * k));
                    break;
                }
                default: b.resize(at); break;
            }
        }
        LLVMFuzzerTestOneInput(b.data(), b.size());
    }
    std::printf("fuzz: %ld inputs, no crash\n", iterations);
    return 0;
}
