// `sexpgpu explain-error CODE`: the long explanation of a diagnostic code. Each part
// keeps the texts of its own codes (graph/codes.h); this gathers them.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "bundle/codes.h"
#include "cli/common.h"
#include "device/codes.h"
#include "graph/codes.h"
#include "io/codes.h"
#include "lang/codes.h"
#include "library/codes.h"
#include "model/codes.h"
#include "serve/codes.h"
#include "text/tokenizer.h"
#include "train/codes.h"

namespace sx::cli {
namespace {

// Every part's codes, by code.
std::vector<graph::CodeInfo> every_code() {
  std::vector<graph::CodeInfo> all;
  for (auto part : {lang::codes(), graph::codes(), model::codes(), io::codes(), device::codes(), train::codes(),
                    serve::codes(), library::codes(), bundle::codes(), text::codes()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.code < b.code; });
  return all;
}

bool same_code(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

}  // namespace

void add_explain_error_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("explain-error", "Explain a diagnostic code, such as E-EVAL-001");
  auto code = std::make_shared<std::string>();
  auto list = std::make_shared<bool>(false);
  command->add_option("code", *code, "The code, as printed in brackets after `error`");
  command->add_flag("--list", *list, "List every code with its title");
  command->callback([&action, code, list] {
    action = [code, list] {
      std::vector<graph::CodeInfo> codes = every_code();
      if (*list || code->empty()) {
        for (const auto& info : codes) fmt::print("{}  {}\n", info.code, info.title);
        return kExitOk;
      }
      auto info = std::find_if(codes.begin(), codes.end(), [&](const auto& c) { return same_code(c.code, *code); });
      if (info == codes.end()) {
        fmt::print(stderr, "sexpgpu explain-error: no code `{}`; `sexpgpu explain-error --list` lists them\n",
                   lang::shown_in_message(*code));
        return kExitUsage;
      }
      fmt::print("{}: {}\n\n{}\n", info->code, info->title, info->explanation);
      return kExitOk;
    };
  });
}

}  // namespace sx::cli
