// `sexpgpu explain-error CODE`: the long explanation of a diagnostic code.
#include <fmt/format.h>

#include <cstdio>

#include "cli/common.h"
#include "lang/codes.h"

namespace sx::cli {

void add_explain_error_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("explain-error", "Explain a diagnostic code, such as E-EVAL-001");
  auto code = std::make_shared<std::string>();
  auto list = std::make_shared<bool>(false);
  command->add_option("code", *code, "The code, as printed in brackets after `error`");
  command->add_flag("--list", *list, "List every code with its title");
  command->callback([&action, code, list] {
    action = [code, list] {
      if (*list || code->empty()) {
        for (const auto& info : lang::all_codes()) fmt::print("{}  {}\n", info.code, info.title);
        return kExitOk;
      }
      const auto* info = lang::find_code(*code);
      if (!info) {
        fmt::print(stderr, "sexpgpu explain-error: no code `{}`; `sexpgpu explain-error --list` lists them\n", *code);
        return kExitUsage;
      }
      fmt::print("{}: {}\n\n{}\n", info->code, info->title, info->explanation);
      return kExitOk;
    };
  });
}

}  // namespace sx::cli
