// Selectors: which parameters an optimizer group (or `explain --select`) means, by tag
// or by path pattern, combined with :not, :all and :any. Frozen parameters match none.
#pragma once

#include <string>
#include <vector>

#include "lang/value.h"
#include "model/paths.h"

namespace sx::model {

class Selector final : public lang::Opaque {
 public:
  enum class Kind { Tag, Path, Not, All, Any };
  Selector(Kind kind, std::string text, std::vector<lang::Value> operands)
      : kind(kind), text(std::move(text)), operands(std::move(operands)) {}
  std::string type_label() const override { return "a selector"; }
  std::string print() const override;
  bool matches(const Parameter& param) const;

  Kind kind;
  std::string text;                   // the tag, or the path pattern
  std::vector<lang::Value> operands;  // selectors, for :not :all :any
};

inline const Selector* as_selector(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const Selector*>(v.as<lang::Opaque>()) : nullptr;
}

// A path pattern: `*` matches within one segment, `**` across segments.
bool path_matches(std::string_view pattern, std::string_view path);

void install_select(lang::Interpreter& interp);

}  // namespace sx::model
