// Element types of tensors, their names and sizes, and the promotion rules
// that pick the dtype of an elementwise op whose operands differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sx::graph {

enum class DType : uint8_t { f32, bf16, f64, i32, i64, boolean, u8, u16 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::bf16,    DType::f64, DType::i32,
                                       DType::i64, DType::boolean, DType::u8,  DType::u16};

// "f32", "bf16", "f64", "i32", "i64", "bool", "u8", "u16".
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);

bool is_float(DType dtype);
// Signed or unsigned integer; bool is not an integer.
bool is_integer(DType dtype);
bool is_unsigned(DType dtype);

// Promotion of two strongly typed operands:
//   same dtype -> it; bool with anything -> the other; two floats -> the wider
//   (f32 with bf16 -> f32, anything with f64 -> f64); int with float -> the
//   float; two ints -> the narrowest that holds both (u8,u16 -> u16;
//   u8/u16 with i32 -> i32; anything with i64 -> i64).
DType promote(DType a, DType b);

// A dtype with its weak flag: a weak value is a literal scalar of the
// program (like a Python scalar in JAX) and does not widen a tensor.
struct TypedDType {
  DType dtype;
  bool weak = false;
};

// Promotion with weak scalars: when exactly one operand is weak, the strong
// dtype wins, except a weak float with a strong int or bool gives f32 and a
// weak int with a strong bool gives i32. Two weak or two strong operands
// promote as above. The result is weak only when both operands are.
TypedDType promote(TypedDType a, TypedDType b);

}  // namespace sx::graph
