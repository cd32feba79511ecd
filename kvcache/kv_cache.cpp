#include "kvcache/kv_cache.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "engine/backend/kv_codec_rows.h"
#include "kvcache/layer_budgets.h"

namespace lr {

namespace {
Status data_loss(const std::string & what) { return error(StatusCode::corrupt_data, "KV block lost: " + what); }

// The time an apply spends selecting what to evict, over the calls it makes.
class SelectionTimer {
public:
    void start() { t0_ = std::chrono::steady_clock::now(); }
    void stop() { ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count(); }
    double ms() const { return ms_; }

private:
    std::chrono::steady_clock::time_point t0_;
    double ms_ = 0;
};

// What a policy needs of the model: streaming renumbers positions (rotating keys), which a
// sliding window's positions must not see.
Status check_policy(KvPolicy policy, const KvModelShape & shape, const RopeShiftParams & rope) {
    if (policy != KvPolicy::streaming) return {};
    if (rope.n_rot == 0) return error(StatusCode::invalid_argument, "the streaming policy needs the model's rope parameters");
    if (shape.has(KvLayerKind::sliding_window) || shape.geometry_varies()) {
        return error(StatusCode::invalid_argument,
                     "the streaming policy renumbers positions, which this model's sliding-window layers cannot follow: "
                     "choose h2o, snapkv or quest");
    }
    return {};
}
}  // namespace

Status validate(const KvCacheConfig & config, const KvModelShape & shape) {
    LR_RETURN_IF_ERROR(validate(config.settings));
    if (config.max_tokens == 0) return error(StatusCode::invalid_argument, "the context size must be at least 1 token");
    if (shape.n_layer == 0 || shape.n_head_kv == 0 || shape.head_dim == 0) {
        return error(StatusCode::invalid_argument, "the model has an empty KV shape");
    }
    if (!shape.layers.empty() && shape.layers.size() != shape.n_layer) {
        return error(StatusCode::invalid_argument, "the model's layer kinds do not cover its layers");
    }
    for (uint32_t il = 0; il < shape.n_layer; ++il) {
        const std::string layer = "layer " + std::to_string(il);
        if (shape.kind(il) == KvLayerKind::sliding_window && shape.layers[il].window == 0) {
            return error(StatusCode::invalid_argument, layer + " is a sliding window of 0 positions");
        }
        if (shape.kind(il) == KvLayerKind::recurrent && shape.layers[il].state_bytes == 0) {
            return error(StatusCode::invalid_argument, layer + " is a recurrent layer with an empty state");
        }
        if (shape.kind(il) == KvLayerKind::shared) {
            const uint32_t src = shape.layers[il].source;
            if (src >= il || !shape.stores(src) || shape.n_head_kv_of(src) != shape.n_head_kv_of(il) ||
                shape.head_dim_of(src) != shape.head_dim_of(il)) {
                return error(StatusCode::invalid_argument, layer + " shares the KV of layer " + std::to_string(src) +
                                                               ", which must be an earlier layer of the same shape with KV of its own");
            }
        }
        if (shape.n_head_kv_of(il) == 0 || shape.head_dim_of(il) == 0)
            return error(StatusCode::invalid_argument, layer + " has an empty KV shape");
        // The policies rank the full-attention layers' blocks in one shape, the model's.
        if (shape.full(il) && (shape.n_head_kv_of(il) != shape.n_head_kv || shape.head_dim_of(il) != shape.head_dim)) {
            return error(StatusCode::invalid_argument, layer + " is a full-attention layer of another shape than the model's");
        }
    }
    const KvSettings & k = config.settings;
    for (uint32_t il = 0; il < shape.n_layer; ++il) {
        const uint32_t d = shape.head_dim_of(il);
        for (KvCodec c :
             {k.k_codec(), k.v_codec(), KvSettings::narrowed(k.k_codec(), k.host_bits), KvSettings::narrowed(k.v_codec(), k.host_bits),
              KvSettings::narrowed(k.k_codec(), k.disk_bits), KvSettings::narrowed(k.v_codec(), k.disk_bits)}) {
            if (!kv_codec_supports(c, d)) {
                return error(StatusCode::invalid_argument,
                             "KV codec " + std::string(kv_codec_name(c)) + " cannot hold heads of " + std::to_string(d) + " values");
            }
        }
    }
    return check_policy(config.settings.policy, shape, config.rope);
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend) {
    LR_RETURN_IF_ERROR(validate(config, shape));
    std::unique_ptr<KvCache> cache(new KvCache(config, shape, backend));
    cache->placement_.open();
    if (config.settings.adapt) {
        const KvSettings & k = config.settings;
        const KvAdaptPlan plan{.device_bytes = config.capacities.device_bytes,
                               .host_bytes = config.capacities.host_bytes,
                               .shared_memory = cache->placement_.device_host_addressable(),
                               .adapts_recent = k.policy == KvPolicy::h2o || k.policy == KvPolicy::random};
        cache->adapter_ = std::make_unique<KvAdapter>(plan, KvAdaptChoice{.device_bytes = plan.device_bytes,
                                                                          .host_bytes = plan.host_bytes,
                                                                          .prefetch_layers = k.prefetch_layers,
                                                                          .recent_ratio = k.recent_ratio});
    }
    cache->publish_stats();
    return cache;
}

KvCache::KvCache(const KvCacheConfig & config, const KvModelShape & shape, Backend & backend)
    : state_(config, shape, backend), placement_(state_), prefix_(state_, placement_), editor_(state_, placement_), states_(shape, backend),
      snapshots_(states_.bytes_per_sequence(), backend),
      snapshot_interval_(lr::snapshot_interval(shape.layers, shape.n_head_kv, shape.head_dim, state_.block_shape.block_tokens)),
      renumbers_by_default_(SelectionPolicy::create(config.settings, state_.block_shape, config.max_tokens)->renumbers()) {}

KvCache::~KvCache() = default;

KvSequence & KvCache::sequence(SeqId seq) {
    KvSequence & s = state_.seqs[seq];
    if (s.layers.empty()) {
        s.layers.resize(state_.shape.n_layer);
        s.policy = SelectionPolicy::create(state_.config.settings, state_.block_shape, state_.config.max_tokens);
        if (adapter_) s.policy->set_recent_ratio(adapter_->choice().recent_ratio);  // what the adaptive mode chose so far
    }
    return s;
}

Status KvCache::open_sequence(SeqId seq, const KvSettings & selection) {
    LR_RETURN_IF_ERROR(validate(selection));
    const KvSettings & mine = state_.config.settings;
    if (selection.block_tokens != mine.block_tokens || selection.quest_page_tokens() != mine.quest_page_tokens() ||
        selection.k_bits != mine.k_bits || selection.v_bits != mine.v_bits || selection.residual_tokens != mine.residual_tokens) {
        return error(StatusCode::invalid_argument, "a sequence shares the cache's blocks, pages and codecs; only its selection may differ");
    }
    LR_RETURN_IF_ERROR(check_policy(selection.policy, state_.shape, state_.config.rope));
    if (n_tokens(seq) > 0) return error(StatusCode::invalid_argument, "sequence " + std::to_string(seq) + " already holds tokens");
    KvSequence & s = sequence(seq);
    s.policy = SelectionPolicy::create(selection, state_.block_shape, state_.config.max_tokens);
    publish_stats();
    return {};
}

uint32_t KvCache::n_tokens(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    return it == state_.seqs.end() ? 0 : it->second.n_tokens();
}

int32_t KvCache::next_position(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    return it == state_.seqs.end() ? 0 : it->second.next_pos;
}

uint32_t KvCache::n_kept(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return 0;
    // A pure prefix holds every token it was given in every layer: no need to count (the
    // stats ask at every ubatch).
    if (it->second.pure_prefix) return it->second.n_tokens();
    uint64_t sum = 0, n_full = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (!state_.shape.full(il)) continue;
        sum += editor_.kept_in_layer(it->second, il);
        ++n_full;
    }
    return n_full ? uint32_t(sum / n_full) : it->second.n_tokens();
}

