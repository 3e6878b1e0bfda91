// Every primitive's reference kernel on small cases checked by hand. The
// table is keyed by primitive name, and a test fails for a primitive with a
// sample record (samples.h: every registered one) and no case.
#include <cmath>
#include <map>

#include "graph/composite.h"
#include "graph/index_error.h"
#include "graph/primitive.h"
#include "samples/samples.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::eval;
using testing::expect_tensor;
using testing::tensor;
constexpr DType f32 = DType::f32, f64 = DType::f64, i32 = DType::i32, i64 = DType::i64, boolean = DType::boolean;

Tensor unary(std::string_view op, std::vector<double> values, DType dtype = f32) {
  return eval(
      [&](Builder& b) { return b.op(op, {b.constant(tensor(dtype, {static_cast<int64_t>(values.size())}, values))}); });
}

Tensor binary(std::string_view op, std::vector<double> x, std::vector<double> y, DType dtype = f32) {
  auto n = static_cast<int64_t>(x.size());
  return eval([&](Builder& b) {
    return b.op(op, {b.constant(tensor(dtype, {n}, x)), b.constant(tensor(dtype, {n}, y))});
  });
}

const std::map<std::string, std::function<void()>>& kernel_cases() {
  static const std::map<std::string, std::function<void()>> cases = {
      {"input",
       [] {
         Graph g;
         Builder b(g);
         b.output("y", b.input("x", {2}, f32));
         expect_tensor(testing::run(g, {tensor(f32, {2}, {1, 2})})[0], f32, {2}, {1, 2});
       }},
      {"constant", [] { expect_tensor(eval([](Builder& b) { return b.scalar(2.5, f64); }), f64, {}, {2.5}); }},
      {"neg",
       [] {
         expect_tensor(unary("neg", {1, -2}), f32, {2}, {-1, 2});
         expect_tensor(unary("neg", {-2147483648.0}, i32), i32, {1}, {-2147483648.0});  // wraps
       }},
      {"abs",
       [] {
         expect_tensor(unary("abs", {-1.5, 2}), f32, {2}, {1.5, 2});
       }},
      {"sign",
       [] {
         expect_tensor(unary("sign", {-3, 0, 7}, i32), i32, {3}, {-1, 0, 1});
       }},
      {"exp",
       [] {
         expect_tensor(unary("exp", {0, 1}), f32, {2}, {1, std::exp(1.0)});
       }},
      {"log",
       [] {
         expect_tensor(unary("log", {1, std::exp(2.0)}), f32, {2}, {0, 2}, 1e-5);
       }},
      {"sqrt",
       [] {
         expect_tensor(unary("sqrt", {4, 9}), f32, {2}, {2, 3});
       }},
      {"rsqrt",
       [] {
         expect_tensor(unary("rsqrt", {4, 0.25}), f32, {2}, {0.5, 2});
       }},
      {"sin",
       [] {
         expect_tensor(unary("sin", {0, M_PI / 2}, f64), f64, {2}, {0, 1});
       }},
      {"cos",
       [] {
         expect_tensor(unary("cos", {0, M_PI}, f64), f64, {2}, {1, -1});
       }},
      {"tanh",
       [] {
         expect_tensor(unary("tanh", {0, 1}, f64), f64, {2}, {0, std::tanh(1.0)});
       }},
      {"erf",
       [] {
         expect_tensor(unary("erf", {0, 1}, f64), f64, {2}, {0, 0.8427007929497149});
       }},
      {"logistic",
       [] {
         expect_tensor(unary("logistic", {0, std::log(3.0)}, f64), f64, {2}, {0.5, 0.75});
       }},
      {"logical_not",
       [] {
         expect_tensor(unary("logical_not", {0, 1}, boolean), boolean, {2}, {1, 0});
       }},
      {"stop_gradient",
       [] {
         expect_tensor(unary("stop_gradient", {-0.0, 3}, f64), f64, {2}, {-0.0, 3});
         expect_tensor(unary("stop_gradient", {0, 1}, boolean), boolean, {2}, {0, 1});
       }},
      {"add",
       [] {
         expect_tensor(binary("add", {1, 2}, {10, 20}), f32, {2}, {11, 22});
         expect_tensor(binary("add", {2147483647.0}, {1}, i32), i32, {1}, {-2147483648.0});  // wraps
       }},
      {"sub",
       [] {
         expect_tensor(binary("sub", {1, 2}, {10, 20}), f32, {2}, {-9, -18});
       }},
      {"mul",
       [] {
         expect_tensor(binary("mul", {3, -2}, {4, 5}), f32, {2}, {12, -10});
       }},
      {"div",
       [] {
         expect_tensor(binary("div", {1, 3}, {4, 2}), f32, {2}, {0.25, 1.5});
         expect_tensor(binary("div", {7, -7, 5}, {2, 2, 0}, i32), i32, {3}, {3, -3, 0});  // truncates; /0 gives 0
       }},
      {"pow",
       [] {
         expect_tensor(binary("pow", {2, 9}, {3, 0.5}), f32, {2}, {8, 3});
       }},
      {"max",
       [] {
         expect_tensor(binary("max", {1, 5, NAN}, {3, 2, 0}), f32, {3}, {3, 5, NAN});
       }},
      {"min",
       [] {
         expect_tensor(binary("min", {1, 5}, {3, 2}), f32, {2}, {1, 2});
       }},
      {"eq",
       [] {
         expect_tensor(binary("eq", {1, 2}, {1, 3}), boolean, {2}, {1, 0});
       }},
      {"ne",
       [] {
         expect_tensor(binary("ne", {1, 2}, {1, 3}), boolean, {2}, {0, 1});
       }},
      {"lt",
       [] {
         expect_tensor(binary("lt", {1, 2, 3}, {2, 2, 2}), boolean, {3}, {1, 0, 0});
       }},
      {"le",
       [] {
         expect_tensor(binary("le", {1, 2, 3}, {2, 2, 2}), boolean, {3}, {1, 1, 0});
       }},
      {"gt",
       [] {
         expect_tensor(binary("gt", {1, 2, 3}, {2, 2, 2}), boolean, {3}, {0, 0, 1});
       }},
      {"ge",
       [] {
         expect_tensor(binary("ge", {1, 2, 3}, {2, 2, 2}), boolean, {3}, {0, 1, 1});
       }},
      {"logical_and",
       [] {
         expect_tensor(binary("logical_and", {0, 1, 1}, {1, 0, 1}, boolean), boolean, {3}, {0, 0, 1});
       }},
      {"logical_or",
       [] {
         expect_tensor(binary("logical_or", {0, 1, 0}, {1, 0, 0}, boolean), boolean, {3}, {1, 1, 0});
       }},
      {"where",
       [] {
         Tensor t = eval([](Builder& b) {
           return b.where(b.constant(tensor(boolean, {3}, {1, 0, 1})), b.constant(tensor(f32, {3}, {1, 2, 3})),
                          b.constant(tensor(f32, {3}, {-1, -2, -3})));
         });
         expect_tensor(t, f32, {3}, {1, -2, 3});
       }},
      {"cast",
       [] {
         expect_tensor(eval([](Builder& b) {
                         return b.cast(b.constant(tensor(f32, {3}, {1.7, -1.7, 3e10})), i32);
                       }),
                       i32, {3}, {1, -1, 2147483647.0});  // truncates, saturates
         // 1 + 2^-8 is halfway between two bf16 values: rounds to even (1).
         expect_tensor(eval([](Builder& b) {
                         return b.cast(b.constant(tensor(f32, {2}, {1.00390625, 1.01171875})), DType::bf16);
                       }),
                       DType::bf16, {2}, {1.0, 1.015625});
       }},
      {"sum",
       [] {
         Tensor x = tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) { return b.sum(b.constant(x), {1}); }), f32, {2}, {6, 15});
         expect_tensor(eval([&](Builder& b) { return b.sum(b.constant(x), {0}, true); }), f32, {1, 3}, {5, 7, 9});
         expect_tensor(eval([&](Builder& b) { return b.sum(b.constant(x), {}); }), f32, {}, {21});
       }},
      {"reduce_max",
       [] {
         Tensor x = tensor(f32, {2, 3}, {1, 9, 3, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) { return b.reduce_max(b.constant(x), {-1}); }), f32, {2}, {9, 6});
       }},
      {"reduce_min",
       [] {
         Tensor x = tensor(i32, {2, 3}, {1, 9, 3, 4, 0, 6});
         expect_tensor(eval([&](Builder& b) { return b.reduce_min(b.constant(x), {0, 1}); }), i32, {}, {0});
       }},
      {"argmax",
       [] {
         Tensor x = tensor(f32, {2, 3}, {1, 9, 9, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) { return b.argmax(b.constant(x), {1}); }), i64, {2}, {1, 2});
         expect_tensor(eval([&](Builder& b) { return b.argmax(b.constant(x), {0, 1}); }), i64, {}, {1});
       }},
      {"argmin",
       [] {
         Tensor x = tensor(f32, {2, 2}, {3, 1, 0, 5});
         expect_tensor(eval([&](Builder& b) { return b.argmin(b.constant(x), {0}, true); }), i64, {1, 2}, {1, 0});
       }},
      {"reshape",
       [] {
         Tensor x = tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) {
                         return b.reshape(b.constant(x), {3, -1});
                       }),
                       f32, {3, 2}, {1, 2, 3, 4, 5, 6});
       }},
      {"transpose",
       [] {
         Tensor x = tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) {
                         return b.transpose(b.constant(x), {1, 0});
                       }),
                       f32, {3, 2}, {1, 4, 2, 5, 3, 6});
       }},
      {"broadcast",
       [] {
         Tensor x = tensor(f32, {2, 1}, {1, 2});
         expect_tensor(eval([&](Builder& b) {
                         return b.broadcast(b.constant(x), {2, 2, 3});
                       }),
                       f32, {2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
       }},
      {"slice",
       [] {
         Tensor x = tensor(f32, {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
         expect_tensor(eval([&](Builder& b) {
                         return b.slice(b.constant(x), {1, 0}, {2, 5}, {1, 2});
                       }),
                       f32, {1, 3}, {5, 7, 9});
         expect_tensor(eval([&](Builder& b) { return b.slice(b.constant(x), {0, -2}, {1, 5}); }), f32, {1, 2}, {3, 4});
       }},
      {"concat",
       [] {
         Tensor x = tensor(f32, {2, 1}, {1, 2}), y = tensor(f32, {2, 2}, {3, 4, 5, 6});
         expect_tensor(eval([&](Builder& b) {
                         return b.concat({b.constant(x), b.constant(y)}, -1);
                       }),
                       f32, {2, 3}, {1, 3, 4, 2, 5, 6});
       }},
      {"pad",
       [] {
         Tensor x = tensor(f32, {2}, {1, 2});
         expect_tensor(eval([&](Builder& b) { return b.pad(b.constant(x), {1}, {2}, {1}, 9); }), f32, {6},
                       {9, 1, 9, 2, 9, 9});
       }},
      {"gather",
       [] {
         Tensor x = tensor(f32, {3, 2}, {1, 2, 3, 4, 5, 6});
         Tensor idx = tensor(i32, {2, 2}, {2, 0, 1, 2});
         expect_tensor(eval([&](Builder& b) { return b.gather(b.constant(x), b.constant(idx), 0); }), f32, {2, 2, 2},
                       {5, 6, 1, 2, 3, 4, 5, 6});
         // No index is clamped: 3 is past the axis.
         Tensor past = tensor(i32, {2, 2}, {2, 0, 1, 3});
         EXPECT_THROW(eval([&](Builder& b) { return b.gather(b.constant(x), b.constant(past), 0); }), IndexOutOfRange);
         expect_tensor(eval([&](Builder& b) { return b.gather(b.constant(x), b.constant(tensor(i64, {1}, {1})), 1); }),
                       f32, {3, 1}, {2, 4, 6});
       }},
      {"scatter_add",
       [] {
         Tensor x = tensor(f32, {3}, {0, 0, 0}), idx = tensor(i32, {3}, {2, 0, 2}), upd = tensor(f32, {3}, {1, 2, 3});
         expect_tensor(
             eval([&](Builder& b) { return b.scatter_add(b.constant(x), b.constant(idx), b.constant(upd), 0); }), f32,
             {3}, {2, 0, 4});
       }},
      {"iota",
       [] {
         expect_tensor(eval([](Builder& b) { return b.iota({2, 3}, 1, i32); }), i32, {2, 3}, {0, 1, 2, 0, 1, 2});
       }},
      {"one_hot",
       [] {
         expect_tensor(eval([](Builder& b) {
                         return b.one_hot(b.constant(tensor(i32, {2}, {2, 0})), 3);
                       }),
                       f32, {2, 3}, {0, 0, 1, 1, 0, 0});
       }},
      {"matmul",
       [] {
         Tensor a = tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6}), c = tensor(f32, {3, 2}, {1, 0, 0, 1, 1, 1});
         expect_tensor(eval([&](Builder& b) { return b.matmul(b.constant(a), b.constant(c)); }), f32, {2, 2},
                       {4, 5, 10, 11});
         Tensor v = tensor(f32, {3}, {1, 1, 1});
         expect_tensor(eval([&](Builder& b) { return b.matmul(b.constant(a), b.constant(v)); }), f32, {2}, {6, 15});
         expect_tensor(eval([&](Builder& b) { return b.matmul(b.constant(v), b.constant(c)); }), f32, {2}, {2, 2});
       }},
      {"random_normal",
       [] {
         Tensor t = eval([](Builder& b) { return b.random_normal(b.literal_int(7), {4000}, f64); });
         double mean = 0, square = 0;
         for (double v : t.to_doubles()) mean += v / 4000, square += v * v / 4000;
         EXPECT_NEAR(mean, 0.0, 0.08);
         EXPECT_NEAR(square, 1.0, 0.08);
       }},
      {"random_uniform",
       [] {
         Tensor t = eval([](Builder& b) { return b.random_uniform(b.literal_int(7), {2000}); });
         double mean = 0;
         for (double v : t.to_doubles()) {
           EXPECT_TRUE(v >= 0 && v < 1);
           mean += v / 2000;
         }
         EXPECT_NEAR(mean, 0.5, 0.03);
         // Element i depends only on the key and i: a longer draw begins with the shorter one.
         Tensor prefix = eval([](Builder& b) { return b.random_uniform(b.literal_int(7), {10}); });
         for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(prefix.value(i), t.value(i));
       }},
      {"random_bernoulli",
       [] {
         Tensor t = eval([](Builder& b) { return b.random_bernoulli(b.literal_int(3), 0.25, {4000}); });
         double mean = 0;
         for (double v : t.to_doubles()) mean += v / 4000;
         EXPECT_EQ(t.dtype(), boolean);
         EXPECT_NEAR(mean, 0.25, 0.03);
       }},
      // The composites: their decompositions, run by the reference kernels.
      {"softmax",
       [] {
         Tensor x = tensor(f64, {2, 2}, {0, std::log(3.0), 1, 1});
         expect_tensor(eval([&](Builder& b) { return b.op("softmax", {b.constant(x)}); }), f64, {2, 2},
                       {0.25, 0.75, 0.5, 0.5});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("softmax", {b.constant(x)}, {{"axes", std::vector<int64_t>{0}}});
                       }),
                       f64, {2, 2},
                       {1 / (1 + std::exp(1.0)), 3 / (3 + std::exp(1.0)), std::exp(1.0) / (1 + std::exp(1.0)),
                        std::exp(1.0) / (3 + std::exp(1.0))});
       }},
      {"log_softmax",
       [] {
         Tensor x = tensor(f64, {2}, {0, std::log(3.0)});
         expect_tensor(eval([&](Builder& b) { return b.op("log_softmax", {b.constant(x)}); }), f64, {2},
                       {std::log(0.25), std::log(0.75)});
       }},
      {"layer_norm",
       [] {
         Tensor x = tensor(f64, {1, 3}, {1, 2, 3}), w = tensor(f64, {3}, {2, 2, 2}), bias = tensor(f64, {3}, {1, 1, 1});
         const double r = std::sqrt(1.5);  // (x - 2) / sqrt(2/3)
         expect_tensor(
             eval([&](Builder& b) {
               return b.op("layer_norm", {b.constant(x)}, {{"eps", 0.0}, {"weight", int64_t{0}}, {"bias", int64_t{0}}});
             }),
             f64, {1, 3}, {-r, 0, r});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("layer_norm", {b.constant(x), b.constant(w), b.constant(bias)},
                                     {{"eps", 0.0}, {"weight", int64_t{1}}, {"bias", int64_t{1}}});
                       }),
                       f64, {1, 3}, {1 - 2 * r, 1, 1 + 2 * r});
       }},
      {"rms_norm",
       [] {
         Tensor x = tensor(f64, {2}, {3, 4}), w = tensor(f64, {2}, {1, 2});
         const double rms = std::sqrt(12.5);
         expect_tensor(
             eval([&](Builder& b) {
               return b.op("rms_norm", {b.constant(x), b.constant(w)}, {{"eps", 0.0}, {"weight", int64_t{1}}});
             }),
             f64, {2}, {3 / rms, 8 / rms});
       }},
      {"gelu",
       [] {
         Tensor x = tensor(f64, {2}, {0, 1});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("gelu", {b.constant(x)}, {{"form", std::string("erf")}});
                       }),
                       f64, {2}, {0, 0.8413447460685429});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("gelu", {b.constant(x)}, {{"form", std::string("tanh")}});
                       }),
                       f64, {2}, {0, 0.5 * (1 + std::tanh(0.7978845608028654 * 1.044715))});
       }},
      {"cross_entropy",
       [] {
         Tensor logits = tensor(f64, {2, 2}, {0, std::log(3.0), 0, 0}), targets = tensor(i32, {2}, {1, 0});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("cross_entropy", {b.constant(logits), b.constant(targets)});
                       }),
                       f64, {}, {-(std::log(0.75) + std::log(0.5)) / 2});
         Tensor outside = tensor(i32, {2}, {1, 2});
         EXPECT_THROW(eval([&](Builder& b) {
                        return b.op("cross_entropy", {b.constant(logits), b.constant(outside)});
                      }),
                      IndexOutOfRange);
       }},
      {"attention",
       [] {
         // Equal scores: each query averages the values it may see.
         Tensor q = tensor(f64, {2, 1}, {1, 1}), v = tensor(f64, {2, 1}, {1, 3});
         Tensor first_only = tensor(boolean, {2, 2}, {1, 0, 1, 0});
         auto attend = [&](std::vector<Tensor> extra, int64_t causal) {
           return eval([&](Builder& b) {
             std::vector<NodeId> in{b.constant(q), b.constant(q), b.constant(v)};
             for (const Tensor& t : extra) in.push_back(b.constant(t));
             return b.op("attention", in, {{"causal", causal}});
           });
         };
         expect_tensor(attend({}, 0), f64, {2, 1}, {2, 2});
         expect_tensor(attend({}, 1), f64, {2, 1}, {1, 2});
         expect_tensor(attend({first_only}, 0), f64, {2, 1}, {1, 1});
       }},
      {"composite_gradient",
       [] {
         // softmax's: s * (g - sum(g * s)); gelu's (erf form): Phi(x) + x phi(x).
         auto gradient = [](std::string_view of, const Attrs& attrs, Tensor x, Tensor cotangent) {
           return eval([&](Builder& b) {
             return b.op("composite_gradient", {b.constant(x), b.constant(cotangent)},
                         gradient_attrs(primitive(of), 0, attrs));
           });
         };
         expect_tensor(gradient("softmax", {{"axes", std::vector<int64_t>{0}}}, tensor(f64, {2}, {0, 0}),
                                tensor(f64, {2}, {1, 0})),
                       f64, {2}, {0.25, -0.25});
         expect_tensor(
             gradient("gelu", {{"form", std::string("erf")}}, tensor(f64, {2}, {0, 1}), tensor(f64, {2}, {1, 2})), f64,
             {2}, {0.5, 2 * (0.8413447460685429 + 0.24197072451914337)});
       }},
      {"adamw",
       [] {
         // The first step from zero moments with lr 0.1: m = 0.1 g, v = 0.001 g^2, and the
         // step is lr * m_hat / (sqrt(v_hat) + eps), m_hat = g, v_hat = g^2.
         auto s = [](double value) { return tensor(f32, {}, {value}); };
         Tensor one = tensor(f32, {1}, {1}), zero = tensor(f32, {1}, {0});
         std::vector<Tensor> operands{
             one,     one,    zero, zero, s(0.9), s(0.1), s(0.999), s(0.001), s(std::sqrt(0.001)),
             s(1e-8), s(-1.0)};  // -lr / (1 - beta1)
         expect_tensor(eval([&](Builder& b) {
                         std::vector<NodeId> in;
                         for (const Tensor& t : operands) in.push_back(b.constant(t));
                         return b.op("adamw", in, {{"weight_decay", int64_t{0}}});
                       }),
                       f32, {3, 1}, {0.9, 0.1, 0.001}, 1e-6);
       }},
      {"sgd",
       [] {
         auto s = [](double value) { return tensor(f32, {}, {value}); };
         Tensor p = tensor(f32, {1}, {1}), g = tensor(f32, {1}, {2}), buffer = tensor(f32, {1}, {3});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("sgd", {b.constant(p), b.constant(g), b.constant(s(-0.5))},
                                     {{"weight_decay", int64_t{0}}, {"momentum", int64_t{0}}});
                       }),
                       f32, {1}, {0});
         // buffer 0.9 * 3 + (2 + 0.5 * 1) = 5.2, then p - 0.5 * 5.2
         expect_tensor(eval([&](Builder& b) {
                         return b.op("sgd",
                                     {b.constant(p), b.constant(g), b.constant(s(-0.5)), b.constant(s(0.5)),
                                      b.constant(buffer), b.constant(s(0.9)), b.constant(tensor(boolean, {}, {0}))},
                                     {{"weight_decay", int64_t{1}}, {"momentum", int64_t{1}}});
                       }),
                       f32, {2, 1}, {-1.6, 5.2}, 1e-6);
       }},
      {"part",
       [] {
         Tensor x = tensor(i32, {2, 2}, {1, 2, 3, 4});
         expect_tensor(eval([&](Builder& b) {
                         return b.op("part", {b.constant(x)}, {{"index", int64_t{1}}});
                       }),
                       i32, {2}, {3, 4});
       }},
  };
  return cases;
}

