// The fused and the flash attention (scalar, AVX2 and AVX-512 kernels) against the reference attention, over
// paged views with mixed per-block codecs, empty and evicted slots, per-head positions,
// per-head page masks (quest), sliding windows, sinks, GQA, decode and prefill, with and
// without the attention mass; sinks against the naive formula; and its kernels one by one:
// row decoding and q.k are bit-identical to the scalar kernels, exp within a few ulp.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/kv_codec_rows.h"
#include "engine/common/fp16.h"
#include "random_rows.h"

using namespace lr;
using namespace lr::cpu;

namespace {

struct Case {
    uint32_t block_tokens, n_head_kv, head_dim, n_blocks;
    int32_t group;
    int64_t n_tokens;
    QString codecs;            // one letter per block, cycled: h f16, f f32, 8 q8, 4 q4
    bool holes;                // empty and evicted slots, positions differing per head
    uint32_t page_tokens = 0;  // > 0: each head reads random pages of this many slots (quest)
    int32_t window = 0;        // > 0: sliding window of this many positions
    bool sinks = false;        // a sink logit per query head
};

KvCodec codec_of(QChar c) {
    switch (c.toLatin1()) {
        case 'f': return KvCodec::f32;
        case '8': return KvCodec::q8;
        case '4': return KvCodec::q4;
        default: return KvCodec::f16;
    }
}

struct World {
    KvBlockShape shape;
    std::vector<std::vector<uint8_t>> storage;
    std::vector<KvBlockRef> blocks;
    std::vector<float> q;      // [n_tokens][n_head][d]
    std::vector<int32_t> pos;  // [n_tokens]
    float max_abs_v = 0;
    AttentionParams params;
    std::vector<uint32_t> read_pages;  // [n_blocks][n_head_kv], empty: every slot read
    uint32_t page_tokens = 0;
    std::vector<float> sinks;  // [n_head], empty: none

    AttentionParams attention_params() const {
        AttentionParams p = params;
        p.sinks = sinks.empty() ? nullptr : sinks.data();
        return p;
    }