uint32_t KvCache::room(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end() ? renumbers_by_default_ : it->second.policy->renumbers()) return UINT32_MAX;
    return state_.config.max_tokens - std::min(state_.config.max_tokens, n_tokens(seq));
}

uint32_t KvCache::restore_prefix(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last) {
    sequence(seq);
    const uint32_t restored = states_.any() ? restore_with_states(seq, upcoming, keep_last) : prefix_.restore(seq, upcoming, keep_last);
    state_.counters.tokens_written += restored;
    editor_.slide(seq);
    publish_stats();
    return restored;
}

uint32_t KvCache::restore_with_states(SeqId seq, std::span<const int32_t> upcoming, uint32_t keep_last) {
    Result<void *> states = states_.sequence(seq);  // before any block is taken: nothing to undo
    if (!states.ok()) return 0;
    const uint32_t bt = state_.block_shape.block_tokens;
    PrefixStore * store = placement_.prefix();
    std::optional<SeqId> live;  // the sequence whose snapshot holds them, else `stored`
    std::vector<uint8_t> stored;
    auto states_at = [&](uint64_t chain, uint32_t depth) {
        const uint32_t n = (depth + 1) * bt;
        for (const auto & [id, other] : state_.seqs) {
            if (id != seq && other.chains.size() > depth && other.chains[depth] == chain && snapshots_.has(id, n)) {
                live = id;
                return true;
            }
        }
        if (!store) return false;
        stored.resize(size_t(states_.bytes_per_sequence()));
        return store->read(chain, PrefixStore::kStatesLayer, stored.data(), stored.size()).ok();  // a damaged one is dropped
    };
    const uint32_t restored = prefix_.restore(seq, upcoming, keep_last, states_at);
    if (restored == 0) return 0;
    const uint32_t n = state_.seqs.at(seq).n_tokens();
    if (live) {
        snapshots_.restore(*live, n, *states);
    } else {
        state_.backend.copy_to_device(*states, stored.data(), stored.size());
    }
    // The sequence can be cut back to where it was restored.
    if (Status st = snapshots_.take(seq, n, *states, snapshot_interval_); !st.ok()) state_.report_fault(st);
    ++state_.counters.restored_states;
    return restored;
}

// ---- The ubatch protocol ---------------------------------------------------------------------

