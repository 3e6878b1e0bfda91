// Knobs and variants (docs/training.md): `(defknob NAME DEFAULT "doc")` defines NAME as
// its default, a `--variant`'s value, or a `--knob NAME=VALUE` given on the command line,
// in rising precedence; `(defvariant NAME :knob value ...)` names a set of knob values.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lang/interp.h"

namespace sx::train {

struct KnobChoices {
  std::string variant;                       // --variant, or empty
  std::map<std::string, std::string> knobs;  // --knob NAME=VALUE, the value as written
};

struct Knob {
  std::string name;
  lang::Value value;
  std::string doc;
  std::string source;  // "default", "variant NAME" or "--knob"
};

struct KnobState {
  KnobChoices choices;
  std::map<std::string, std::map<std::string, lang::Value>> variants;  // by name, then knob
  std::vector<Knob> knobs;                                             // in definition order
};

// Installs defknob and defvariant for a file evaluated with `choices`.
std::shared_ptr<KnobState> install_knobs(lang::Interpreter& interp, KnobChoices choices);

// Evaluates the file's defvariant forms before the rest, so a variant can set knobs
// defined above it; then checks that every --knob and --variant named something
// (E-RUN-003, E-RUN-004). Call around Interpreter::load_file: before, then after.
void collect_variants(lang::Interpreter& interp, KnobState& state, const std::string& file);
void check_choices_used(const KnobState& state);
// Refuses any --knob (E-RUN-003) or --variant (E-RUN-004) where no file is evaluated
// (eval without --file, repl without a file): there is no defknob for them to set.
void check_no_choices(const KnobState& state);

}  // namespace sx::train
