// The one table of primitives: every family's rows, found by id or by name.
// Each id of PrimId has exactly one row; building the table checks it.
#include <fmt/format.h>

#include <string>
#include <unordered_map>

#include "graph/errors.h"
#include "graph/prims/families.h"

namespace sx::graph {
namespace {

struct Registry {
  std::vector<const Primitive*> all;  // by id
  std::unordered_map<std::string_view, const Primitive*> by_name;

  Registry() : all(kPrimitiveCount, nullptr) {
    for (auto family :
         {prims::source_primitives(), prims::unary_primitives(), prims::binary_primitives(), prims::reduce_primitives(),
          prims::shape_primitives(), prims::index_primitives(), prims::matmul_primitives(), prims::random_primitives(),
          prims::composite_primitives(), prims::composite_gradient_primitives(), prims::update_primitives()}) {
      for (const Primitive& p : family) {
        size_t at = index_of(p.id);
        if (at >= kPrimitiveCount || all[at]) {
          throw GraphError(fmt::format("the primitive '{}' has the id {}, which {}", p.name, at,
                                       at >= kPrimitiveCount ? "is out of range" : "another row has"));
        }
        if (p.composite() != (p.decompose != nullptr) || (p.grad_by_decomposition && !p.decompose)) {
          throw GraphError(
              fmt::format("the primitive '{}' is a composite exactly when it has a decomposition", p.name));
        }
        all[at] = &p;
        if (!by_name.emplace(p.name, &p).second) {
          throw GraphError(fmt::format("two primitives are named '{}'", p.name));
        }
      }
    }
    for (size_t at = 0; at < kPrimitiveCount; ++at) {
      if (!all[at]) throw GraphError(fmt::format("the primitive id {} has no row in src/graph/prims/", at));
    }
  }
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

}  // namespace

const Primitive& primitive(PrimId id) { return *registry().all.at(index_of(id)); }

const Primitive* find_primitive(std::string_view name) {
  auto it = registry().by_name.find(name);
  return it == registry().by_name.end() ? nullptr : it->second;
}

const Primitive& primitive(std::string_view name) {
  if (const Primitive* p = find_primitive(name)) return *p;
  std::vector<std::string> names;
  for (const Primitive* p : registry().all) names.emplace_back(p->name);
  throw GraphError(fmt::format("unknown op '{}'; the ops are: {}", name, join(names, ", ")));
}

std::span<const Primitive* const> all_primitives() { return registry().all; }

}  // namespace sx::graph