Result<UbatchPlan> KvCache::plan(SeqId seq, const UbatchRequest & request) {
    LR_ASSERT(!request.tokens.empty() && request.max_tokens > 0);
    KvSequence & s = sequence(seq);
    uint32_t n = s.policy->ubatch_tokens(uint32_t(request.tokens.size()), request.max_tokens, request.prompt);
    UbatchPlan p;
    if (states_.any()) {
        // The states are copied between ubatches: a recurrent sequence's end at each snapshot.
        n = std::min(n, snapshot_interval_ - s.n_tokens() % snapshot_interval_);
        // Persisted states let a later process restore a prompt up to a block boundary:
        // a prompt's ubatch also ends at its last boundary before the last token (the
        // restore computes that token).
        const uint32_t bt = state_.block_shape.block_tokens;
        const bool persisting = request.ends_turn && s.pure_prefix && prefix_.persists();
        const uint32_t last_boundary = (s.n_tokens() + uint32_t(request.tokens.size()) - 1) / bt * bt;
        if (persisting && last_boundary > s.n_tokens()) n = std::min(n, last_boundary - s.n_tokens());
        const uint32_t end = s.n_tokens() + n;
        p.persist_states_ = s.pure_prefix && end % bt == 0 && (end % snapshot_interval_ == 0 || (persisting && end == last_boundary));
    }
    p.seq_ = seq;
    p.ends_turn_ = request.ends_turn && n == request.tokens.size();
    int32_t first = s.next_pos;
    if (s.policy->renumbers()) {
        // Past the trained context the kept window is renumbered (sinks, then consecutive
        // positions), as StreamingLLM assigns positions inside the cache.
        if (int64_t(s.next_pos) + n > int64_t(state_.config.max_position)) {
            first = editor_.renumbered_end(s);
            p.renumber_ = true;
            // A warm-up may have left the window longer than its budget: a shorter ubatch
            // fills the context, and the eviction at its end (the warm-up is over) makes room.
            const bool warmed_window = s.policy->settings().warmup_tokens > 0 && first < int32_t(state_.config.max_position);
            if (warmed_window) n = std::min(n, uint32_t(int32_t(state_.config.max_position) - first));
            if (int64_t(first) + n > int64_t(state_.config.max_position)) {
                ++state_.counters.refusals;
                return error(StatusCode::context_full, "the streaming window (" + std::to_string(first) +
                                                           " positions) leaves no room in the model's context: lower --kv-budget");
            }
        }
    } else if (size_t(s.n_tokens()) + n > state_.config.max_tokens) {
        ++state_.counters.refusals;
        return error(StatusCode::context_full, "the context holds " + std::to_string(state_.config.max_tokens) + " tokens; " +
                                                   std::to_string(s.n_tokens()) + " are used and " + std::to_string(n) +
                                                   " more do not fit");
    }
    p.tokens_.assign(request.tokens.begin(), request.tokens.begin() + n);
    p.positions_.resize(n);
    for (uint32_t i = 0; i < n; ++i) p.positions_[i] = first + int32_t(i);
    p.ubatch_ = {.n_held = s.n_tokens(),
                 .n_tokens = n,
                 .first_pos = first,
                 .prompt = request.prompt,
                 .n_after = uint32_t(request.tokens.size()) - n};
    p.policy_ = s.policy->plan(p.ubatch_);
    p.observe_ = observe_attention_;
    // Warm-up: the policy's eviction (and, at apply, re-encoding) waits until the sequence
    // holds enough tokens; the attention mass is gathered all the same.
    p.warming_up_ = s.policy->settings().warming_up(s.n_tokens() + n, state_.config.max_tokens);
    if (p.warming_up_) {
        p.policy_.evict_to.reset();
        p.policy_.select_at_prompt_end = false;
    }
    p.pins_ = PinnedBlocks(state_.pool);
    p.first_slot_.assign(state_.shape.n_layer, 0);
    return p;
}

Status KvCache::begin_layer(UbatchPlan & p, uint32_t il) {
    LR_ASSERT(il == p.n_viewed_ && il < state_.shape.n_layer);
    p.pins_.release();  // the previous layer's view is done (its ops are queued before anything moves)
    // Every layer's attention mass goes to one buffer, cleared once and copied to the host once.
    if (il == 0 && p.collects_mass()) LR_RETURN_IF_ERROR(clear_mass(p));
    return {};
}

Result<void *> KvCache::recurrent_state(UbatchPlan & p, uint32_t il) {
    LR_ASSERT(state_.shape.kind(il) == KvLayerKind::recurrent);
    LR_RETURN_IF_ERROR(begin_layer(p, il));
    LR_ASSIGN_OR_RETURN(void * state, states_.layer(p.seq_, il));
    p.states_advanced_ = true;
    ++p.n_viewed_;
    return state;
}

Result<PagedKvView> KvCache::layer_view(UbatchPlan & p, uint32_t il, const float * q) {
    Result<PagedKvView> view = build_view(p, il, q);
    // No tier could make room for what the ubatch needs: it is refused (the graph stops at
    // the first failed view, so once per ubatch).
    if (!view.ok() && view.status().code() == StatusCode::out_of_memory) ++state_.counters.refusals;
    return view;
}

