#pragma once
// A loaded model: the mapped GGUF file, its hyper-parameters and its weights prepared
// for one backend. Immutable once loaded; shared by the sessions that run it.

#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_hparams.h"
#include "engine/model/model_weights.h"
#include "kvcache/kv_cache_config.h"

namespace lr {

class Model {
public:
    static Result<std::shared_ptr<const Model>> load(const std::string & path, Backend & backend);

    const gguf::GgufFile & file() const { return file_; }
    const ModelHParams & hparams() const { return hparams_; }
    const ModelWeights & weights() const { return weights_; }
    Backend & backend() const { return backend_; }
    KvModelShape kv_shape() const { return {hparams_.n_layer, hparams_.n_head_kv, hparams_.head_dim}; }

private:
    Model(gguf::GgufFile file, Backend & backend) : file_(std::move(file)), backend_(backend) {}

    gguf::GgufFile file_;
    Backend & backend_;
    ModelHParams hparams_;
    ModelWeights weights_;
};

}  // namespace lr
