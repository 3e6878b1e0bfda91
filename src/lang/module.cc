// `require`: modules of the standard library and files relative to the requiring file,
// each loaded once, cycles reported; and which library module defines a name.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "lang/interp.h"

namespace sx::lang {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kLibraryPrefix = "sexpgpu/";
constexpr std::string_view kLibraryFolder = "sexpgpu";  // the prefix's folder in each library directory

std::string with_extension(std::string path) {
  if (fs::path(path).extension().empty()) path += ".sx";
  return path;
}

// Whether `path` is a regular file, by the non-throwing std::filesystem calls: a name too
// long for the system, or a folder that cannot be searched, is E-EVAL-012 naming the
// module and the path (each cut to a readable length), never an exception that aborts.
bool is_module_file(const fs::path& path, const std::string& name, Span span) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    fail("E-EVAL-012", span,
         fmt::format("cannot load \"{}\": {}: {}", shown_in_message(name), shown_in_message(path.string()),
                     ec.message()),
         "a module is a .sx file, named relative to the file that requires it or as \"sexpgpu/NAME\"");
  }
  return fs::is_regular_file(status);
}

// `path` made absolute and normal, without touching the file system beyond the current
// directory: the containment rule of require is lexical, so links inside a folder work.
fs::path absolute_normal(const fs::path& path) {
  std::error_code ec;
  fs::path given = path.empty() ? fs::path(".") : path;  // the folder of a file named without one
  fs::path absolute = fs::absolute(given, ec);
  fs::path normal = (ec ? given : absolute).lexically_normal();
  return normal.has_filename() || normal == normal.root_path() ? normal : normal.parent_path();  // "a/b/" as "a/b"
}

// Whether `path` lies under `folder` (or is it), both absolute and normal.
bool lies_under(const fs::path& path, const fs::path& folder) {
  fs::path relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != "..";
}

// Refuses (E-EVAL-021) a required file that lies, lexically, outside `root` (absolute and
// normal) and every folder (or file) in `allowed`.
void check_contained(const fs::path& path, const fs::path& root, const std::vector<std::string>& allowed,
                     const std::string& name, Span span) {
  fs::path file = absolute_normal(path);
  if (lies_under(file, root)) return;
  for (const auto& folder : allowed) {
    if (lies_under(file, absolute_normal(folder))) return;
  }
  fail("E-EVAL-021", span,
       fmt::format("cannot require \"{}\": {} is outside {}, the folder requires may read", shown_in_message(name),
                   shown_in_message(file.string()), shown_in_message(root.string())),
       "move the file under that folder, or allow its folder with --allow-require FOLDER (or SEXPGPU_ALLOW_REQUIRE)");
}

// The names a module file's top level defines with defun, defmacro, defvar or defmodel;
// none when it cannot be read.
std::vector<std::string> top_level_definitions(const std::string& path, const ReaderLimits& limits) {
  std::vector<std::string> names;
  SourceMap sources;
  try {
    for (const auto& form : read_forms(load_source_file(sources, path, limits), limits)) {
      const Cons* head = as_cons(form.value);
      const Symbol* keyword = head ? as_symbol(head->car) : nullptr;
      const Cons* rest = head ? next(head) : nullptr;
      const Symbol* defined = rest ? as_symbol(rest->car) : nullptr;
      if (!keyword || !defined) continue;
      if (keyword->name == "defun" || keyword->name == "defmacro" || keyword->name == "defvar" ||
          keyword->name == "defmodel") {
        names.push_back(defined->name);
      }
    }
  } catch (const Error&) {
    return {};
  }
  return names;
}

}  // namespace

std::vector<std::string> Interpreter::library_modules_defining(const std::string& name) {
  if (!library_names_) {
    library_names_.emplace();
    std::set<std::string> seen;  // a module in an earlier directory hides one in a later, as in require
    for (const auto& dir : options_.library_dirs) {
      const fs::path root = fs::path(dir) / kLibraryFolder;
      std::vector<fs::path> files;
      std::error_code ec;
      for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec)) {
        if (it->path().extension() == ".sx") files.push_back(it->path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        std::string module = (fs::path(kLibraryFolder) / file.lexically_relative(root)).replace_extension().string();
        if (!seen.insert(module).second) continue;
        for (const auto& defined : top_level_definitions(file.string(), options_.reader_limits)) {
          auto& modules = (*library_names_)[defined];
          if (std::find(modules.begin(), modules.end(), module) == modules.end()) modules.push_back(module);
        }
      }
    }
    for (auto& [defined, modules] : *library_names_) std::sort(modules.begin(), modules.end());
  }
  auto found = library_names_->find(name);
  return found == library_names_->end() ? std::vector<std::string>{} : found->second;
}

Ref<Env> Interpreter::require_module(const std::string& name, Span span, Env& from) {
  fs::path path;
  fs::path root;  // what the module's own relative requires must stay under
  if (name.starts_with(kLibraryPrefix)) {
    std::string relative = with_extension(name);
    for (const auto& dir : options_.library_dirs) {
      if (is_module_file(fs::path(dir) / relative, name, span)) {
        path = fs::path(dir) / relative;
        root = absolute_normal(dir);
        break;
      }
    }
    if (path.empty()) {
      std::string searched;
      for (const auto& dir : options_.library_dirs) searched += (searched.empty() ? "" : ", ") + dir;
      fail("E-EVAL-012", span, fmt::format("no library module \"{}\"", shown_in_message(name)),
           fmt::format("the library is searched in: {}", searched.empty() ? "(no directories)" : searched));
    }
  } else {
    const std::string& base = from.module().module_path;
    fs::path dir;
    if (base.empty()) {
      std::error_code ec;
      dir = fs::current_path(ec);
      if (ec) {
        fail("E-EVAL-012", span,
             fmt::format("cannot load \"{}\": the current directory: {}", shown_in_message(name), ec.message()),
             "require it from a file, whose directory relative paths are resolved from");
      }
    } else {
      dir = fs::path(base).parent_path();
    }
    root = absolute_normal(from.module().require_root.empty() ? dir : fs::path(from.module().require_root));
    path = dir / with_extension(name);
    // Before the file is looked at: what is outside is neither read nor said to exist.
    check_contained(path, root, options_.require_allowed, name, span);
    if (!is_module_file(path, name, span)) {
      fail("E-EVAL-012", span,
           fmt::format("cannot find \"{}\": no file {}", shown_in_message(name),
                       shown_in_message(path.lexically_normal().string())),
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
        if (in_cycle) chain += shown_in_message(fs::path(loading).filename().string()) + " -> ";
      }
      fail("E-EVAL-013", span,
           fmt::format("require cycle: {}{}", chain, shown_in_message(fs::path(key).filename().string())),
           "move what the modules share into a module that requires neither");
    }
    return found->second.env;
  }
  Ref<Env> env = new_top_level(path.string());
  env->require_root = root.string();
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
    e.diagnostic().calls.push_back({fmt::format("module \"{}\"", shown_in_message(name)), span});
    throw;
  }
  modules_[key].loading = false;
  return env;
}

std::vector<std::string> Interpreter::module_files() const {
  std::vector<std::string> files;
  for (const auto& [path, module] : modules_) {
    if (!module.loading) files.push_back(path);
  }
  return files;
}

}  // namespace sx::lang
