// Random initializers: normal, truncated-normal and uniform. Each draws from a key input
// of its own, which a parameter's closed initializer turns into key.0, key.1, ... and
// which stream_key fills from the run's seed and the parameter's path.
#include <fmt/format.h>

#include "graph/errors.h"
#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"
#include "model/model.h"

namespace sx::model {
namespace {

using graph::Builder;
using graph::NodeId;
using lang::Args;
using lang::Value;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Options {
  graph::Shape shape;
  graph::DType dtype = graph::DType::f32;
  double a = 0, b = 1;  // mean and std, or low and high
};

Options options(Args& a, std::string_view first, std::string_view second, double first_default, double second_default) {
  auto kw = a.keywords();
  Options o;
  o.shape = lang::shape_arg(a, 0);
  o.a = kw.count(std::string(first)) ? a.number(kw[std::string(first)]) : first_default;
  o.b = kw.count(std::string(second)) ? a.number(kw[std::string(second)]) : second_default;
  if (kw.count("dtype")) o.dtype = lang::dtype_arg(a, kw["dtype"]);
  if (!graph::is_float(o.dtype)) a.type_error(kw["dtype"], "a floating-point dtype");
  return o;
}

NodeId new_key(const std::shared_ptr<ModelState>& state, Builder& b) {
  NodeId key = b.input(fmt::format("rng.{}", state->rng_inputs.size()), {}, graph::DType::i64);
  state->rng_inputs.push_back(key);
  return key;
}

Value normal(const std::shared_ptr<ModelState>& state, Args& a) {
  Options o = options(a, "mean", "std", 0.0, 1.0);
  return lang::trace(a, [&](Builder& b) {
    NodeId z = b.random_normal(new_key(state, b), o.shape, o.dtype);
    return b.add(b.mul(z, b.literal(o.b)), b.literal(o.a));
  });
}

// Normal draws outside [-2, 2] standard deviations are redrawn, four times, from
// fresh streams, then clamped: a fixed graph, the same bits on every device.
Value truncated_normal(const std::shared_ptr<ModelState>& state, Args& a) {
  Options o = options(a, "mean", "std", 0.0, 1.0);
  return lang::trace(a, [&](Builder& b) {
    NodeId z = b.random_normal(new_key(state, b), o.shape, o.dtype);
    for (int round = 0; round < 4; ++round) {
      NodeId outside = b.gt(b.abs(z), b.literal(2.0));
      z = b.where(outside, b.random_normal(new_key(state, b), o.shape, o.dtype), z);
    }
    z = b.max(b.min(z, b.literal(2.0)), b.literal(-2.0));
    return b.add(b.mul(z, b.literal(o.b)), b.literal(o.a));
  });
}

Value uniform(const std::shared_ptr<ModelState>& state, Args& a) {
  Options o = options(a, "low", "high", 0.0, 1.0);
  return lang::trace(a, [&](Builder& b) {
    NodeId u = b.random_uniform(new_key(state, b), o.shape, o.dtype);
    return b.add(b.mul(u, b.literal(o.b - o.a)), b.literal(o.a));
  });
}

}  // namespace

uint64_t stream_key(uint64_t seed, std::string_view path, uint64_t index) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the path
  for (char c : path) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return splitmix64(seed ^ splitmix64(h ^ splitmix64(index)));
}

void install_initializers(lang::Interpreter& in, const std::shared_ptr<ModelState>& state) {
  // One row per initializer: name, function, lambda list, what it does, an example.
  auto define = [&](std::string_view name, Value (*fn)(const std::shared_ptr<ModelState>&, Args&),
                    std::string_view params, std::string_view summary, std::string_view example) {
    lang::BuiltinDoc doc{std::string(params), std::string(summary), std::string(example), "Parameter initializers"};
    in.define_native(
        name, [state, fn](Args& a) { return fn(state, a); }, std::move(doc));
  };
  define("normal", normal, "(shape &key (mean 0.0) (std 1.0) dtype)",
         "Normal random numbers for a defparam, drawn from the stream of the run's seed and the parameter's path.",
         "(shape (normal [2 3] :std 0.02))\n;; => [2 3]");
  define("truncated-normal", truncated_normal, "(shape &key (mean 0.0) (std 1.0) dtype)",
         "As `normal`, but draws beyond 2 standard deviations are redrawn (then clamped).",
         "(shape (truncated-normal [4] :std 0.02))\n;; => [4]");
  define("uniform", uniform, "(shape &key (low 0.0) (high 1.0) dtype)",
         "Random numbers uniform in [low, high) for a defparam.",
         "(dtype (uniform [3] :low -0.1 :high 0.1))\n;; => :f32");
}

}  // namespace sx::model