Result<PagedKvView> KvCache::build_view(UbatchPlan & p, uint32_t il, const float * q) {
    LR_ASSERT(state_.shape.kind(il) != KvLayerKind::recurrent);
    LR_RETURN_IF_ERROR(begin_layer(p, il));
    if (!state_.shape.stores(il)) return shared_view(p, il);
    const SeqId seq = p.seq_;
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens, n_kv = state_.layer_shapes[il].n_head_kv;
    LayerBlocks & layer = s.layers[il];
    const size_t n_new = p.tokens_.size();

    auto lost = [&](const Status & st, std::span<const BlockId> ids) { return lose_unreadable(seq, st, ids); };

    if (p.renumber_) {
        if (Status st = editor_.renumber(seq, il); !st.ok()) return lost(st, layer.ids);
    }
    // What attention reads: every block, or the pages each head's query needs (policies
    // apply to full-attention layers; a sliding layer reads its whole window).
    const bool full = state_.shape.full(il);
    const bool query_aware = p.policy_.query_aware && full;
    std::vector<uint32_t> chosen;
    p.read_pages_.clear();
    if (query_aware) {
        if (Status st = editor_.bound_blocks(seq, il); !st.ok()) return lost(st, layer.ids);
        const uint32_t n_head = state_.shape.n_query_heads(), d = state_.block_shape.head_dim;
        if (!placement_.device_host_addressable()) {
            q_host_.resize(size_t(n_head) * d);
            state_.backend.copy_to_host(q_host_.data(), q, q_host_.size() * sizeof(float));
            q = q_host_.data();
        }
        PageReads reads = s.policy->page_reads(layer, state_.pool, p.ubatch_.n_held + p.ubatch_.n_tokens, q, n_head);
        chosen = std::move(reads.blocks);
        p.read_pages_ = std::move(reads.pages);
    } else {
        chosen.resize(layer.size());
        for (uint32_t b = 0; b < layer.size(); ++b) chosen[b] = b;
    }
    p.view_ids_.clear();
    for (uint32_t b : chosen) p.view_ids_.push_back(layer.ids[b]);
    Result<PinnedBlocks> pins = placement_.pin_on_device(p.view_ids_, seq, il);
    if (!pins.ok()) return lost(pins.status(), p.view_ids_);
    p.pins_ = std::move(pins).value();
    // Blocks for the new tokens.
    const uint32_t first_new = layer.slots_used;
    const size_t needed = (size_t(first_new) + n_new + bt - 1) / bt;
    while (layer.size() < needed) {
        LR_ASSIGN_OR_RETURN(BlockId id, placement_.new_block(seq, il, state_.layout.k_codec, state_.layout.v_codec));
        p.pins_.add(id);
        layer.push(id);
        chosen.push_back(uint32_t(layer.size() - 1));
        p.view_ids_.push_back(id);
        if (query_aware) {
            const uint32_t pages = bt / state_.config.settings.quest_page_tokens();
            p.read_pages_.insert(p.read_pages_.end(), n_kv, pages == 32 ? ~0u : (1u << pages) - 1);
        }
    }
    // Write slots, as indices into the view; the position mirror takes the new tokens now
    // (discard drops them again).
    p.write_slots_.resize(n_new);
    for (size_t i = 0; i < n_new; ++i) {
        const uint32_t slot = first_new + uint32_t(i);
        const size_t at = size_t(std::find(chosen.begin(), chosen.end(), slot / bt) - chosen.begin());
        LR_ASSERT(at < chosen.size());
        p.write_slots_[i] = uint32_t(at) * bt + slot % bt;
        BlockMeta & m = state_.pool.meta(layer.ids[slot / bt]);
        const KvBlockLayout L = state_.layout_of(m);
        for (uint32_t g = 0; g < n_kv; ++g) m.pos[L.pos_index(g, slot % bt)] = p.positions_[i];
    }
    p.first_slot_[il] = first_new;
    layer.slots_used = first_new + uint32_t(n_new);
    if (!p.policy_.query_aware) placement_.prefetch_ahead(seq, il);

    p.view_blocks_.clear();
    for (BlockId id : p.view_ids_) {
        const BlockMeta & m = state_.pool.meta(id);
        p.view_blocks_.push_back({m.place.slot.data, m.k_codec, m.v_codec});
    }
    PagedKvView view;
    view.shape = state_.layer_shapes[il];
    view.blocks = p.view_blocks_;
    view.write_slots = p.write_slots_;
    if (query_aware) {
        view.read_pages = p.read_pages_;
        view.page_tokens = state_.config.settings.quest_page_tokens();
        for (uint32_t bits : p.read_pages_) state_.counters.rows_read += uint64_t(std::popcount(bits)) * view.page_tokens;
    } else {
        state_.counters.rows_read += uint64_t(p.view_ids_.size()) * n_kv * bt;
    }
    if (p.collects_mass() && full) view.attn_mass = mass_.at(seq).as<float>() + p.mass_at_[il];
    if (p.observe_ && full) {
        p.observed_blocks_.resize(state_.shape.n_layer);
        p.observed_blocks_[il] = std::move(chosen);
    }
    ++p.n_viewed_;
    return view;
}

Status KvCache::lose_unreadable(SeqId seq, const Status & st, std::span<const BlockId> ids) {
    // A block that cannot be read back (a damaged prefix cache) loses the sequence from the
    // earliest position it held: that is where recomputation starts.
    if (st.code() != StatusCode::corrupt_data) return st;
    KvSequence & s = state_.seqs.at(seq);
    int32_t from = s.next_pos;
    for (BlockId id : ids) {
        const BlockMeta & m = state_.pool.meta(id);
        if (m.place.home == BlockHome::device) continue;
        for (int32_t pos : m.pos) {
            if (pos != kInvalidPos) from = std::min(from, pos);
        }
    }
    lose_sequence_from(seq, uint32_t(from), st);
    return data_loss("recompute from position " + std::to_string(*s.lost_from));
}

Result<PagedKvView> KvCache::shared_view(UbatchPlan & p, uint32_t il) {
    // Every block of the source layer, which holds this ubatch's K/V already (its view came
    // first); nothing is written, and no policy reads or evicts through this layer.
    const uint32_t source = state_.shape.source(il);
    const std::vector<BlockId> & ids = state_.seqs.at(p.seq_).layers[source].ids;
    Result<PinnedBlocks> pins = placement_.pin_on_device(ids, p.seq_, source);
    if (!pins.ok()) return lose_unreadable(p.seq_, pins.status(), ids);
    p.pins_ = std::move(pins).value();
    p.view_ids_.assign(ids.begin(), ids.end());
    p.view_blocks_.clear();
    for (BlockId id : ids) {
        const BlockMeta & m = state_.pool.meta(id);
        p.view_blocks_.push_back({m.place.slot.data, m.k_codec, m.v_codec});
    }
    p.write_slots_.clear();
    p.read_pages_.clear();
    placement_.prefetch_ahead(p.seq_, il);
    PagedKvView view;
    view.shape = state_.layer_shapes[source];
    view.blocks = p.view_blocks_;
    view.write_slots = p.write_slots_;
    state_.counters.rows_read += uint64_t(ids.size()) * view.shape.n_head_kv * view.shape.block_tokens;
    ++p.n_viewed_;
    return view;
}

