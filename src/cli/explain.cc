// `sexpgpu explain FILE.sx`: every parameter of the run (path, shape, dtype, trainable,
// tags, where its value comes from), then totals; --json for tools, --select to test a
// selector against the paths.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "graph/shape.h"
#include "lang/printer.h"
#include "model/load.h"
#include "model/select.h"

namespace sx::cli {
namespace {

std::string source_text(const model::ParamDecl& decl) {
  if (decl.load) return fmt::format("{} : {}", decl.load->first, decl.load->second);
  std::string text = decl.init_source;
  for (auto& c : text) c = c == '\n' ? ' ' : c;
  return text.size() > 48 ? text.substr(0, 45) + "..." : text;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) bytes /= 1024, ++unit;
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", bytes, units[unit]);
}

void print_table(const model::ParameterTable& table) {
  std::vector<std::array<std::string, 6>> rows{{"path", "shape", "dtype", "trainable", "tags", "source"}};
  int64_t total = 0, trainable = 0;
  double bytes = 0;
  for (const auto& p : table.params) {
    const auto& d = *p.decl;
    rows.push_back({p.path, graph::shape_str(d.shape, " "), std::string(graph::dtype_name(d.dtype)),
                    d.trainable ? "yes" : "no", d.tags.empty() ? "-" : join(d.tags), source_text(d)});
    total += graph::numel(d.shape);
    if (d.trainable) trainable += graph::numel(d.shape);
    bytes += static_cast<double>(graph::numel(d.shape) * static_cast<int64_t>(graph::dtype_size(d.dtype)));
  }
  std::array<size_t, 6> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], width[c]);
    }
    fmt::print("{}\n", line);
  }
  fmt::print("\n{} parameters, {} values ({} trainable), {}\n", table.params.size(), total, trainable,
             bytes_text(bytes));
}

void print_json(const model::ParameterTable& table) {
  auto identities = model::load_identities(table);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& p : table.params) {
    const auto& d = *p.decl;
    nlohmann::ordered_json row{
        {"path", p.path},           {"shape", d.shape}, {"dtype", graph::dtype_name(d.dtype)},
        {"trainable", d.trainable}, {"tags", d.tags},   {"numerics", d.numerics_high ? "high" : "default"}};
    if (d.load) {
      const auto& identity = identities[d.load->first];
      row["load"] = {
          {"file", d.load->first}, {"tensor", d.load->second}, {"size", identity.size}, {"sha256", identity.sha256}};
    } else row["init"] = d.init_source;
    out.push_back(std::move(row));
  }
  fmt::print("{}\n", out.dump(2));
}

}  // namespace

void add_explain_command(CLI::App& app, std::function<int()>& action) {
  auto* command =
      app.add_subcommand("explain", "List every parameter of FILE.sx: path, shape, dtype, trainable, tags, source");
  auto file = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto json = std::make_shared<bool>(false);
  auto selector = std::make_shared<std::string>();
  command->add_option("file", *file, "The run file")->required();
  command->add_flag("--json", *json, "Print a JSON array, one object per parameter");
  command->add_option("--select", *selector, "Print the paths this selector matches, e.g. '(select :tag :norm)'");
  flags->add_to(*command);
  command->callback([&action, file, flags, json, selector] {
    action = [file, flags, json, selector] {
      return run_on_large_stack([&] {
        if (!resolve_run_file(*file, *flags)) return kExitDiagnosed;
        train::Session session(session_options(*flags));
        try {
          session.load(*file);
          if (!selector->empty()) {
            lang::Value value = session.interp().eval_text(*selector, "--select", session.top());
            const auto* chosen = model::as_selector(value);
            if (!chosen) {
              lang::fail("E-EVAL-004", {},
                         fmt::format("--select takes a selector such as (select :tag :norm), not `{}`",
                                     lang::printed_in_message(value)));
            }
            for (const auto& p : session.params().params) {
              if (chosen->matches(p)) fmt::print("{}\n", p.path);
            }
            return kExitOk;
          }
          if (*json) print_json(session.params());
          else print_table(session.params());
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