    PagedKvView view(float * mass) const {
        PagedKvView v;
        v.shape = shape;
        v.blocks = blocks;
        v.attn_mass = mass;
        v.read_pages = read_pages;
        v.page_tokens = page_tokens;
        return v;
    }
};

// Blocks holding positions 0..n_slots-1 (minus holes); the queries are the last n_tokens
// positions, as after kv_write of a ubatch.
World make_world(const Case & c, uint64_t seed) {
    World w;
    test::Rng rng(seed);
    w.shape = {c.block_tokens, c.n_head_kv, c.head_dim};
    const uint32_t d = c.head_dim;
    const int32_t n_pos = int32_t(c.block_tokens * c.n_blocks);
    std::vector<float> row(d);
    for (uint32_t b = 0; b < c.n_blocks; ++b) {
        const KvCodec kc = codec_of(c.codecs[int(b % uint32_t(c.codecs.size()))]);
        const KvCodec vc = codec_of(c.codecs[int((b + 1) % uint32_t(c.codecs.size()))]);
        const KvBlockLayout L{w.shape, kc, vc};
        w.storage.emplace_back(L.block_bytes(), uint8_t(0xAB));  // garbage where nothing is written
        uint8_t * data = w.storage.back().data();
        auto * pos = reinterpret_cast<int32_t *>(data + L.pos_offset());
        for (uint32_t g = 0; g < c.n_head_kv; ++g) {
            for (uint32_t s = 0; s < c.block_tokens; ++s) {
                const int32_t p = int32_t(b * c.block_tokens + s);
                const bool empty = c.holes && (rng.next_u64() % 7 == 0) && p < n_pos - int32_t(c.n_tokens);
                pos[L.pos_index(g, s)] = empty ? kInvalidPos : p;
                if (empty) continue;
                for (float & v : row) v = rng.normal(1.0f);
                kv_encode_row(kc, row.data(), data + L.k_row_offset(g, s), d);
                for (float & v : row) {
                    v = rng.normal(1.0f);
                    w.max_abs_v = std::max(w.max_abs_v, std::fabs(v) * 1.1f);
                }
                kv_encode_row(vc, row.data(), data + L.v_row_offset(g, s), d);
            }
        }
        w.blocks.push_back({data, kc, vc});
    }
    const int32_t n_head = int32_t(c.n_head_kv) * c.group;
    w.q.resize(size_t(c.n_tokens) * size_t(n_head) * d);
    for (float & v : w.q) v = rng.normal(1.0f);
    for (int64_t t = 0; t < c.n_tokens; ++t) w.pos.push_back(n_pos - int32_t(c.n_tokens) + int32_t(t));
    // Sinks about as large as the scores, one far above them (that head's keys get little).
    for (int32_t h = 0; c.sinks && h < n_head; ++h) w.sinks.push_back(h == 1 ? 12.0f : rng.normal(2.0f));
    if (c.page_tokens > 0) {
        // Random pages per head; the last block (the queries' own) is read whole.
        w.page_tokens = c.page_tokens;
        for (uint32_t b = 0; b < c.n_blocks; ++b) {
            for (uint32_t g = 0; g < c.n_head_kv; ++g) w.read_pages.push_back(b + 1 == c.n_blocks ? ~0u : uint32_t(rng.next_u64()));
        }
    }
    w.params = {.n_head = n_head,
                .n_head_kv = int32_t(c.n_head_kv),
                .head_dim = int32_t(d),
                .scale = 1.0f / std::sqrt(float(d)),
                .window = c.window};
    return w;
}

struct Outputs {
    std::vector<float> out, mass;
};

enum class Path { reference, fused_scalar, fused_avx2, fused_avx512, flash_scalar, flash_avx2, flash_avx512 };

CpuIsa isa_of(Path p) {
    switch (p) {
        case Path::fused_avx2:
        case Path::flash_avx2: return CpuIsa::avx2;
        case Path::fused_avx512:
        case Path::flash_avx512: return CpuIsa::avx512;
        default: return CpuIsa::scalar;
    }
}
// Whether this CPU runs the path's kernels.
bool runs(Path p) { return isa_of(p) <= detect_cpu_isa(); }
bool is_flash(Path p) { return p == Path::flash_scalar || p == Path::flash_avx2 || p == Path::flash_avx512; }
QString path_name(Path p) {
    if (p == Path::reference) return "reference";
    return QString("%1 %2").arg(is_flash(p) ? "flash" : "fused").arg(QString::fromLatin1(cpu_isa_name(isa_of(p))));
}
constexpr Path kEveryPath[] = {Path::reference,    Path::fused_scalar, Path::fused_avx2,  Path::fused_avx512,
                               Path::flash_scalar, Path::flash_avx2,   Path::flash_avx512};

Outputs run(const World & w, const Case & c, Path path, int n_threads, bool mass) {
    ThreadPool pool(n_threads);
    Outputs r;
    r.out.assign(w.q.size(), NAN);
    r.mass.assign(size_t(c.n_blocks) * c.n_head_kv * c.block_tokens, 0.5f);  // adds to what is there
    const PagedKvView view = w.view(mass ? r.mass.data() : nullptr);
    const AttentionArgs args{
        .q = w.q.data(), .n_tokens = c.n_tokens, .pos = w.pos.data(), .view = &view, .params = w.attention_params(), .out = r.out.data()};
    AttentionScratch scratch;
    if (path == Path::reference) {
        attention_reference(pool, args);
    } else if (is_flash(path)) {
        attention_flash(pool, attention_kernels(isa_of(path)), args, scratch);
    } else {
        attention_fused(pool, attention_kernels(isa_of(path)), args, scratch);
    }
    return r;
}

bool all_f16(const Case & c) { return c.codecs.count('h') == c.codecs.size(); }

// A row of d values as the q8 codec rounds it.
std::vector<float> q8_rounded(const float * x, uint32_t d) {
    std::vector<uint8_t> row(kv_codec_row_bytes(KvCodec::q8, d));
    std::vector<float> y(d);
    kv_encode_row(KvCodec::q8, x, row.data(), d);
    kv_decode_row(KvCodec::q8, row.data(), y.data(), d);
    return y;
}

// The formula, in double, over the decoded rows: each query's softmax of scale * q.k over
// the keys it sees and its head's sink, the weights times V; the mass adds the weights.
// q8_queries: q8 K rows meet the query as the q8 codec rounds it (the flash driver's q.k).
Outputs naive(const World & w, const Case & c, bool q8_queries = false) {
    const uint32_t d = c.head_dim, bt = c.block_tokens;
    const PagedKvView view = w.view(nullptr);
    Outputs r;
    r.out.assign(w.q.size(), 0.0f);
    r.mass.assign(size_t(c.n_blocks) * c.n_head_kv * bt, 0.5f);
    std::vector<float> k(d), v(d);
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int32_t h = 0; h < w.params.n_head; ++h) {
            const uint32_t g = uint32_t(h / c.group);
            const float * q = w.q.data() + (size_t(t) * size_t(w.params.n_head) + size_t(h)) * d;
            const std::vector<float> q_rounded = q8_rounded(q, d);
            std::vector<double> logits;
            std::vector<size_t> seen;
            for (uint32_t b = 0; b < c.n_blocks; ++b) {
                const KvBlockLayout L = view.layout(b);
                const uint8_t * data = w.blocks[b].data;
                for (uint32_t s = 0; s < bt; ++s) {
                    const int32_t p = reinterpret_cast<const int32_t *>(data + L.pos_offset())[L.pos_index(g, s)];
                    if (p == kInvalidPos || !view.reads(b, g, s) || p > w.pos[t] || (c.window > 0 && w.pos[t] - p >= c.window)) continue;
                    kv_decode_row(L.k_codec, data + L.k_row_offset(g, s), k.data(), d);
                    const float * qk = q8_queries && L.k_codec == KvCodec::q8 ? q_rounded.data() : q;
                    double dot = 0;
                    for (uint32_t i = 0; i < d; ++i) dot += double(qk[i]) * double(k[i]);
                    logits.push_back(dot * double(w.params.scale));
                    seen.push_back((size_t(b) * c.n_head_kv + g) * bt + s);
                }
            }
            const double sink = w.sinks.empty() ? -INFINITY : double(w.sinks[size_t(h)]);
            double m = sink, den = 0;
            for (double l : logits) m = std::max(m, l);
            for (double l : logits) den += std::exp(l - m);
            if (sink != -INFINITY) den += std::exp(sink - m);
            float * out = r.out.data() + (size_t(t) * size_t(w.params.n_head) + size_t(h)) * d;
            for (size_t j = 0; j < logits.size(); ++j) {
                const double wt = std::exp(logits[j] - m) / den;
                const size_t b = seen[j] / (c.n_head_kv * bt), s = seen[j] % bt;
                const KvBlockLayout L = view.layout(uint32_t(b));
                kv_decode_row(L.v_codec, w.blocks[b].data + L.v_row_offset(g, uint32_t(s)), v.data(), d);
                for (uint32_t i = 0; i < d; ++i) out[i] = float(double(out[i]) + wt * double(v[i]));
                r.mass[seen[j]] = float(double(r.mass[seen[j]]) + wt);
            }
        }
    }
    return r;
}

