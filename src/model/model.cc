// Installing the model forms and builtins into an interpreter.
#include "model/model.h"

#include "model/select.h"

namespace sx::model {

void install_model_forms(lang::Interpreter& interp, const std::shared_ptr<ModelState>& state);
void install_initializers(lang::Interpreter& interp, const std::shared_ptr<ModelState>& state);
void install_tensor_files(lang::Interpreter& interp);
void install_parameters(lang::Interpreter& interp);

std::shared_ptr<ModelState> install_models(lang::Interpreter& interp) {
  auto state = std::make_shared<ModelState>();
  install_model_forms(interp, state);
  install_initializers(interp, state);
  install_select(interp);
  install_tensor_files(interp);
  install_parameters(interp);
  return state;
}

}  // namespace sx::model
