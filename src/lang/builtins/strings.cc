// String, symbol and keyword builtins.
#include "lang/builtins/builtins.h"
#include "lang/printer.h"

namespace sx::lang {

void install_string_builtins(Interpreter& in) {
  install_rows(in, {
      {"str", 0, Builtin::kVariadic, [](Args& a) {
         std::string out;
         for (size_t i = 0; i < a.size(); ++i) out += display(a[i]);
         return make_string(std::move(out));
       }},
  });
}

}  // namespace sx::lang