Status KvCache::clear_mass(UbatchPlan & p) {
    // A layer's view holds every block it has and the ones its new tokens start.
    const KvSequence & s = state_.seqs.at(p.seq_);
    const uint32_t bt = state_.block_shape.block_tokens;
    p.mass_at_.assign(1, 0);
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        const LayerBlocks & layer = s.layers[il];
        const size_t n_blocks = std::max(layer.size(), (size_t(layer.slots_used) + p.tokens_.size() + bt - 1) / bt);
        p.mass_at_.push_back(p.mass_at_.back() + (state_.shape.full(il) ? n_blocks * state_.layout.n_slots() : 0));
    }
    const size_t n = p.mass_at_.back();
    DeviceBuffer & mass = mass_[p.seq_];
    if (mass.n_bytes() < n * sizeof(float)) {
        const size_t grown = std::max(n * sizeof(float), mass.n_bytes() * 2);
        mass = {};
        LR_ASSIGN_OR_RETURN(mass, state_.backend.alloc(grown));
    }
    if (zeros_.size() < n) zeros_.resize(n, 0.0f);
    state_.backend.copy_to_device(mass.data(), zeros_.data(), n * sizeof(float));
    return {};
}

void KvCache::fold_mass(UbatchPlan & p) {
    const size_t total = p.mass_at_.back();
    mass_host_.resize(total);
    state_.backend.copy_to_host(mass_host_.data(), mass_.at(p.seq_).data(), total * sizeof(float));
    state_.backend.synchronize();
    if (p.observe_) observe_mass(p);
    if (!p.policy_.collect_mass) return;  // gathered for observation only
    KvSequence & s = state_.seqs.at(p.seq_);
    const size_t per_block = state_.layout.n_slots();
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (!state_.shape.full(il)) continue;  // policies apply to full-attention layers
        LayerBlocks & layer = s.layers[il];
        // A layer's view held every one of its blocks, in table order.
        LR_ASSERT((p.mass_at_[il + 1] - p.mass_at_[il]) == layer.size() * per_block);
        const float * mass = mass_host_.data() + p.mass_at_[il];
        for (size_t b = 0; b < layer.size(); ++b) {
            // The kernel writes [block][head][slot], the layout of the mass mirror.
            std::vector<float> & mine = layer.mass[b];
            if (mine.empty()) mine.assign(per_block, 0.0f);
            for (size_t i = 0; i < per_block; ++i) mine[i] += mass[b * per_block + i];
        }
    }
}

void KvCache::observe_mass(const UbatchPlan & p) {
    KvSequence & s = state_.seqs.at(p.seq_);
    ObservedAttention & o = s.observed;
    const size_t end = size_t(p.positions_.back()) + 1;
    // Each query sees the positions up to its own: position q gets one from every query at
    // or after it.
    const int32_t first = p.positions_.front();
    o.queries.resize(std::max(o.queries.size(), end), 0);
    for (size_t q = 0; q < end; ++q) o.queries[q] += int32_t(q) <= first ? p.n_tokens() : uint32_t(p.positions_.back() - int32_t(q) + 1);
    o.n_queries += p.n_tokens();
    const size_t per_block = state_.layout.n_slots();
    size_t l = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (!state_.shape.full(il)) continue;
        if (o.mass.size() <= l) o.mass.emplace_back();
        std::vector<float> & received = o.mass[l++];
        received.resize(std::max(received.size(), end), 0.0f);
        const LayerBlocks & layer = s.layers[il];
        const std::vector<uint32_t> & viewed = p.observed_blocks_[il];
        LR_ASSERT((p.mass_at_[il + 1] - p.mass_at_[il]) >= viewed.size() * per_block);
        const float * mass = mass_host_.data() + p.mass_at_[il];
        for (size_t v = 0; v < viewed.size(); ++v) {
            // The mass and the position mirror share the layout [head][slot].
            const std::vector<int32_t> & pos = state_.pool.meta(layer.ids[viewed[v]]).pos;
            for (size_t i = 0; i < per_block; ++i) {
                if (pos[i] >= 0 && size_t(pos[i]) < end) received[size_t(pos[i])] += mass[v * per_block + i];
            }
        }
    }
}

void KvCache::apply(UbatchPlan & p) {
    LR_ASSERT(p.n_viewed_ == state_.shape.n_layer);
    p.pins_.release();
    const SeqId seq = p.seq_;
    KvSequence & s = state_.seqs.at(seq);
    if (p.collects_mass()) fold_mass(p);
    const KvSettings & k = state_.config.settings;
    const bool reencode = !p.warming_up_ && (k.k_codec() != state_.layout.k_codec || k.v_codec() != state_.layout.v_codec);
    SelectionTimer selecting;
    const std::vector<uint32_t> budgets = p.policy_.evict_to ? layer_budgets(*s.policy, state_.shape, *p.policy_.evict_to,
                                                                             p.ubatch_.n_held + p.n_tokens(), false)
                                                             : std::vector<uint32_t>{};
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (!state_.shape.full(il)) continue;  // policies and codecs apply to full-attention layers
        if (s.policy->keeps_key_bounds()) {
            if (Status st = editor_.widen_key_bounds(seq, il, p.first_slot_[il], p.n_tokens()); !st.ok()) state_.report_fault(st);
        }
        if (p.policy_.evict_to) {
            selecting.start();
            editor_.evict(seq, il, {.budget = budgets[il], .end = p.positions_.back() + 1, .n_held = p.ubatch_.n_held});
            selecting.stop();
        }
        if (reencode) {
            if (Status st = editor_.reencode_aged(seq, il); !st.ok()) state_.report_fault(st);
        }
    }
    const uint32_t n_full_before = s.n_tokens() / state_.block_shape.block_tokens;
    s.tokens.insert(s.tokens.end(), p.tokens_.begin(), p.tokens_.end());
    state_.counters.tokens_written += p.n_tokens();
    s.next_pos = p.positions_.back() + 1;
    if (p.states_advanced_ && (s.n_tokens() % snapshot_interval_ == 0 || p.ends_turn_)) {
        if (Status st = snapshots_.take(seq, s.n_tokens(), states_.sequence_states(seq), snapshot_interval_); !st.ok()) {
            state_.report_fault(st);
        }
    }
    std::vector<uint8_t> states;  // for the prefix store
    if (p.states_advanced_ && p.persist_states_ && s.pure_prefix && prefix_.persists()) {
        states.resize(size_t(states_.bytes_per_sequence()));
        state_.backend.copy_to_host(states.data(), states_.sequence_states(seq), states.size());
    }
    prefix_.note_full_blocks(seq, n_full_before, std::move(states));
    prefix_.collect(false);
    editor_.slide(seq);
    if (p.policy_.select_at_prompt_end) {
        selecting.start();
        select_prompt(seq);
        selecting.stop();
    }
    if (p.policy_.evict_to || p.policy_.select_at_prompt_end) {
        state_.counters.selection_ms[std::string(kv_policy_name(s.policy->settings().policy))] += selecting.ms();
    }
    s.policy->applied(p.ubatch_, p.policy_);
    ++ubatches_;
    // A safe point only when no other sequence's ubatch holds blocks on the device.
    if (adapter_ && state_.pool.n_pinned() == 0) adapt();
    publish_stats();
}

