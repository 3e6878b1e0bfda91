// `sexpgpu doc [NAME...]`: what `(doc NAME)` shows, from the command line; `(help)`
// without a name. `--markdown` prints docs/builtins.md, generated from the builtins' own
// rows, and fails naming any builtin whose row lacks its documentation.
#include "lang/doc.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/common.h"

namespace sx::cli {

void add_doc_command(CLI::App& app, std::function<int()>& action) {
  auto* command =
      app.add_subcommand("doc", "Show what a builtin, special form or library function is: (doc NAME) in the REPL");
  auto names = std::make_shared<std::vector<std::string>>();
  auto markdown = std::make_shared<bool>(false);
  command->add_option("name", *names, "The names to document; without one, an overview of every builtin");
  command->add_flag("--markdown", *markdown, "Print docs/builtins.md: every builtin, its lambda list and an example");
  command->callback([&action, names, markdown] {
    action = [names, markdown] {
      return run_on_large_stack([&] {
        train::Session session(session_options(EvalFlags{}));
        try {
          session.start_empty();
          if (*markdown) {
            auto missing = lang::undocumented_builtins(session.interp());
            if (!missing.empty()) {
              std::string list;
              for (const auto& name : missing) list += (list.empty() ? "" : ", ") + name;
              fmt::print(stderr,
                         "sexpgpu doc --markdown: these builtins have no lambda list, summary or example in their "
                         "row: {}\n",
                         list);
              return kExitDiagnosed;
            }
            fmt::print("{}", lang::builtins_markdown(session.interp()));
            return kExitOk;
          }
          if (names->empty()) fmt::print("{}\n", lang::general_help(session.interp()));
          for (size_t i = 0; i < names->size(); ++i) {
            fmt::print("{}{}\n", i ? "\n" : "", lang::documentation_of(session.interp(), (*names)[i], session.top()));
          }
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