TEST(Kernels, EveryRecordedPrimitiveHasACase) {
  for (const samples::Record& record : samples::records()) {
    std::string name(primitive(record.id).name);
    EXPECT_TRUE(kernel_cases().contains(name)) << name << " has no kernel case in kernels_test.cc";
  }
}

TEST(Kernels, Cases) {
  for (const auto& [name, check] : kernel_cases()) {
    SCOPED_TRACE(name);
    check();
  }
}

TEST(Kernels, RandomUniformStaysBelowOneInEveryFloatDtype) {
  for (DType dtype : {DType::bf16, DType::f32, DType::f64}) {
    Tensor t = eval([&](Builder& b) { return b.random_uniform(b.literal_int(5), {1000}, dtype); });
    for (double v : t.to_doubles()) EXPECT_TRUE(v >= 0 && v < 1) << dtype_name(dtype);
  }
}

TEST(Kernels, Bf16KeepsNaNAndInfinities) {
  EXPECT_TRUE(std::isnan(static_cast<float>(Bf16(NAN))));
  EXPECT_EQ(static_cast<float>(Bf16(INFINITY)), INFINITY);
  EXPECT_EQ(static_cast<float>(Bf16(-0.0f)), 0.0f);
}

// Every bf16 elementwise result is the f32 result on the same values, rounded.
TEST(Kernels, Bf16IsF32Rounded) {
  std::vector<double> xs{0.3, 1.7, 2.9, 0.01, 5.5}, ys{1.1, 0.6, 3.3, 2.0, 0.7};
  auto rounded = [](const std::vector<double>& v) { return Tensor::from_doubles(DType::bf16, {5}, v); };
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "logistic", "neg", "abs"}) {
    Tensor in = rounded(xs);
    Tensor in_f32 = eval([&](Builder& b) { return b.cast(b.constant(in), f32); });
    Tensor direct = eval([&](Builder& b) { return b.op(op, {b.constant(in)}); });
    Tensor via_f32 = eval([&](Builder& b) { return b.cast(b.op(op, {b.constant(in_f32)}), DType::bf16); });
    EXPECT_EQ(direct, via_f32) << op;
  }
  for (const char* op : {"add", "sub", "mul", "div", "pow", "max", "min"}) {
    Tensor x = rounded(xs), y = rounded(ys);
    Tensor direct = eval([&](Builder& b) { return b.op(op, {b.constant(x), b.constant(y)}); });
    Tensor via_f32 = eval([&](Builder& b) {
      return b.cast(b.op(op, {b.cast(b.constant(x), f32), b.cast(b.constant(y), f32)}), DType::bf16);
    });
    EXPECT_EQ(direct, via_f32) << op;
  }
}

TEST(Kernels, Bf16ComputesInF32AndRounds) {
  Tensor x = tensor(DType::bf16, {2}, {1.0, 256.0});
  Tensor y = tensor(DType::bf16, {2}, {0.00390625, 1.0});  // 2^-8: 1 + 2^-8 is a tie, rounds to 1
  expect_tensor(eval([&](Builder& b) { return b.add(b.constant(x), b.constant(y)); }), DType::bf16, {2}, {1.0, 256.0});
}

}  // namespace
}  // namespace sx::graph