void KvCache::adapt() {
    KvAdaptSample x{.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count(),
                    .ubatches = ubatches_,
                    .block_reads = state_.counters.block_reads,
                    .block_hits = state_.counters.block_hits,
                    .bytes_moved = state_.counters.bytes_moved,
                    .move_ms = state_.counters.move_ms + placement_.io_move_ms(),
                    .fetch_wait_ms = state_.counters.fetch_wait_ms};
    for (const auto & [id, seq] : state_.seqs) {
        x.context_tokens = std::max(x.context_tokens, seq.n_tokens());
        for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
            if (!state_.shape.full(il)) continue;
            uint64_t layer = 0;
            for (BlockId b : seq.layers[il].ids) layer += state_.pool.meta(b).n_bytes / state_.pool.meta(b).ref_count;
            x.held_bytes += layer;
            x.layer_bytes = std::max(x.layer_bytes, layer);
        }
    }
    const KvAdaptChoice before = adapter_->choice();
    std::vector<KvAdaptDecision> decisions = adapter_->observe(x);
    if (decisions.empty()) return;
    const KvAdaptChoice & now = adapter_->choice();
    if (now.device_bytes != before.device_bytes || now.host_bytes != before.host_bytes) {
        if (Status st = placement_.set_memory_budgets(now.device_bytes, now.host_bytes); !st.ok()) state_.report_fault(st);
    }
    placement_.set_prefetch_layers(now.prefetch_layers);
    if (now.recent_ratio != before.recent_ratio) {
        for (auto & [id, seq] : state_.seqs) {
            const KvPolicy policy = seq.policy->settings().policy;
            if (policy == KvPolicy::h2o || policy == KvPolicy::random) seq.policy->set_recent_ratio(now.recent_ratio);
        }
    }
    // The panel shows the latest few.
    constexpr size_t kKept = 16;
    std::vector<KvAdaptDecision> & log = state_.counters.adapt_decisions;
    log.insert(log.end(), decisions.begin(), decisions.end());
    if (log.size() > kKept) log.erase(log.begin(), log.end() - kKept);
}

void KvCache::select_prompt(SeqId seq) {
    KvSequence & s = state_.seqs.at(seq);
    const std::vector<uint32_t> budgets = layer_budgets(*s.policy, state_.shape, s.policy->settings().budget_for(s.n_tokens()),
                                                        s.n_tokens(), true);
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (state_.shape.full(il))
            editor_.evict(seq, il, {.budget = budgets[il], .end = s.next_pos, .n_held = s.n_tokens(), .prompt_end = true});
    }
}

void KvCache::discard(UbatchPlan & p) {
    p.pins_.release();
    auto it = state_.seqs.find(p.seq_);
    if (it == state_.seqs.end() || p.positions_.empty()) return;
    if (p.states_advanced_) {
        // The states went past the sequence's tokens: back to its latest snapshot, and the
        // caller recomputes from there.
        KvSequence & s = it->second;
        const uint32_t back = rollback_point(s, p.seq_, s.n_tokens(), 1);
        const Status why = error(StatusCode::corrupt_data, "a failed ubatch left recurrent states half-advanced");
        if (!cut_to(p.seq_, back)) {
            lose_sequence_from(p.seq_, back, why);
        } else {
            state_.report_fault(why);
            s.lost_from = std::min(s.lost_from.value_or(back), back);
        }
        publish_stats();
        return;
    }
    const int32_t from = p.positions_.front();
    if (!editor_.drop_positions_from(p.seq_, from)) {
        lose_sequence_from(p.seq_, uint32_t(from), error(StatusCode::corrupt_data, "a KV block could not be read back"));
    }
    publish_stats();
}

// ---- Truncation and loss ----------------------------------------------------------------------

uint32_t KvCache::truncate(SeqId seq, uint32_t n_keep) {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return 0;
    KvSequence & s = it->second;
    if (n_keep >= s.n_tokens()) return s.n_tokens();
    // Positions are token indices unless streaming renumbered them: then start over; so
    // too when a sliding window has let go of what the cut needs.
    const bool renumbered = s.next_pos != int32_t(s.n_tokens());
    const uint32_t cut = renumbered ? 0 : rollback_point(s, seq, n_keep, 1);
    if (!cut_to(seq, cut)) {
        lose_sequence_from(seq, cut, error(StatusCode::corrupt_data, "a KV block could not be read back"));
        return n_tokens(seq);
    }
    if (cut == 0 && !s.lost_from) {
        for (const LayerBlocks & layer : s.layers) {
            for (BlockId id : layer.ids) placement_.free_block(id);
        }
        state_.seqs.erase(it);
        states_.drop(seq);
        mass_.erase(seq);
    }
    publish_stats();
    return cut;
}

