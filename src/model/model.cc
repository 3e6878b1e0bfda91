// Installing the model forms and builtins into an interpreter.
#include "model/model.h"

#include "lang/tracer.h"
#include "model/select.h"
#include "model/tokenizer_value.h"

namespace sx::model {

void install_model_forms(lang::Interpreter& interp, const std::shared_ptr<ModelState>& state);
void install_initializers(lang::Interpreter& interp, const std::shared_ptr<ModelState>& state);
void install_tensor_files(lang::Interpreter& interp);
void install_parameters(lang::Interpreter& interp);

std::shared_ptr<ModelState> install_models(lang::Interpreter& interp) {
  auto state = std::make_shared<ModelState>();
  // Parameters and random keys are trace inputs, which compaction keeps, renumbered.
  interp.tracer()->on_compact([weak = std::weak_ptr<ModelState>(state)](const lang::NodeRemap& remap) {
    auto held = weak.lock();
    if (!held) return;
    for (const lang::Value& value : held->models) {
      for (ParamDecl& decl : as_model(value)->params) decl.node = remap[decl.node];
    }
    for (graph::NodeId& key : held->rng_inputs) key = remap[key];
    std::map<graph::NodeId, std::string> names;
    for (auto& [node, name] : held->param_names) names.emplace(remap[node], std::move(name));
    held->param_names = std::move(names);
  });
  install_model_forms(interp, state);
  install_initializers(interp, state);
  install_select(interp);
  install_tensor_files(interp);
  install_parameters(interp);
  install_tokenizers(interp);
  return state;
}

}  // namespace sx::model
