// A small deterministic mutation fuzzer for compilers without libFuzzer (g++): it feeds
// LLVMFuzzerTestOneInput with byte flips, interesting values, insertions, splices of
// another seed and truncations of the seed files, after LLVMFuzzerInitialize when the
// target has one.
// Usage: fuzz_<target>_driver ITERATIONS SEED_FILE...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int * argc, char *** argv);

namespace {

using Bytes = std::vector<uint8_t>;

const uint64_t kInteresting[] = {0, 1, 0x7f, 0xff, 0xffff, 0xffffffffu, 0x7fffffffffffffffull, ~0ull, 1ull << 32, 1ull << 62};

void mutate_once(Bytes & b, const std::vector<Bytes> & seeds, std::mt19937_64 & rng) {
    // Most of the structure lives in the first bytes (a header, the start of a template).
    const size_t hot = std::min<size_t>(b.size(), 1 << 16);
    const size_t at = hot == 0 ? 0 : rng() % hot;
    switch (rng() % 6) {
        case 0:
            if (at < b.size()) b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
            break;
        case 1:
            if (at < b.size()) b[at] = static_cast<uint8_t>(rng());
            break;
        case 2: {  // an interesting 64-bit value at a 4-aligned place
            const uint64_t v = kInteresting[rng() % std::size(kInteresting)];
            const size_t p = at & ~size_t(3);
            for (size_t k = 0; k < 8 && p + k < b.size(); ++k) b[p + k] = static_cast<uint8_t>(v >> (8 * k));
            break;
        }
        case 3: {  // a few random bytes inserted
            const size_t n = 1 + rng() % 8;
            for (size_t k = 0; k < n; ++k) b.insert(b.begin() + std::ptrdiff_t(std::min(at, b.size())), static_cast<uint8_t>(rng()));
            break;
        }
        case 4: {  // a slice of any seed (this one included) inserted: grows text formats sensibly
            const Bytes & other = seeds[rng() % seeds.size()];
            if (other.empty()) break;
            const size_t from = rng() % other.size();
            const size_t n = std::min<size_t>(other.size() - from, 1 + rng() % 64);
            b.insert(b.begin() + std::ptrdiff_t(std::min(at, b.size())), other.begin() + std::ptrdiff_t(from),
                     other.begin() + std::ptrdiff_t(from + n));
            break;
        }
        default: b.resize(at); break;
    }
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s ITERATIONS SEED_FILE...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    const long iterations = std::strtol(argv[1], nullptr, 10);
    std::vector<Bytes> seeds;
    for (int i = 2; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "cannot read seed %s\n", argv[i]);
            return 2;
        }
        seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // Every seed as it is first, then mutants.
    for (const Bytes & seed : seeds) LLVMFuzzerTestOneInput(seed.data(), seed.size());
    std::mt19937_64 rng(20251130);
    for (long it = 0; it < iterations; ++it) {
        Bytes b = seeds[rng() % seeds.size()];
        const int n_mut = 1 + int(rng() % 6);
        for (int m = 0; m < n_mut; ++m) mutate_once(b, seeds, rng);
        LLVMFuzzerTestOneInput(b.data(), b.size());
    }
    std::printf("fuzz: %zu seeds and %ld mutants, no crash\n", seeds.size(), iterations);
    return 0;
}
