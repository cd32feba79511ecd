#include "model.h"

#include "engine/model/model_identity.h"
#include "engine/tokenizer/vocab.h"

namespace lr {

Result<std::shared_ptr<const Model>> Model::load(const std::string & path, Backend & backend) {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
    return finish_load(std::move(file), backend);
}

Result<std::shared_ptr<const Model>> Model::load_from_memory(std::span<const uint8_t> bytes, const std::string & name, Backend & backend) {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::parse(bytes, name));
    return finish_load(std::move(file), backend);
}

Result<std::shared_ptr<const Model>> Model::finish_load(gguf::GgufFile file, Backend & backend) {
    std::shared_ptr<Model> model(new Model(std::move(file), backend));
    LR_ASSIGN_OR_RETURN(model->hparams_, read_hparams(model->file_));
    if (model->hparams_.full_attention_interval > 0) {
        const std::string missing = backend.missing_ops(BackendOpSet::gated_delta_net);
        if (!missing.empty()) {
            return error(StatusCode::unsupported, model->file_.path() + ": " + model->hparams_.arch_name + " models need ops the " +
                                                      backend.name() + " backend does not have yet (" + missing +
                                                      "); run them on the CPU backend (--backend cpu)");
        }
    }
    LR_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(model->file_));
    if (vocab.tokens.size() != model->hparams_.n_vocab) {
        return error(StatusCode::corrupt_data, model->file_.path() + ": the tokenizer has " + std::to_string(vocab.tokens.size()) +
                                                   " tokens but the model's vocabulary is " + std::to_string(model->hparams_.n_vocab));
    }
    LR_ASSIGN_OR_RETURN(Tokenizer tokenizer, Tokenizer::create(std::move(vocab)));
    model->tokenizer_.emplace(std::move(tokenizer));
    LR_ASSIGN_OR_RETURN(std::optional<std::string_view> jinja, model->file_.get_string("tokenizer.chat_template"));
    model->chat_template_.emplace(
        chat::ChatTemplate::for_model(jinja.value_or(""), model->hparams_.arch_name, &model->chat_template_note_));
    LR_ASSIGN_OR_RETURN(model->weights_, load_weights(model->file_, model->hparams_, backend));
    model->identity_ = model_identity(model->file_);
    return std::shared_ptr<const Model>(std::move(model));
}

KvModelShape Model::kv_shape() const {
    const uint32_t g = hparams_.kv_geometry_layer();
    return {hparams_.n_layer, hparams_.n_head_kv_of(g), hparams_.head_dim_of(g), kv_layer_specs(hparams_), hparams_.n_head};
}

}  // namespace lr
