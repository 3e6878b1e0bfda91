// The printer: values as text the reader reads back (where a value has a written form).
#pragma once

#include <string>

#include "lang/value.h"

namespace sx::lang {

// `(1 2.5 :k "s")`, `[in out]`, `true`; floats in the shortest form that reads back exactly.
std::string print(const Value& value);
// As `print`, but strings without quotes: what `str`, `format` and `print` show a person.
std::string display(const Value& value);
// As `print`, as a diagnostic quotes it: a long text cut by shown_in_message, with its length.
std::string printed_in_message(const Value& value);
// A float in the shortest form that reads back exactly, always with a `.` or exponent;
// the infinities and NaN as `+inf.0`, `-inf.0` and `+nan.0`.
std::string format_float(double value);

}  // namespace sx::lang
