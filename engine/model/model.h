#pragma once
// A loaded model: the mapped GGUF file, its hyper-parameters, its weights prepared for
// one backend, its tokenizer and chat template. Immutable once loaded; shared by the
// sessions that run it.

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "engine/backend/backend.h"
#include "engine/chat/chat_template.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_hparams.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"
#include "kvcache/kv_cache_config.h"

namespace lr {

class Model {
public:
    static Result<std::shared_ptr<const Model>> load(const std::string & path, Backend & backend);
    // A model held in memory the caller keeps alive (the bundled model). `name` is used in
    // messages and as its identity.
    static Result<std::shared_ptr<const Model>> load_from_memory(std::span<const uint8_t> bytes, const std::string & name,
                                                                 Backend & backend);

    const gguf::GgufFile & file() const { return file_; }
    const ModelHParams & hparams() const { return hparams_; }
    const ModelWeights & weights() const { return weights_; }
    Backend & backend() const { return backend_; }
    // The backend's ops are not thread-safe (kernel scratch, one thread pool, one stream):
    // threads that run this model at once (the app's chat and its server) take turns,
    // holding this around each ubatch and each change to their KV cache.
    std::mutex & backend_turn() const { return backend_turn_; }
    const Tokenizer & tokenizer() const { return *tokenizer_; }
    const chat::ChatTemplate & chat_template() const { return *chat_template_; }
    // Why the model's own chat template is not used (empty when it is).
    const std::string & chat_template_note() const { return chat_template_note_; }
    // Heads, head size and each layer's kind (a sliding window's layers keep a bounded ring).
    KvModelShape kv_shape() const;
    // Prefix-cache key of the model file (model_identity.h).
    uint64_t identity() const { return identity_; }

private:
    Model(gguf::GgufFile file, Backend & backend) : file_(std::move(file)), backend_(backend) {}
    static Result<std::shared_ptr<const Model>> finish_load(gguf::GgufFile file, Backend & backend);

    gguf::GgufFile file_;
    Backend & backend_;
    ModelHParams hparams_;
    ModelWeights weights_;
    std::optional<Tokenizer> tokenizer_;
    std::optional<chat::ChatTemplate> chat_template_;
    std::string chat_template_note_;
    uint64_t identity_ = 0;
    mutable std::mutex backend_turn_;
};

}  // namespace lr