uint32_t KvCache::rollback_point(const KvSequence & s, SeqId seq, uint32_t n_keep, uint32_t align) const {
    uint32_t at = editor_.resumable(s, n_keep);
    if (!states_.any()) return at;
    // A snapshot the sliding windows can continue from (0 always is one).
    for (;;) {
        const uint32_t snapshot = snapshots_.at_or_before(seq, at, align);
        at = editor_.resumable(s, snapshot);
        if (at == snapshot) return at;
    }
}

bool KvCache::cut_to(SeqId seq, uint32_t n) {
    KvSequence & s = state_.seqs.at(seq);
    const bool ok = editor_.drop_positions_from(seq, int32_t(n));
    roll_back_states(seq, n);
    s.next_pos = int32_t(n);
    s.observed.cut(n);
    s.tokens.resize(n);
    s.chains.resize(std::min<size_t>(s.chains.size(), n / state_.block_shape.block_tokens));
    return ok;
}

void KvCache::roll_back_states(SeqId seq, uint32_t n) {
    if (!states_.any()) return;
    if (n == 0) {
        states_.reset(seq);
    } else {
        snapshots_.restore(seq, n, states_.sequence_states(seq));
    }
    snapshots_.drop_after(seq, n);
}

std::optional<uint32_t> KvCache::take_lost_position(SeqId seq) {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return std::nullopt;
    std::optional<uint32_t> p = it->second.lost_from;
    it->second.lost_from.reset();
    if (it->second.n_tokens() == 0) {
        state_.seqs.erase(it);
        states_.drop(seq);
        mass_.erase(seq);
    }
    return p;
}

void KvCache::lose_sequence_from(SeqId seq, uint32_t position, const Status & why) {
    state_.report_fault(why);
    KvSequence & s = state_.seqs.at(seq);
    const uint32_t bt = state_.block_shape.block_tokens;
    // Recomputation restarts at a block boundary so that the prefix stays block-aligned.
    // After eviction blocks no longer follow positions: then everything is recomputed.
    // A recurrent sequence goes back to a block-aligned snapshot.
    const uint32_t cut = rollback_point(s, seq, s.pure_prefix ? std::min(s.n_tokens(), position / bt * bt) : 0, bt);
    s.lost_from = std::min(s.lost_from.value_or(cut), cut);
    // Drop every block from the cut on (their bytes may be unreadable), then truncate.
    for (LayerBlocks & layer : s.layers) {
        const uint32_t keep = cut / bt > layer.dropped ? cut / bt - layer.dropped : 0;
        while (layer.size() > keep) {
            placement_.free_block(layer.ids.back());
            layer.pop();
        }
        if (layer.size() == 0) layer.clear();
        layer.slots_used = std::min<uint32_t>(layer.slots_used, uint32_t(layer.size()) * bt);
    }
    // The states may have gone past the tokens (a failed ubatch): back to the snapshot.
    roll_back_states(seq, cut);
    s.tokens.resize(std::min(s.n_tokens(), cut));
    s.next_pos = int32_t(s.n_tokens());
    s.observed.cut(s.n_tokens());
    s.chains.resize(std::min<size_t>(s.chains.size(), s.n_tokens() / bt));
    publish_stats();
}

// ---- What it holds ----------------------------------------------------------------------------

std::vector<float> KvCache::retention(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return {};
    const KvSequence & s = it->second;
    std::vector<float> kept(size_t(std::max(s.next_pos, 0)), 0.0f);
    uint32_t n_full = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (state_.shape.kind(il) != KvLayerKind::full) continue;
        ++n_full;
        for (BlockId id : s.layers[il].ids) {
            for (int32_t p : state_.pool.meta(id).pos) {
                if (p >= 0 && size_t(p) < kept.size()) kept[size_t(p)] += 1.0f;
            }
        }
    }
    const float pairs = float(n_full * state_.shape.n_head_kv);
    for (float & k : kept) k /= pairs;
    return kept;
}

AttentionMass KvCache::attention(SeqId seq) const {
    AttentionMass a;
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end() || it->second.observed.n_queries == 0) return a;
    const KvSequence & s = it->second;
    const ObservedAttention & o = s.observed;
    a.n_positions = uint32_t(std::max(s.next_pos, 0));
    a.n_query_heads = state_.shape.n_query_heads();
    a.n_queries = o.n_queries;
    a.queries.assign(a.n_positions, 0);
    std::copy_n(o.queries.begin(), std::min<size_t>(o.queries.size(), a.n_positions), a.queries.begin());
    const float heads = float(state_.shape.n_head_kv);
    size_t l = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        if (!state_.shape.full(il)) continue;
        a.layers.push_back(il);
        a.mass.resize(a.mass.size() + a.n_positions, 0.0f);
        a.held.resize(a.held.size() + a.n_positions, 0.0f);
        float * mass = a.mass.data() + l * a.n_positions;
        float * held = a.held.data() + l * a.n_positions;
        if (l < o.mass.size()) std::copy_n(o.mass[l].begin(), std::min<size_t>(o.mass[l].size(), a.n_positions), mass);
        for (BlockId id : s.layers[il].ids) {
            for (int32_t p : state_.pool.meta(id).pos) {
                if (p >= 0 && uint32_t(p) < a.n_positions) held[p] += 1.0f;
            }
        }
        for (uint32_t p = 0; p < a.n_positions; ++p) held[p] /= heads;
        ++l;
    }
    return a;
}

std::vector<std::pair<KvCodec, KvCodec>> KvCache::layer_codecs(SeqId seq, uint32_t il) const {
    std::vector<std::pair<KvCodec, KvCodec>> out;
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end() || il >= it->second.layers.size()) return out;
    for (BlockId id : it->second.layers[il].ids) out.emplace_back(state_.pool.meta(id).k_codec, state_.pool.meta(id).v_codec);
    return out;
}

