// Names, sizes and promotion of dtypes (see dtype.h for the rules).
#include "graph/dtype.h"

namespace sx::graph {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
    case DType::u8: return 1;
    case DType::u16: return 2;
  }
  return 0;
}

bool is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f64; }

bool is_integer(DType dtype) {
  return dtype == DType::i32 || dtype == DType::i64 || dtype == DType::u8 || dtype == DType::u16;
}

bool is_unsigned(DType dtype) { return dtype == DType::u8 || dtype == DType::u16; }

namespace {

// Rank of an integer dtype in the chain u8 < u16 < i32 < i64.
int integer_rank(DType dtype) {
  switch (dtype) {
    case DType::u8: return 0;
    case DType::u16: return 1;
    case DType::i32: return 2;
    default: return 3;
  }
}

}  // namespace

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  if (is_float(a) && is_float(b)) {
    return (a == DType::f64 || b == DType::f64) ? DType::f64 : DType::f32;
  }
  if (is_float(a)) return a;
  if (is_float(b)) return b;
  return integer_rank(a) >= integer_rank(b) ? a : b;
}

TypedDType promote(TypedDType a, TypedDType b) {
  if (a.weak == b.weak) return {promote(a.dtype, b.dtype), a.weak};
  const TypedDType& weak = a.weak ? a : b;
  const TypedDType& strong = a.weak ? b : a;
  if (is_float(weak.dtype) && !is_float(strong.dtype)) return {DType::f32, false};
  if (is_integer(weak.dtype) && strong.dtype == DType::boolean) return {DType::i32, false};
  return {strong.dtype, false};
}

}  // namespace sx::graph
