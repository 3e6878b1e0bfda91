// List, vector and plist builtins.
#include "lang/builtins/builtins.h"

namespace sx::lang {

void install_list_builtins(Interpreter& in) {
  install_rows(in, {
      {"list", 0, Builtin::kVariadic, [](Args& a) { return list(std::vector<Value>(a.values.begin(), a.values.end())); }},
  });
}

}  // namespace sx::lang
