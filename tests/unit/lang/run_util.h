// Running tensors in language tests as `sexpgpu eval` runs them (train/session.cc), on the
// reference device, for graphs without inputs.
#pragma once

#include <string>
#include <vector>

#include "device/reference/reference.h"
#include "graph/passes.h"
#include "lang/interp.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "test_util.h"

namespace sx::lang::testing {

// The value with every traced tensor in its list replaced by a constant of its elements,
// run on the reference device: what `sexpgpu eval` does (train/session.cc), for graphs
// without inputs.
inline Value run_on_reference(Interpreter& interp, const Value& value) {
  std::vector<Value> items = value.is_list() ? list_items(value) : std::vector<Value>{value};
  graph::Graph program = interp.tracer()->graph();
  std::vector<size_t> traced;
  for (size_t i = 0; i < items.size(); ++i) {
    const TensorValue* t = as_tensor(items[i]);
    if (t && !t->info().value) {
      program.outputs.push_back({"t" + std::to_string(i), t->node});
      traced.push_back(i);
    }
  }
  if (traced.empty()) return value;
  auto results = device::run_reference(graph::eliminate_dead_code(program), {});
  for (size_t k = 0; k < traced.size(); ++k) {
    items[traced[k]] = make_tensor(interp.tracer(), interp.tracer()->builder().constant(std::move(results[k])));
  }
  return value.is_list() ? list(std::move(items)) : items[0];
}

// Evaluates `text` as `sexpgpu eval` does and prints the value: tensors run on the
// reference device, in `print`, `str`, `format` and `item` too.
inline std::string eval_run_print(const std::string& text) {
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level();
  interp.materialize = [&](const Value& v) { return run_on_reference(interp, v); };
  return print(run_on_reference(interp, interp.eval_text(text, "<test>", *env)));
}

}  // namespace sx::lang::testing