// Marks empty every written slot (block b, head g, slot s, its position) for which
// drop(b, g, s, pos) holds; returns how many.
template <class Drop>
size_t empty_slots(World & w, const Case & c, Drop && drop) {
    size_t n = 0;
    for (uint32_t b = 0; b < c.n_blocks; ++b) {
        const KvBlockLayout L = w.view(nullptr).layout(b);
        auto * pos = reinterpret_cast<int32_t *>(w.storage[b].data() + L.pos_offset());
        for (uint32_t g = 0; g < c.n_head_kv; ++g) {
            for (uint32_t s = 0; s < c.block_tokens; ++s) {
                int32_t & p = pos[L.pos_index(g, s)];
                if (p != kInvalidPos && drop(b, g, s, p)) {
                    p = kInvalidPos;
                    ++n;
                }
            }
        }
    }
    return n;
}

}  // namespace

Q_DECLARE_METATYPE(Case)
Q_DECLARE_METATYPE(lr::CpuIsa)

class TestCpuAttention : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data() {
        QTest::addColumn<Case>("c");
        // block_tokens, n_head_kv, head_dim, n_blocks, group, n_tokens, codecs, holes
        QTest::newRow("decode-f16") << Case{32, 4, 64, 20, 8, 1, "h", false};
        QTest::newRow("decode-one-kv-head-chunked") << Case{32, 1, 64, 24, 8, 1, "h", true};
        QTest::newRow("decode-mixed-codecs") << Case{16, 2, 64, 13, 4, 1, "h84f", true};
        QTest::newRow("decode-d128") << Case{32, 2, 128, 9, 2, 1, "h", false};
        QTest::newRow("decode-d80-tail") << Case{8, 2, 80, 7, 3, 1, "h", true};
        QTest::newRow("decode-d8") << Case{32, 4, 8, 5, 2, 1, "h", false};
        QTest::newRow("two-tokens") << Case{32, 4, 64, 6, 8, 2, "h", false};
        QTest::newRow("prefill-f16") << Case{32, 4, 64, 8, 8, 37, "h", false};
        QTest::newRow("prefill-odd-blocks") << Case{5, 3, 48, 23, 2, 41, "h", true};
        QTest::newRow("prefill-mixed") << Case{16, 2, 64, 12, 4, 29, "hf84", true};
        QTest::newRow("prefill-d8") << Case{7, 4, 8, 9, 2, 19, "h", false};
        QTest::newRow("prefill-f32") << Case{32, 2, 64, 4, 4, 64, "f", false};
        QTest::newRow("decode-pages") << Case{32, 4, 64, 20, 8, 1, "h", false, 8};
        QTest::newRow("decode-pages-mixed-chunked") << Case{16, 1, 64, 24, 4, 1, "h84f", true, 4};
        QTest::newRow("decode-pages-one-per-block") << Case{16, 2, 64, 13, 2, 1, "h8", true, 16};
        // Sliding windows: whole blocks out of the window are skipped, the block at its
        // edge is cut inside.
        QTest::newRow("decode-window") << Case{32, 4, 64, 20, 8, 1, "h", false, 0, 40};
        QTest::newRow("decode-window-chunked") << Case{32, 1, 64, 24, 8, 1, "h", true, 0, 100};
        QTest::newRow("decode-window-in-one-block") << Case{16, 2, 64, 13, 4, 1, "h84f", true, 0, 5};
        QTest::newRow("prefill-window") << Case{32, 4, 64, 8, 8, 37, "h", false, 0, 32};
        QTest::newRow("prefill-window-odd") << Case{5, 3, 48, 23, 2, 41, "h", true, 0, 8};
        QTest::newRow("prefill-window-mixed") << Case{16, 2, 64, 12, 4, 29, "hf84", true, 0, 50};
        QTest::newRow("prefill-window-wider-than-view") << Case{32, 2, 64, 4, 4, 64, "f", false, 0, 4096};
        QTest::newRow("decode-window-pages") << Case{16, 1, 64, 24, 4, 1, "h84f", true, 4, 64};
        // Sinks on every path: decode (one chunk, several), prefill, pages, windows.
        QTest::newRow("decode-sinks") << Case{32, 4, 64, 20, 8, 1, "h", false, 0, 0, true};
        QTest::newRow("decode-sinks-chunked") << Case{32, 1, 64, 24, 8, 1, "h84f", true, 0, 0, true};
        QTest::newRow("prefill-sinks") << Case{5, 3, 48, 23, 2, 41, "h", true, 0, 0, true};
        QTest::newRow("prefill-sinks-mixed") << Case{16, 2, 64, 12, 4, 29, "hf84", true, 0, 0, true};
        QTest::newRow("decode-sinks-pages") << Case{16, 1, 64, 24, 4, 1, "h84f", true, 4, 0, true};
        QTest::newRow("decode-sinks-window-pages") << Case{16, 1, 64, 24, 4, 1, "h84f", true, 4, 64, true};
        QTest::newRow("prefill-sinks-window") << Case{5, 3, 48, 23, 2, 41, "h", true, 0, 8, true};
    }

    // With f32 rows nothing is rounded: the reference and the fused attention give the
    // formula's outputs and mass, sinks included, to float's round-off.
    void sinksMatchFormula_data() {
        QTest::addColumn<Case>("c");
        QTest::newRow("decode-chunked") << Case{16, 1, 64, 24, 4, 1, "f", true, 0, 0, true};
        QTest::newRow("decode-window-pages") << Case{16, 2, 64, 13, 4, 1, "f", true, 4, 40, true};
        QTest::newRow("prefill-window") << Case{5, 3, 48, 23, 2, 41, "f", true, 0, 8, true};
    }
    void sinksMatchFormula() {
        QFETCH(Case, c);
        const World w = make_world(c, 21);
        const Outputs want = naive(w, c);
        for (Path path : kEveryPath) {
            if (!runs(path)) continue;
            const Outputs got = run(w, c, path, 2, true);
            double worst = 0, worst_mass = 0;
            for (size_t i = 0; i < want.out.size(); ++i) worst = std::max(worst, std::fabs(double(got.out[i]) - want.out[i]));
            for (size_t i = 0; i < want.mass.size(); ++i) worst_mass = std::max(worst_mass, std::fabs(double(got.mass[i]) - want.mass[i]));
            QVERIFY2(worst <= 1e-5 * double(w.max_abs_v), qPrintable(QString("%1: max |d| %2").arg(path_name(path)).arg(worst)));
            QVERIFY2(worst_mass <= 1e-6 * double(c.n_tokens * c.group),
                     qPrintable(QString("%1: mass %2").arg(path_name(path)).arg(worst_mass)));
        }
    }

    // A sink of -inf, or far below every score, adds nothing: the bits of no sinks.
    void tinySinkIsNoSink() {
        const Case c{16, 2, 64, 13, 4, 5, "h84f", true, 4, 0, true};
        World w = make_world(c, 13);
        for (float tiny : {-INFINITY, -1e30f}) {
            std::fill(w.sinks.begin(), w.sinks.end(), tiny);
            for (Path path : {Path::reference, Path::fused_scalar, Path::flash_scalar}) {
                const Outputs with = run(w, c, path, 2, true);
                World plain = w;
                plain.sinks.clear();
                const Outputs without = run(plain, c, path, 2, true);
                QVERIFY(with.out == without.out);
                QVERIFY(with.mass == without.mass);
            }
        }
    }

    // A key outside a query's window is, for that query, an empty slot: the reference with
    // the window gives the same bits as without it over a copy whose old slots are empty.
    void windowedSlotsAreEmptySlots() {
        const Case c{16, 2, 64, 13, 4, 1, "h84f", true, 0, 37};
        World w = make_world(c, 11);
        const Outputs windowed = run(w, c, Path::reference, 2, true);
        const size_t emptied = empty_slots(w, c, [&](uint32_t, uint32_t, uint32_t, int32_t p) { return w.pos[0] - p >= c.window; });
        QVERIFY(emptied > 100);
        w.params.window = 0;
        const Outputs plain = run(w, c, Path::reference, 2, true);
        QVERIFY(windowed.out == plain.out);
        QVERIFY(windowed.mass == plain.mass);
    }

    // A slot a head does not read is, for that head, an empty slot: the reference over the
    // page masks gives the same bits as over a copy whose unread slots are empty.
    void unreadPagesAreEmptySlots() {
        const Case c{16, 2, 64, 13, 4, 1, "h84f", true, 4};
        World w = make_world(c, 9);
        const Outputs masked = run(w, c, Path::reference, 2, true);
        const size_t unread = empty_slots(w, c,
                                          [&](uint32_t b, uint32_t g, uint32_t s, int32_t) { return !w.view(nullptr).reads(b, g, s); });
        QVERIFY(unread > 100);
        w.read_pages.clear();
        const Outputs emptied = run(w, c, Path::reference, 2, true);
        QVERIFY(masked.out == emptied.out);
        QVERIFY(masked.mass == emptied.mass);
    }
    void matchesReference() {
        QFETCH(Case, c);
        const World w = make_world(c, 42);
        // An all-f16 cache rounds the weights to f16: an exp that differs in the last bit can
        // move a weight by one f16 step (2^-11 relative). Other codecs keep float weights.
        const double tol = (all_f16(c) ? 2e-3 : 2e-5) * double(w.max_abs_v);
        // The flash driver scores q8 K rows against the queries rounded to q8: where the view
        // holds such rows, it is held to the formula with those queries.
        const bool q8_keys = c.codecs.contains('8');
        for (bool mass : {false, true}) {
            const Outputs reference = run(w, c, Path::reference, 2, mass);
            Outputs q8_formula = q8_keys ? naive(w, c, true) : Outputs{};
            if (!mass) q8_formula.mass = reference.mass;  // untouched
            for (Path path : kEveryPath) {
                if (path == Path::reference || !runs(path)) continue;
                const Outputs & ref = q8_keys && is_flash(path) ? q8_formula : reference;
                for (int threads : {1, 2, 3}) {
                    const Outputs got = run(w, c, path, threads, mass);
                    const QString where = QString("%1, %2 threads, mass %3").arg(path_name(path)).arg(threads).arg(mass);
                    double worst = 0;
                    for (size_t i = 0; i < ref.out.size(); ++i) {
                        QVERIFY2(std::isfinite(got.out[i]), qPrintable(where));
                        worst = std::max(worst, std::fabs(double(got.out[i]) - ref.out[i]));
                    }
                    QVERIFY2(worst <= tol, qPrintable(where + QString(": max |d| %1 > %2").arg(worst).arg(tol)));
                    for (size_t i = 0; i < ref.mass.size(); ++i) {
                        QVERIFY2(std::fabs(double(got.mass[i]) - ref.mass[i]) <= 1e-5 * double(c.n_tokens * c.group),
                                 qPrintable(where +
                                            QString(": mass %1 vs %2 at %3").arg(double(got.mass[i])).arg(double(ref.mass[i])).arg(i)));
                    }
                }
                // Same input, any thread count: the same bits.
                const Outputs one = run(w, c, path, 1, mass), three = run(w, c, path, 3, mass);
                QVERIFY(one.out == three.out && one.mass == three.mass);
            }
        }
    }

    // On q8 K rows the flash driver scores the queries as the q8 codec rounds them: the
    // reference attention of those rounded queries, to float's round-off.
    void flashOnQ8KeysIsRoundedQueries_data() {
        QTest::addColumn<Case>("c");
        QTest::newRow("decode") << Case{32, 4, 64, 20, 8, 1, "8", false};
        QTest::newRow("decode-chunked-holes") << Case{32, 1, 64, 24, 8, 1, "8", true};
        QTest::newRow("decode-d80-group16") << Case{8, 2, 80, 7, 3, 1, "8", true};
        QTest::newRow("decode-d8") << Case{32, 4, 8, 5, 2, 1, "8", false};
        QTest::newRow("prefill-odd-blocks") << Case{5, 3, 48, 23, 2, 41, "8", true};
        QTest::newRow("prefill-d128") << Case{32, 2, 128, 9, 4, 19, "8", false};
        QTest::newRow("decode-pages-window-sinks") << Case{16, 1, 64, 24, 4, 1, "8", true, 4, 64, true};
        QTest::newRow("prefill-window-sinks") << Case{5, 3, 48, 23, 2, 41, "8", true, 0, 8, true};
    }
    void flashOnQ8KeysIsRoundedQueries() {
        QFETCH(Case, c);
        const World w = make_world(c, 42);
        World rounded = w;
        for (size_t at = 0; at < rounded.q.size(); at += c.head_dim) {
            const std::vector<float> row = q8_rounded(w.q.data() + at, c.head_dim);
            std::copy(row.begin(), row.end(), rounded.q.begin() + ptrdiff_t(at));
        }
        QVERIFY(rounded.q != w.q);
        const double tol = 2e-5 * double(w.max_abs_v);
        for (bool mass : {false, true}) {
            const Outputs ref = run(rounded, c, Path::reference, 2, mass);
            for (Path path : {Path::flash_scalar, Path::flash_avx2, Path::flash_avx512}) {
                if (!runs(path)) continue;
                for (int threads : {1, 3}) {
                    const Outputs got = run(w, c, path, threads, mass);
                    const QString where = QString("%1, %2 threads, mass %3").arg(path_name(path)).arg(threads).arg(mass);
                    for (size_t i = 0; i < ref.out.size(); ++i) {
                        QVERIFY2(std::fabs(double(got.out[i]) - ref.out[i]) <= tol,
                                 qPrintable(where + QString(": %1 vs %2 at %3").arg(got.out[i]).arg(ref.out[i]).arg(i)));
                    }
                    for (size_t i = 0; i < ref.mass.size(); ++i) {
                        QVERIFY2(std::fabs(double(got.mass[i]) - ref.mass[i]) <= 1e-5 * double(c.n_tokens * c.group), qPrintable(where));
                    }
                }
            }
        }
    }

    // Each query's weights sum to one: the mass added over all slots is n_tokens * n_head.
    void massSumsToQueries() {
        const Case c{16, 2, 64, 10, 4, 9, "h8", true};
        const World w = make_world(c, 3);
        for (Path path : {Path::reference, Path::fused_scalar, Path::flash_scalar}) {
            const Outputs r = run(w, c, path, 2, true);
            double total = 0;
            for (float m : r.mass) total += double(m) - 0.5;
            QVERIFY2(std::fabs(total - double(c.n_tokens * c.n_head_kv * uint32_t(c.group))) < 1e-3, qPrintable(QString::number(total)));
        }
    }

    // attention(): the exact driver for short views, the flash driver from kFlashMinSlots
    // slots on, with the mass or without.
    void attentionPicksFlashForLongViews() {
        for (uint32_t n_blocks : {uint32_t(kFlashMinSlots / 32 - 1), uint32_t(kFlashMinSlots / 32)}) {
            const Case c{32, 2, 64, n_blocks, 4, 3, "h", true};
            const World w = make_world(c, 17);
            const bool long_view = size_t(n_blocks) * 32 >= kFlashMinSlots;
            for (bool mass : {false, true}) {
                Outputs got;
                got.out.assign(w.q.size(), NAN);
                got.mass.assign(size_t(c.n_blocks) * c.n_head_kv * c.block_tokens, 0.5f);
                const PagedKvView view = w.view(mass ? got.mass.data() : nullptr);
                const AttentionArgs args{.q = w.q.data(),
                                         .n_tokens = c.n_tokens,
                                         .pos = w.pos.data(),
                                         .view = &view,
                                         .params = w.attention_params(),
                                         .out = got.out.data()};
                ThreadPool pool(2);
                AttentionScratch scratch;
                attention(pool, scalar_attention_kernels(), args, scratch);
                const Path want = long_view ? Path::flash_scalar : Path::fused_scalar;
                const Outputs expected = run(w, c, want, 2, mass);
                QVERIFY2(got.out == expected.out && got.mass == expected.mass,
                         qPrintable(QString("%1 blocks, mass %2").arg(n_blocks).arg(mass)));
                if (long_view) QVERIFY(got.out != run(w, c, Path::fused_scalar, 2, mass).out);
            }
        }
    }

    // The queries are quantized as the q8 codec quantizes a row: the same values and scales.
    void queriesQ8AreCodecRows() {
        test::Rng rng(8);
        for (uint32_t d : {8u, 16u, 24u, 64u, 80u, 128u}) {
            const uint32_t n_q = 11, g = kv_codec_group(d);
            std::vector<float> q(size_t(n_q) * d);
            for (float & e : q) e = rng.normal(3.0f);
            std::fill_n(q.begin() + d, d, 0.0f);  // a query of zeros: scale 0, values 0
            QueriesQ8 qq;
            qq.quantize(q.data(), n_q, d);
            QCOMPARE(qq.lanes, 16u);
            QCOMPARE(qq.group, g);
            std::vector<uint8_t> row(kv_codec_row_bytes(KvCodec::q8, d));
            for (uint32_t i = 0; i < qq.lanes; ++i) {
                if (i < n_q) kv_encode_row(KvCodec::q8, q.data() + size_t(i) * d, row.data(), d);
                for (uint32_t grp = 0; grp < d / g; ++grp) {
                    const uint8_t * group = row.data() + grp * (2 + g);
                    uint16_t scale;
                    std::memcpy(&scale, group, 2);
                    int32_t sum = 0;
                    for (uint32_t c = 0; c < g; ++c) {
                        const int8_t want = i < n_q ? static_cast<int8_t>(group[2 + c]) : 0;  // padding lanes: zeros
                        QCOMPARE(qq.value(i, grp * g + c), want);
                        sum += want;
                    }
                    QCOMPARE(qq.scale(i, grp), i < n_q ? fp16_to_fp32(scale) : 0.0f);
                    QCOMPARE(qq.sums[grp * qq.lanes + i], sum);
                }
            }
        }
    }

    void kernelsMatchScalar_data() {
        QTest::addColumn<CpuIsa>("isa");
        QTest::newRow("avx2") << CpuIsa::avx2;
        QTest::newRow("avx512") << CpuIsa::avx512;
    }
    void kernelsMatchScalar() {
        QFETCH(CpuIsa, isa);
        if (detect_cpu_isa() < isa) QSKIP("this CPU lacks the ISA");
        const AttentionKernels & s = scalar_attention_kernels();
        const AttentionKernels & v = attention_kernels(isa);
        test::Rng rng(5);
        for (uint32_t d : {8u, 13u, 16u, 24u, 48u, 64u, 77u, 80u, 128u}) {
            for (KvCodec codec : {KvCodec::f32, KvCodec::f16, KvCodec::q8, KvCodec::q4}) {
                if (!kv_codec_supports(codec, d)) continue;
                const uint32_t n = 11;
                const size_t rb = kv_codec_row_bytes(codec, d);
                std::vector<uint8_t> rows(rb * n);
                std::vector<float> x(d);
                for (uint32_t r = 0; r < n; ++r) {
                    for (float & e : x) e = rng.normal(2.0f);
                    kv_encode_row(codec, x.data(), rows.data() + r * rb, d);
                }
                std::vector<float> a(size_t(n) * d), b(a.size());
                s.decode_rows(codec, rows.data(), rb, n, d, a.data());
                v.decode_rows(codec, rows.data(), rb, n, d, b.data());
                QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0, qPrintable(QString("decode d %1").arg(d)));
            }
            const uint32_t n_k = 13, n_q = 5;
            std::vector<float> k(size_t(n_k) * d), q(size_t(n_q) * d);
            for (float & e : k) e = rng.normal(1.0f);
            for (float & e : q) e = rng.normal(1.0f);
            for (bool gemm : {false, true}) {
                for (bool f64 : {false, true}) {
                    if (gemm && d % 16 != 0) continue;
                    std::vector<float> sa(size_t(n_q) * 16), sb(sa.size());
                    s.scores(k.data(), KvCodec::f32, d * sizeof(float), n_k, q.data(), n_q, d, gemm, f64, 0.125f, sa.data(), 16);
                    v.scores(k.data(), KvCodec::f32, d * sizeof(float), n_k, q.data(), n_q, d, gemm, f64, 0.125f, sb.data(), 16);
                    // The same rows as f16, scored in place.
                    std::vector<uint16_t> kh(k.size());
                    for (size_t e = 0; e < k.size(); ++e) kh[e] = fp32_to_fp16(k[e]);
                    std::vector<float> ha(sa.size()), hb(sa.size());
                    s.scores(kh.data(), KvCodec::f16, d * 2, n_k, q.data(), n_q, d, gemm, f64, 0.125f, ha.data(), 16);
                    v.scores(kh.data(), KvCodec::f16, d * 2, n_k, q.data(), n_q, d, gemm, f64, 0.125f, hb.data(), 16);
                    for (uint32_t i = 0; i < n_q; ++i) {
                        QVERIFY2(std::memcmp(&ha[i * 16], &hb[i * 16], n_k * sizeof(float)) == 0,
                                 qPrintable(QString("f16 scores d %1 gemm %2").arg(d).arg(gemm)));
                    }
                    for (uint32_t i = 0; i < n_q; ++i) {
                        QVERIFY2(std::memcmp(&sa[i * 16], &sb[i * 16], n_k * sizeof(float)) == 0,
                                 qPrintable(QString("scores d %1 gemm %2").arg(d).arg(gemm)));
                    }
                }
            }
            std::vector<float> wts(size_t(n_q) * n_k), acc_a(size_t(n_q) * d, 0.25f), acc_b = acc_a;
            for (size_t i = 0; i < wts.size(); ++i) wts[i] = i % 5 == 0 ? 0.0f : float(rng.uniform());
            s.weighted_sum(k.data(), KvCodec::f32, d * sizeof(float), n_k, wts.data(), n_k, n_q, d, acc_a.data());
            v.weighted_sum(k.data(), KvCodec::f32, d * sizeof(float), n_k, wts.data(), n_k, n_q, d, acc_b.data());
            QVERIFY2(acc_a == acc_b, qPrintable(QString("weighted_sum d %1").arg(d)));
            // f16 rows read in place: the same bits as the f32 rows they widen to, either ISA.
            std::vector<uint16_t> vh(k.size());
            std::vector<float> kw(k.size());
            for (size_t e = 0; e < k.size(); ++e) {
                vh[e] = fp32_to_fp16(k[e]);
                kw[e] = fp16_to_fp32(vh[e]);
            }
            std::vector<float> acc_f32 = std::vector<float>(acc_a.size(), 0.25f), acc_sh = acc_f32, acc_vh = acc_f32;
            s.weighted_sum(kw.data(), KvCodec::f32, d * sizeof(float), n_k, wts.data(), n_k, n_q, d, acc_f32.data());
            s.weighted_sum(vh.data(), KvCodec::f16, d * 2, n_k, wts.data(), n_k, n_q, d, acc_sh.data());
            v.weighted_sum(vh.data(), KvCodec::f16, d * 2, n_k, wts.data(), n_k, n_q, d, acc_vh.data());
            QVERIFY2(acc_sh == acc_f32 && acc_vh == acc_f32, qPrintable(QString("f16 weighted_sum d %1").arg(d)));
            // So are q8 rows.
            if (kv_codec_supports(KvCodec::q8, d)) {
                const size_t rb = kv_codec_row_bytes(KvCodec::q8, d);
                std::vector<uint8_t> v8(rb * n_k);
                for (uint32_t j = 0; j < n_k; ++j) {
                    kv_encode_row(KvCodec::q8, k.data() + size_t(j) * d, v8.data() + j * rb, d);
                    kv_decode_row(KvCodec::q8, v8.data() + j * rb, kw.data() + size_t(j) * d, d);
                }
                std::vector<float> acc8_f32(acc_a.size(), 0.25f), acc8_s = acc8_f32, acc8_v = acc8_f32;
                s.weighted_sum(kw.data(), KvCodec::f32, d * sizeof(float), n_k, wts.data(), n_k, n_q, d, acc8_f32.data());
                s.weighted_sum(v8.data(), KvCodec::q8, rb, n_k, wts.data(), n_k, n_q, d, acc8_s.data());
                v.weighted_sum(v8.data(), KvCodec::q8, rb, n_k, wts.data(), n_k, n_q, d, acc8_v.data());
                QVERIFY2(acc8_s == acc8_f32 && acc8_v == acc8_f32, qPrintable(QString("q8 weighted_sum d %1").arg(d)));
            }
            QCOMPARE(v.max(k.data(), n_k * d), s.max(k.data(), n_k * d));
        }
        // flash_scores: every head size (tails of 1..7 lanes), key and query count, the same bits.
        for (uint32_t d : {1u, 5u, 8u, 13u, 64u, 72u, 77u, 128u, 256u}) {
            for (uint32_t n_k : {1u, 3u, 4u, 7u, 32u}) {
                for (uint32_t n_q : {1u, 2u, 3u, 8u, 9u, 17u}) {
                    std::vector<float> k(size_t(n_k) * d), q(size_t(n_q) * d);
                    for (float & e : k) e = rng.normal(1.0f);
                    for (float & e : q) e = rng.normal(1.0f);
                    std::vector<float> sa(size_t(n_q) * 40, 7.0f), sb = sa;
                    s.flash_scores(k.data(), KvCodec::f32, d * sizeof(float), n_k, q.data(), n_q, d, 0.125f, sa.data(), 40);
                    v.flash_scores(k.data(), KvCodec::f32, d * sizeof(float), n_k, q.data(), n_q, d, 0.125f, sb.data(), 40);
                    QVERIFY2(sa == sb, qPrintable(QString("flash_scores d %1 n_k %2 n_q %3").arg(d).arg(n_k).arg(n_q)));
                    // The same rows as f16, in place, against the f16 rows decoded to f32.
                    std::vector<uint16_t> kh(k.size());
                    std::vector<float> kd(k.size());
                    for (size_t e = 0; e < k.size(); ++e) kd[e] = fp16_to_fp32(kh[e] = fp32_to_fp16(k[e]));
                    std::vector<float> ha = sa, hb = sa, hd = sa;
                    s.flash_scores(kh.data(), KvCodec::f16, d * 2, n_k, q.data(), n_q, d, 0.125f, ha.data(), 40);
                    v.flash_scores(kh.data(), KvCodec::f16, d * 2, n_k, q.data(), n_q, d, 0.125f, hb.data(), 40);
                    v.flash_scores(kd.data(), KvCodec::f32, d * sizeof(float), n_k, q.data(), n_q, d, 0.125f, hd.data(), 40);
                    QVERIFY2(ha == hb && hb == hd, qPrintable(QString("f16 flash_scores d %1 n_k %2 n_q %3").arg(d).arg(n_k).arg(n_q)));
                    double worst = 0;  // and they are the products (columns past n_k untouched)
                    for (uint32_t i = 0; i < n_q; ++i) {
                        for (uint32_t j = 0; j < n_k; ++j) {
                            double dot = 0;
                            for (uint32_t c = 0; c < d; ++c) dot += double(q[i * d + c]) * k[j * d + c];
                            worst = std::max(worst, std::fabs(sa[i * 40 + j] - 0.125 * dot));
                        }
                        QCOMPARE(sa[i * 40 + n_k], 7.0f);
                    }
                    QVERIFY2(worst <= 1e-5 * std::sqrt(double(d)), qPrintable(QString::number(worst)));
                }
            }
        }
        // flash_scores_q8: every group size (8, 16, 32), key and query count (lane tails), the
        // same bits; and the scores of the rows and queries as the codec decodes them.
        for (uint32_t d : {8u, 16u, 24u, 48u, 64u, 80u, 128u, 256u}) {
            const size_t rb = kv_codec_row_bytes(KvCodec::q8, d);
            for (uint32_t n_k : {1u, 3u, 4u, 7u, 8u, 9u, 32u}) {
                for (uint32_t n_q : {1u, 2u, 3u, 8u, 9u, 17u}) {
                    std::vector<float> x(d), q(size_t(n_q) * d);
                    std::vector<uint8_t> k(rb * n_k);
                    for (uint32_t j = 0; j < n_k; ++j) {
                        for (float & e : x) e = rng.normal(1.0f);
                        if (j == 2) x[d / 2] = 40.0f;  // one group's scale far above the others
                        kv_encode_row(KvCodec::q8, x.data(), k.data() + j * rb, d);
                    }
                    // A -128, which the codec never writes, against a negative query value:
                    // every kernel still takes it as -128.
                    k[std::min(1u, n_k - 1) * rb + 2] = 0x80;
                    for (float & e : q) e = rng.normal(1.0f);
                    q[0] = -9.0f;
                    QueriesQ8 qq;
                    qq.quantize(q.data(), n_q, d);
                    std::vector<float> sa(size_t(n_q) * 40, 7.0f), sb = sa;
                    s.flash_scores_q8(k.data(), rb, n_k, qq, 0.125f, sa.data(), 40);
                    v.flash_scores_q8(k.data(), rb, n_k, qq, 0.125f, sb.data(), 40);
                    QVERIFY2(sa == sb, qPrintable(QString("flash_scores_q8 d %1 n_k %2 n_q %3").arg(d).arg(n_k).arg(n_q)));
                    std::vector<float> kj(d);
                    for (uint32_t i = 0; i < n_q; ++i) {
                        const std::vector<float> qi = q8_rounded(q.data() + size_t(i) * d, d);
                        for (uint32_t j = 0; j < n_k; ++j) {
                            kv_decode_row(KvCodec::q8, k.data() + j * rb, kj.data(), d);
                            double dot = 0, mag = 0;
                            for (uint32_t c = 0; c < d; ++c) {
                                dot += double(qi[c]) * kj[c];
                                mag += std::fabs(double(qi[c]) * kj[c]);
                            }
                            QVERIFY2(std::fabs(sa[i * 40 + j] - 0.125 * dot) <= 1e-6 * 0.125 * mag,
                                     qPrintable(QString("q8 score %1 vs %2").arg(sa[i * 40 + j]).arg(0.125 * dot)));
                        }
                        QCOMPARE(sa[i * 40 + n_k], 7.0f);
                    }
                }
            }
        }
        for (uint32_t n : {1u, 7u, 8u, 37u}) {
            std::vector<float> xa(n), xb;
            for (float & e : xa) e = float(-20.0 * rng.uniform());
            xa[0] = -INFINITY;
            if (n > 3) xa[3] = -100.0f;
            xb = xa;
            const double sa = s.exp_sum(xa.data(), n, 0.0f), sb = v.exp_sum(xb.data(), n, 0.0f);
            QCOMPARE(xb[0], 0.0f);
            for (uint32_t i = 0; i < n; ++i) QVERIFY2(std::fabs(xa[i] - xb[i]) <= 3e-7f * xa[i] + 1e-37f, qPrintable(QString::number(i)));
            QVERIFY(std::fabs(sa - sb) <= 1e-6 * sa);
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuAttention)
#include "test_cpu_attention.moc"