Result<std::vector<float>> KvCache::layer_rows(SeqId seq, uint32_t il, uint32_t head, bool keys) {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end() || il >= it->second.layers.size() || head >= state_.layer_shapes[il].n_head_kv) {
        return error(StatusCode::invalid_argument, "no such sequence, layer or KV head");
    }
    il = state_.shape.source(il);  // a shared layer holds its source's
    const std::vector<BlockId> & ids = it->second.layers[il].ids;
    LR_ASSIGN_OR_RETURN(PinnedBlocks pins, placement_.pin_on_device(ids, seq, il));
    const uint32_t d = state_.layer_shapes[il].head_dim;
    std::vector<float> rows;
    std::vector<uint8_t> bytes;
    for (BlockId id : ids) {
        const BlockMeta & m = state_.pool.meta(id);
        const KvBlockLayout L = state_.layout_of(m);
        LR_RETURN_IF_ERROR(placement_.read_block(m, bytes));
        for (uint32_t sl = 0; sl < state_.block_shape.block_tokens; ++sl) {
            if (m.pos[L.pos_index(head, sl)] == kInvalidPos) continue;
            rows.resize(rows.size() + d);
            kv_decode_row(keys ? m.k_codec : m.v_codec, bytes.data() + (keys ? L.k_row_offset(head, sl) : L.v_row_offset(head, sl)),
                          rows.data() + rows.size() - d, d);
        }
    }
    return rows;
}

std::vector<KvTier> KvCache::block_tiers(SeqId seq, uint32_t il) const {
    std::vector<KvTier> tiers;
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return tiers;
    for (BlockId id : it->second.layers[il].ids) {
        const BlockHome home = state_.pool.meta(id).place.home;
        tiers.push_back(home == BlockHome::device ? KvTier::device : home == BlockHome::host ? KvTier::host : KvTier::disk);
    }
    return tiers;
}

void KvCache::note_prefill(uint32_t n_tokens, double ms) { prefix_.note_prefill(n_tokens, ms); }

void KvCache::note_refusal() {
    ++state_.counters.refusals;
    publish_stats();
}

void KvCache::flush() {
    prefix_.collect(true);
    publish_stats();
}

void KvCache::publish_stats() {
    KvStats s = state_.counters;
    placement_.fill_tier_stats(s);
    s.mirror_bytes = state_.pool.mirror_bytes();
    s.tokens_seen = 0;
    s.tokens_kept = 0;
    double retention = 0;  // summed over the sequences holding tokens
    uint32_t n_holding = 0;
    for (const auto & [id, seq] : state_.seqs) {
        const uint32_t kept = n_kept(id);
        s.mirror_bytes += seq.mass_bytes();
        s.tokens_seen += seq.n_tokens();
        s.tokens_kept += kept;
        if (seq.n_tokens() == 0) continue;
        retention += double(kept) / double(seq.n_tokens());
        ++n_holding;
    }
    s.retention_ratio = n_holding ? retention / n_holding : 1.0;
    uint32_t n_full = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) n_full += state_.shape.full(il) ? 1 : 0;
    // evicted_tokens counts every full-attention layer's evictions.
    if (s.tokens_written > 0 && n_full > 0) s.evictions_per_1k = 1000.0 * double(s.evicted_tokens) / n_full / double(s.tokens_written);
    s.n_sequences = uint32_t(state_.seqs.size());
    s.layer_kinds = layer_kind_stats();
    std::lock_guard lock(stats_mutex_);
    published_ = std::move(s);
}

std::vector<KvLayerKindStats> KvCache::layer_kind_stats() const {
    std::vector<KvLayerKindStats> rows;
    auto row = [&](KvLayerKind kind) -> KvLayerKindStats & {
        for (KvLayerKindStats & r : rows) {
            if (r.kind == kind) return r;
        }
        return rows.emplace_back(KvLayerKindStats{.kind = kind});
    };
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) ++row(state_.shape.kind(il)).n_layers;
    for (const auto & [id, seq] : state_.seqs) {
        const uint32_t kept = n_kept(id);
        for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
            KvLayerKindStats & r = row(state_.shape.kind(il));
            // A block several sequences hold counts once, in shares; a shared layer holds
            // nothing of its own and reads what its source keeps.
            for (BlockId b : seq.layers[il].ids) r.bytes += state_.pool.meta(b).n_bytes / state_.pool.meta(b).ref_count;
            const uint32_t source = state_.shape.source(il);
            r.bytes += states_.layer_bytes(id, il);
            r.tokens_kept += state_.shape.full(source) ? kept : seq.layers[source].slots_used;
        }
        if (states_.any()) {
            KvLayerKindStats & r = row(KvLayerKind::recurrent);
            r.snapshots += snapshots_.count(id);
            r.snapshot_bytes += snapshots_.bytes(id);
            r.bytes += snapshots_.bytes(id);
        }
    }
    // Positions one layer keeps per sequence, as a mean.
    const uint64_t n_seq = std::max<size_t>(state_.seqs.size(), 1);
    for (KvLayerKindStats & r : rows) r.tokens_kept /= uint64_t(r.n_layers) * n_seq;
    return rows;
}

uint64_t KvCache::sequence_bytes(SeqId seq) const {
    auto it = state_.seqs.find(seq);
    if (it == state_.seqs.end()) return 0;
    uint64_t bytes = 0;
    for (uint32_t il = 0; il < state_.shape.n_layer; ++il) {
        for (BlockId b : it->second.layers[il].ids) bytes += state_.pool.meta(b).n_bytes / state_.pool.meta(b).ref_count;
        bytes += states_.layer_bytes(seq, il);
    }
    if (states_.any()) bytes += snapshots_.bytes(seq);
    return bytes;
}

KvStats KvCache::stats() const {
    std::lock_guard lock(stats_mutex_);
    return published_;
}

}  // namespace lr
