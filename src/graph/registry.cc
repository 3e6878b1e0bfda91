// The one table of primitives: every family's rows, found by name.
#include <fmt/format.h>

#include <string>
#include <unordered_map>

#include "graph/errors.h"
#include "graph/prims/families.h"

namespace sx::graph {
namespace {

struct Registry {
  std::vector<const Primitive*> all;
  std::unordered_map<std::string_view, const Primitive*> by_name;

  Registry() {
    for (auto family : {prims::source_primitives(), prims::unary_primitives(), prims::binary_primitives(),
                        prims::reduce_primitives(), prims::shape_primitives(), prims::index_primitives(),
                        prims::matmul_primitives(), prims::random_primitives()}) {
      for (const Primitive& p : family) {
        all.push_back(&p);
        by_name.emplace(p.name, &p);
      }
    }
  }
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

}  // namespace

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
