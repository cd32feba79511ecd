#include "model.h"

namespace lr {

Result<std::shared_ptr<const Model>> Model::load(const std::string & path, Backend & backend) {
    LR_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
    std::shared_ptr<Model> model(new Model(std::move(file), backend));
    LR_ASSIGN_OR_RETURN(model->hparams_, read_hparams(model->file_));
    LR_ASSIGN_OR_RETURN(model->weights_, load_weights(model->file_, model->hparams_, backend));
    return std::shared_ptr<const Model>(std::move(model));
}

}  // namespace lr
