// Models and parameters (docs/models.md): model values, the
// parameters they declare, and the state the special forms share while a file is
// evaluated. Paths and roots are given after evaluation, by resolve_parameters (paths.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lang/interp.h"

namespace sx::model {

// One `defparam`: everything it said, and the graph input that stands for its value.
struct ParamDecl {
  std::string name;        // the defparam's own name
  bool gensym = false;     // declared with a gensym: named param.N within its model
  std::string named;       // a `named` override of the segment
  graph::NodeId node = 0;  // the trace graph's input for its value
  graph::Shape shape;
  graph::DType dtype = graph::DType::f32;
  graph::Graph init;        // closed: inputs key.0 .. key.k (i64 scalars), output "value"
  std::string init_source;  // the initializer as written
  std::vector<std::string> tags;
  bool numerics_high = false;  // :numerics :high
  bool trainable = true;
  // :load [file tensor], the file resolved against the declaring file's directory; for a
  // parameter declared under with-loaded, filled in by resolve_parameters.
  std::optional<std::pair<std::string, std::string>> load;
  size_t load_scope = SIZE_MAX;  // the innermost with-loaded it was declared under
  lang::Span span;
};

// One `(with-loaded (file name :trainable t) body...)`.
struct LoadScope {
  std::string file;  // resolved against the directory of the file that holds the form
  lang::Value name;  // the function from a parameter's path to its tensor's name
  bool trainable = false;
  lang::Span span;
};

class Model final : public lang::Opaque {
 public:
  struct Member {
    size_t param = SIZE_MAX;  // an index into params, or
    Model* child = nullptr;   // a sub-model created while this one was constructed
  };

  Model(std::string constructor, lang::Span span) : constructor(std::move(constructor)), span(span) {}
  std::string type_label() const override { return "a model"; }
  std::string print() const override { return "#<model " + constructor + ">"; }
  const lang::Value* callee() const override { return function.is_nil() ? nullptr : &function; }

  std::string constructor;  // the defmodel's name
  lang::Span span;          // the constructor call
  lang::Value function;     // what applying the model calls
  std::vector<ParamDecl> params;
  std::vector<Member> members;        // params and children, in declaration order
  std::vector<lang::Value> children;  // keeps the children alive
  Model* parent = nullptr;
  std::string segment;  // the name its parent's `let` gave it ("blocks.3"), or empty
  std::string named;    // a `named` override
};

inline Model* as_model(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<Model*>(v.as<lang::Opaque>()) : nullptr;
}

// What evaluation of one file builds: every model, and the random placeholders.
struct ModelState {
  std::vector<lang::Value> models;        // in creation order; keeps them alive
  std::vector<Model*> constructing;       // the constructor calls under way, innermost last
  std::vector<graph::NodeId> rng_inputs;  // one i64 key input per random initializer call
  size_t next_param_input = 0;
  std::map<graph::NodeId, std::string> param_names;  // a parameter's trace input -> its name
  std::vector<LoadScope> load_scopes;                // every with-loaded evaluated
  std::vector<size_t> active_loads;                  // those whose body is being evaluated, innermost last
};

// A file path written in `span`'s file, resolved as a loader path is: relative to the
// directory of that file. Absolute paths are kept as they are, a file:// location is its
// absolute path (E-LOAD-013 at `span` when it names none), and a location of any other
// scheme (s3://, https://, ...) is kept as written, for opening it to refuse it by name.
std::string resolve_data_path(const std::string& path, lang::Span span);

// Installs defmodel, defparam, named, the initializers (normal, uniform,
// truncated-normal), select, save-tensors and parameters; returns the state they fill while files evaluate.
std::shared_ptr<ModelState> install_models(lang::Interpreter& interp);

// The key of random stream `index` of the parameter at `path`, for run seed `seed`:
// initial values depend on neither declaration order nor gensyms.
uint64_t stream_key(uint64_t seed, std::string_view path, uint64_t index);

}  // namespace sx::model
