// `require`: modules of the standard library and files relative to the requiring file,
// each loaded once, cycles reported.
#include <fmt/format.h>

#include <filesystem>

#include "lang/interp.h"

namespace sx::lang {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kLibraryPrefix = "sexpgpu/";

std::string with_extension(std::string path) {
  if (fs::path(path).extension().empty()) path += ".sx";
  return path;
}

}  // namespace

Ref<Env> Interpreter::require_module(const std::string& name, Span span, Env& from) {
  fs::path path;
  if (name.starts_with(kLibraryPrefix)) {
    std::string relative = with_extension(name);
    for (const auto& dir : options_.library_dirs) {
      if (fs::is_regular_file(fs::path(dir) / relative)) {
        path = fs::path(dir) / relative;
        break;
      }
    }
    if (path.empty()) {
      std::string searched;
      for (const auto& dir : options_.library_dirs) searched += (searched.empty() ? "" : ", ") + dir;
      fail("E-EVAL-012", span, fmt::format("no library module \"{}\"", name),
           fmt::format("the library is searched in: {}", searched.empty() ? "(no directories)" : searched));
    }
  } else {
    const std::string& base = from.module().module_path;
    fs::path dir = base.empty() ? fs::current_path() : fs::path(base).parent_path();
    path = dir / with_extension(name);
    if (!fs::is_regular_file(path)) {
      fail("E-EVAL-012", span, fmt::format("cannot find \"{}\": no file {}", name, path.lexically_normal().string()),
           "a relative path is resolved from the directory of the file that requires it");
    }
  }
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  std::string key = (ec ? path : canonical).string();

  auto found = modules_.find(key);
  if (found != modules_.end()) {
    if (found->second.loading) {
      std::string chain;
      bool in_cycle = false;
      for (const auto& loading : loading_) {
        if (loading == key) in_cycle = true;
        if (in_cycle) chain += fs::path(loading).filename().string() + " -> ";
      }
      fail("E-EVAL-013", span, fmt::format("require cycle: {}{}", chain, fs::path(key).filename().string()),
           "move what the modules share into a module that requires neither");
    }
    return found->second.env;
  }
  Ref<Env> env = new_top_level(path.string());
  modules_[key] = Module{env, true};
  loading_.push_back(key);
  struct PopLoading {
    std::vector<std::string>& stack;
    ~PopLoading() { stack.pop_back(); }
  } pop{loading_};
  try {
    const SourceFile& file = load_source_file(sources_, path.string(), options_.reader_limits);
    eval_forms(read_forms(file, options_.reader_limits), *env);
  } catch (Error& e) {
    modules_.erase(key);
    e.diagnostic().calls.push_back({fmt::format("module \"{}\"", name), span});
    throw;
  }
  modules_[key].loading = false;
  return env;
}

}  // namespace sx::lang
