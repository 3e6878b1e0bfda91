// `sexpgpu bundle FILE.sx -o DIR [--archive]`: the experiment as a folder (or archive)
// that runs anywhere; `sexpgpu new BUNDLE DIR`: a new experiment started from one; and
// the bundle given where a command takes a run file (bundle/bundle.h).
#include "bundle/bundle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "cli/common.h"
#include "train/export.h"

namespace sx::cli {

std::string run_file_of(const std::string& file, EvalFlags& flags) {
  if (!bundle::is_bundle(file)) return file;
  bundle::OpenBundle opened = bundle::open_bundle(file);
  if (flags.variant.empty()) flags.variant = opened.variant;
  for (const auto& [name, value] : opened.knobs) {
    const std::string prefix = name + "=";  // clang 14 lambdas cannot capture a structured binding
    bool given = std::any_of(flags.knobs.begin(), flags.knobs.end(),
                             [&](const std::string& knob) { return knob.starts_with(prefix); });
    if (!given) flags.knobs.push_back(prefix + value);
  }
  flags.allow_require.push_back(opened.folder);
  return opened.run_file;
}

bool resolve_run_file(std::string& file, EvalFlags& flags) {
  try {
    file = run_file_of(file, flags);
    return true;
  } catch (const lang::Error& e) {
    report(e);
    return false;
  }
}

void add_bundle_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("bundle", "Write FILE, its local modules and the files they read as one folder");
  auto options = std::make_shared<bundle::BundleOptions>();
  auto flags = std::make_shared<EvalFlags>();
  command->add_option("file", options->file, "The run file")->required();
  command
      ->add_option("-o", options->out, "The bundle's folder (the archive's name with --archive); never one that exists")
      ->required();
  command->add_flag("--archive", options->archive,
                    "Write one .tar.zst (.tar where zstd is not at hand) instead of a folder");
  // --variant and --knob are evaluated here, and recorded as the bundle's defaults.
  flags->add_to(*command);
  command->callback([&action, options, flags] {
    action = [options, flags] {
      return run_on_large_stack([&] {
        // Outlives the try: a diagnostic's spans point into the session's sources.
        train::Session session(session_options(*flags));
        try {
          bool color = lang::stderr_wants_color();
          auto warn = [color](const lang::Diagnostic& d) { std::fputs(lang::render(d, color).c_str(), stderr); };
          bundle::Written written = bundle::write_bundle(*options, session, warn);
          auto count = [](size_t n, std::string_view what) {
            return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
          };
          fmt::print("bundle: wrote {}: {}, {}, {}\n", written.path, count(written.sources, "source"),
                     count(written.data, "data file"), train::format_size(written.bytes));
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

void add_new_command(CLI::App& app, std::function<int()>& action) {
  auto* command =
      app.add_subcommand("new", "Start an experiment in DIR from BUNDLE: its sources to edit, its data where it is");
  auto from = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  command->add_option("bundle", *from, "The bundle: its folder, or its .tar or .tar.zst archive")->required();
  command->add_option("dir", *dir, "The experiment's folder; never one that exists")->required();
  command->callback([&action, from, dir] {
    action = [from, dir] {
      return run_on_large_stack([&] {
        try {
          std::string run_file = bundle::new_experiment(*from, *dir);
          std::printf("new: wrote %s; train it with: sexpgpu run %s\n", dir->c_str(), run_file.c_str());
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
