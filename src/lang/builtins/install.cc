// Installs every family of builtins; each family lives in its own file.
#include "lang/builtins/builtins.h"

namespace sx::lang {

void install_builtins(Interpreter& interp) {
  install_number_builtins(interp);
  install_math_builtins(interp);
  install_list_builtins(interp);
  install_string_builtins(interp);
  install_misc_builtins(interp);
  install_tensor_builtins(interp);
  install_composite_builtins(interp);
  install_grad_builtins(interp);
}

}  // namespace sx::lang
