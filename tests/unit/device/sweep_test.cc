// The sweep: every primitive in the registry, in every dtype it accepts, on
// small graphs with random inputs, run on each device and compared with the
// reference device: bit for bit for integers, bools and data movement,
// within tolerance(dtype) for float arithmetic (matmul and sums also within
// sum_bound of the length they add up). A primitive without cases fails, so a new one
// cannot skip the sweep. On cpu, each case also runs on 1 thread and on all
// cores, and twice, and every run must give the same bits.
#include <functional>
#include <map>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;
constexpr DType kDTypes[] = {DType::f32, DType::bf16,    DType::f64, DType::i32,
                             DType::i64, DType::boolean, DType::u8,  DType::u16};

struct In {
  Shape shape;
  DType dtype;
  bool positive = false;
  int64_t index_bound = 0;  // > 0: integers in [-1, index_bound], to index with
};

struct Case {
  std::string label;
  Graph graph;
  std::vector<Tensor> inputs;
  bool exact = false;  // compare bits even for floats
  double length = 1;   // the number of terms each output element sums (matmul, sum)
};

using Build = std::function<NodeId(Builder&, const std::vector<NodeId>&)>;

class Cases {
 public:
  explicit Cases(std::mt19937& rng) : rng_(rng) {}

  // Adds the case unless the builder refuses the dtypes (the primitive does
  // not take them).
  void add(std::string label, std::vector<In> ins, const Build& build, bool exact = false, double length = 1) {
    Case c{.label = std::move(label), .graph = {}, .inputs = {}, .exact = exact, .length = length};
    Builder b(c.graph);
    std::vector<NodeId> xs;
    for (size_t i = 0; i < ins.size(); ++i) xs.push_back(b.input(fmt::format("x{}", i), ins[i].shape, ins[i].dtype));
    try {
      b.output("y", build(b, xs));
    } catch (const graph::ShapeError&) {
      return;
    }
    for (const In& in : ins) {
      if (in.index_bound > 0) {
        std::uniform_int_distribution<int64_t> pick(-1, in.index_bound);
        Tensor t(in.dtype, in.shape);
        for (int64_t i = 0; i < t.numel(); ++i)
          t.set_value(i, static_cast<double>(std::max<int64_t>(pick(rng_), graph::is_unsigned(in.dtype) ? 0 : -1)));
        c.inputs.push_back(t);
      } else {
        c.inputs.push_back(random_tensor(in.dtype, in.shape, rng_, in.positive));
      }
    }
    cases_.push_back(std::move(c));
  }

  std::vector<Case>& all() { return cases_; }

 private:
  std::mt19937& rng_;
  std::vector<Case> cases_;
};

std::string label(std::string_view what, DType dtype) { return fmt::format("{} {}", what, graph::dtype_name(dtype)); }

void unary_cases(Cases& cases, std::string_view op) {
  bool positive = op == "log" || op == "sqrt" || op == "rsqrt";
  for (DType t : kDTypes) {
    for (Shape shape : {Shape{3, 7}, Shape{}, Shape{256, 300}}) {
      cases.add(label(graph::shape_str(shape), t), {{shape, t, positive}},
                [op](Builder& b, const std::vector<NodeId>& x) { return b.op(op, {x[0]}); });
    }
  }
}

void binary_cases(Cases& cases, std::string_view op) {
  for (DType t : kDTypes) {
    for (Shape shape : {Shape{3, 7}, Shape{256, 300}}) {
      cases.add(label(graph::shape_str(shape), t), {{shape, t, op == "pow"}, {shape, t}},
                [op](Builder& b, const std::vector<NodeId>& x) {
                  return b.op(op, {x[0], x[1]});
                });
    }
    // The op broadcasts [3, 1] with [1, 4] before the primitive.
    cases.add(label("broadcast operands", t), {{{3, 1}, t, op == "pow"}, {{1, 4}, t}},
              [op](Builder& b, const std::vector<NodeId>& x) {
                return b.op(op, {x[0], x[1]});
              });
  }
}

void reduction_cases(Cases& cases, std::string_view op) {
  std::vector<std::vector<int64_t>> axes_sets = {{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  for (DType t : kDTypes) {
    for (const auto& axes : axes_sets) {
      for (int64_t keep : {0, 1}) {
        double length = 1;
        for (int64_t a : axes) length *= Shape{4, 5, 6}[static_cast<size_t>(a)];
        cases.add(
            fmt::format("{} axes {} keepdims {}", graph::dtype_name(t), graph::list_str(axes), keep), {{{4, 5, 6}, t}},
            [op, axes, keep](Builder& b, const std::vector<NodeId>& x) {
              return b.op(op, {x[0]}, {{"axes", axes}, {"keepdims", keep}});
            },
            false, length);
      }
    }
    // Large enough for the threads: rows, columns, a middle axis, everything.
    auto add = [&](Shape shape, std::vector<int64_t> axes, double length) {
      cases.add(
          fmt::format("{} {} axes {}", graph::dtype_name(t), graph::shape_str(shape), graph::list_str(axes)),
          {{shape, t}},
          [op, axes](Builder& b, const std::vector<NodeId>& x) {
            return b.op(op, {x[0]}, {{"axes", axes}});
          },
          false, length);
    };
    add({64, 2000}, {1}, 2000);
    add({2000, 64}, {0}, 2000);
    add({16, 300, 40}, {1}, 300);
    add({300, 400}, {0, 1}, 120000);
    add({0, 3}, {0}, 1);
  }
}

void matmul_cases(Cases& cases) {
  struct Shapes {
    Shape a, b;
  };
  for (DType t : kDTypes) {
    for (auto [a, b] :
         {Shapes{{3, 5}, {5, 4}}, Shapes{{2, 3, 5}, {2, 5, 4}}, Shapes{{2, 3, 5}, {5, 4}}, Shapes{{5}, {5, 4}},
          Shapes{{3, 5}, {5}}, Shapes{{2, 4, 3, 8}, {8, 5}}, Shapes{{2, 1, 3, 8}, {4, 8, 5}},
          Shapes{{64, 256}, {256, 96}}, Shapes{{1, 512}, {512, 128}}, Shapes{{3, 0}, {0, 4}}}) {
      cases.add(
          fmt::format("{} {} @ {}", graph::dtype_name(t), graph::shape_str(a), graph::shape_str(b)), {{a, t}, {b, t}},
          [](Builder& bb, const std::vector<NodeId>& x) { return bb.matmul(x[0], x[1]); }, false,
          static_cast<double>(a.back()));
    }
    // Constant weights (packed at compile time by the cpu device).
    std::mt19937 rng(11);
    for (auto [a, b] : {Shapes{{3, 5}, {5, 4}}, Shapes{{2, 3, 5}, {5, 4}}, Shapes{{64, 256}, {256, 96}},
                        Shapes{{2, 3, 5}, {2, 5, 4}}}) {
      if (t == DType::boolean) continue;
      Tensor w = random_tensor(t, b, rng);
      cases.add(
          fmt::format("{} {} @ constant {}", graph::dtype_name(t), graph::shape_str(a), graph::shape_str(b)), {{a, t}},
          [w](Builder& bb, const std::vector<NodeId>& x) { return bb.matmul(x[0], bb.constant(w)); }, false,
          static_cast<double>(a.back()));
    }
  }
}

void add_every_dtype(Cases& cases, std::string_view what, std::vector<Shape> shapes, const Build& build,
                     bool positive = false) {
  for (DType t : kDTypes) {
    std::vector<In> ins;
    for (const Shape& s : shapes) ins.push_back({s, t, positive});
    cases.add(label(what, t), ins, build, true);
  }
}

using Maker = std::function<void(Cases&, std::string_view op)>;

const std::map<std::string, Maker, std::less<>>& makers() {
  static const std::map<std::string, Maker, std::less<>> table = [] {
    std::map<std::string, Maker, std::less<>> m;
    for (const char* op : {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "logistic",
                           "logical_not"}) {
      m[op] = unary_cases;
    }
    for (const char* op : {"add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne", "lt", "le", "gt", "ge",
                           "logical_and", "logical_or"}) {
      m[op] = binary_cases;
    }
    for (const char* op : {"sum", "reduce_max", "reduce_min", "argmax", "argmin"}) m[op] = reduction_cases;
    m["matmul"] = [](Cases& c, std::string_view) { matmul_cases(c); };
    m["input"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "identity", {{2, 3}}, [](Builder&, const std::vector<NodeId>& x) { return x[0]; });
    };
    m["constant"] = [](Cases& c, std::string_view) {
      std::mt19937 rng(7);
      for (DType t : kDTypes) {
        Tensor value = random_tensor(t, {2, 3}, rng);
        c.add(
            label("value", t), {}, [value](Builder& b, const std::vector<NodeId>&) { return b.constant(value); }, true);
        c.add(
            label("value and input", t), {{{2, 3}, t}},
            [value](Builder& b, const std::vector<NodeId>& x) {
              return b.concat({b.constant(value), x[0]}, 0);
            },
            true);
      }
    };
    m["where"] = [](Cases& c, std::string_view) {
      for (DType t : kDTypes) {
        for (Shape s : {Shape{4, 5}, Shape{256, 300}}) {
          c.add(
              label(graph::shape_str(s), t), {{s, DType::boolean}, {s, t}, {s, t}},
              [](Builder& b, const std::vector<NodeId>& x) { return b.where(x[0], x[1], x[2]); }, true);
        }
      }
    };
    m["cast"] = [](Cases& c, std::string_view) {
      for (DType from : kDTypes) {
        for (DType to : kDTypes) {
          std::string what = fmt::format("{} to {}", graph::dtype_name(from), graph::dtype_name(to));
          c.add(
              what, {{{5, 7}, from}}, [to](Builder& b, const std::vector<NodeId>& x) { return b.cast(x[0], to); },
              true);
          c.add(
              what + " large", {{{256, 300}, from}},
              [to](Builder& b, const std::vector<NodeId>& x) { return b.cast(x[0], to); }, true);
          if (graph::is_float(from)) {
            // NaN, infinities and values out of every integer's range saturate.
            std::vector<double> specials{NAN, INFINITY, -INFINITY, 1e10, -1e10, 300, -1.5, 70000, 0.5, -0.0};
            Tensor value = Tensor::from_doubles(from, {10}, specials);
            c.add(
                what + " specials", {},
                [to, value](Builder& b, const std::vector<NodeId>&) { return b.cast(b.constant(value), to); }, true);
          }
        }
      }
    };
    m["reshape"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "[2, 3, 4] to [6, 4]", {{2, 3, 4}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.reshape(x[0], {6, 4});
      });
      add_every_dtype(c, "then neg", {{2, 3, 4}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.neg(b.reshape(x[0], {4, 6}));
      });
    };
    m["transpose"] = [](Cases& c, std::string_view) {
      for (std::vector<int64_t> perm : {std::vector<int64_t>{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {0, 1, 2}}) {
        add_every_dtype(c, graph::list_str(perm), {{2, 3, 4}},
                        [perm](Builder& b, const std::vector<NodeId>& x) { return b.transpose(x[0], perm); });
      }
      add_every_dtype(c, "large", {{300, 400}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.transpose(x[0], {1, 0});
      });
    };
    m["broadcast"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "[3, 1] to [2, 3, 5]", {{3, 1}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.broadcast(x[0], {2, 3, 5});
      });
      add_every_dtype(c, "[] to [4]", {{}},
                      [](Builder& b, const std::vector<NodeId>& x) { return b.broadcast(x[0], {4}); });
      add_every_dtype(c, "[1, 300] to [400, 300]", {{1, 300}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.broadcast(x[0], {400, 300});
      });
      add_every_dtype(c, "[400, 1] to [400, 300]", {{400, 1}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.broadcast(x[0], {400, 300});
      });
    };
    m["slice"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "steps", {{5, 6, 7}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.slice(x[0], {1, 0, 2}, {4, 6, 7}, {2, 1, 3});
      });
      add_every_dtype(c, "empty", {{5, 6}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.slice(x[0], {2, 0}, {2, 6});
      });
      add_every_dtype(c, "large", {{500, 300}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.slice(x[0], {10, 5}, {490, 295});
      });
    };
    m["concat"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "axis 0", {{2, 3}, {4, 3}, {0, 3}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.concat({x[0], x[1], x[2]}, 0);
      });
      add_every_dtype(c, "axis 1", {{2, 3, 2}, {2, 1, 2}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.concat({x[0], x[1]}, 1);
      });
      add_every_dtype(c, "large", {{300, 200}, {300, 100}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.concat({x[0], x[1]}, 1);
      });
    };
    m["pad"] = [](Cases& c, std::string_view) {
      add_every_dtype(c, "low high interior", {{3, 4}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.pad(x[0], {1, 0}, {2, 1}, {1, 2}, 7.0);
      });
      add_every_dtype(c, "empty input", {{0, 4}}, [](Builder& b, const std::vector<NodeId>& x) {
        return b.pad(x[0], {1, 1}, {1, 0}, {}, 1.0);
      });
    };
    m["gather"] = [](Cases& c, std::string_view) {
      for (DType t : kDTypes) {
        for (DType index : {DType::i32, DType::i64, DType::u8}) {
          for (int64_t axis : {0, 1, 2}) {
            c.add(
                fmt::format("{} by {} axis {}", graph::dtype_name(t), graph::dtype_name(index), axis),
                {{{5, 4, 3}, t}, {{2, 3}, index, false, 6}},
                [axis](Builder& b, const std::vector<NodeId>& x) { return b.gather(x[0], x[1], axis); }, true);
          }
        }
        c.add(
            label("large", t), {{{1000, 64}, t}, {{500}, DType::i64, false, 1000}},
            [](Builder& b, const std::vector<NodeId>& x) { return b.gather(x[0], x[1], 0); }, true);
      }
    };
    m["scatter_add"] = [](Cases& c, std::string_view) {
      for (DType t : kDTypes) {
        c.add(label("axis 0", t), {{{5, 3}, t}, {{4}, DType::i64, false, 5}, {{4, 3}, t}},
              [](Builder& b, const std::vector<NodeId>& x) { return b.scatter_add(x[0], x[1], x[2], 0); });
      }
    };
    m["iota"] = [](Cases& c, std::string_view) {
      for (DType t : kDTypes) {
        c.add(
            label("[3, 4] axis 1", t), {},
            [t](Builder& b, const std::vector<NodeId>&) {
              return b.iota({3, 4}, 1, t);
            },
            true);
      }
    };
    m["one_hot"] = [](Cases& c, std::string_view) {
      for (DType t : kDTypes) {
        c.add(
            label("depth 5", t), {{{3, 4}, DType::i32, false, 6}},
            [t](Builder& b, const std::vector<NodeId>& x) { return b.one_hot(x[0], 5, t); }, true);
      }
    };
    auto random = [](Cases& c, std::string_view op) {
      for (DType t : kDTypes) {
        for (DType key : {DType::i64, DType::i32}) {
          c.add(
              fmt::format("{} key {}", graph::dtype_name(t), graph::dtype_name(key)), {{{}, key}},
              [op, t](Builder& b, const std::vector<NodeId>& x) {
                if (op == "random_normal") return b.random_normal(x[0], {1000}, t);
                if (op == "random_uniform") return b.random_uniform(x[0], {1000}, t);
                if (t != DType::boolean) throw graph::ShapeError("bernoulli gives bool");
                return b.random_bernoulli(x[0], 0.3, {1000});
              },
              true);
        }
      }
    };
    for (const char* op : {"random_normal", "random_uniform", "random_bernoulli"}) m[op] = random;
    return m;
  }();
  return table;
}

std::vector<std::string> primitive_names() {
  std::vector<std::string> names;
  for (const graph::Primitive* p : graph::all_primitives()) names.emplace_back(p->name);
  return names;
}

// The devices compared with the reference: every one this build has.
std::vector<std::string> devices_under_test() {
  std::vector<std::string> names;
  for (const std::string& name : available_devices()) {
    if (name != "reference") names.push_back(name);
  }
  return names;
}

class Sweep : public ::testing::TestWithParam<std::string> {};

TEST_P(Sweep, AgreesWithTheReference) {
  const std::string& op = GetParam();
  auto it = makers().find(op);
  ASSERT_NE(it, makers().end()) << "primitive '" << op << "' has no case in the device sweep: add one to sweep_test.cc";
  std::mt19937 rng(1234);
  Cases cases(rng);
  it->second(cases, op);
  ASSERT_FALSE(cases.all().empty()) << "no dtype of '" << op << "' was accepted";
  int ran = 0;
  for (Case& c : cases.all()) {
    SCOPED_TRACE(c.label);
    // The op must really emit the primitive under test.
    bool emitted = false;
    for (const graph::Node& n : c.graph.nodes) emitted = emitted || n.op_name() == op;
    if (!emitted && op != "input") continue;
    ++ran;
    std::vector<Tensor> expected = run_on("reference", c.graph, c.inputs);
    for (const std::string& device : devices_under_test()) {
      SCOPED_TRACE(device);
      std::vector<Tensor> all_cores = run_on(device, c.graph, c.inputs);
      ASSERT_EQ(all_cores.size(), expected.size());
      EXPECT_EQ(compare(all_cores[0], expected[0], c.exact, c.length), "");
      if (device == "cpu") {
        auto on = make_device(device, DeviceOptions{.cpu_cores = 1});
        auto plan = on->compile(c.graph);
        Tensor first = plan->run_host(c.inputs)[0], second = plan->run_host(c.inputs)[0];
        EXPECT_TRUE(same_bits(first, second)) << "two runs differ";
        EXPECT_TRUE(same_bits(first, all_cores[0])) << "1 thread and all cores differ";
        EXPECT_TRUE(same_bits(run_on(device, c.graph, c.inputs, 2)[0], first)) << "1 and 2 threads differ";
      }
    }
  }

  EXPECT_GT(ran, 0) << "no case of '" << op << "' emits it";
  RecordProperty("cases", ran);
}

INSTANTIATE_TEST_SUITE_P(EveryPrimitive, Sweep, ::testing::ValuesIn(primitive_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The bound the sweep's sums are held to is not vacuous: it refuses an f32 sum that lost
// one term, and a product of zeros, where the old tolerance (2e-6 times the length,
// relative) accepted both.
TEST(SumBound, RefusesALostTermAndAZeroProduct) {
  std::mt19937 rng(3);
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    Graph sum;
    Builder b(sum);
    b.output("y", b.sum(b.input("x", {300, 400}, t), {0, 1}));
    Tensor x = random_tensor(t, {300, 400}, rng);
    Tensor want = run_on("reference", sum, {x})[0];
    EXPECT_EQ(compare(run_on("cpu", sum, {x})[0], want, false, 120000), "");
    // A term of about the typical size, 0.5 or more: the largest of the first ten. (A
    // bf16 result of some hundreds has an ulp of 2, which hides such a term.)
    int64_t term = 0;
    for (int64_t i = 1; i < 10; ++i) term = std::fabs(x.value(i)) > std::fabs(x.value(term)) ? i : term;
    ASSERT_GE(std::fabs(x.value(term)), 0.5);
    x.set_value(term, 0);
    if (t == DType::f32) EXPECT_NE(compare(run_on("reference", sum, {x})[0], want, false, 120000), "");

    Graph product;
    Builder p(product);
    NodeId a = p.input("a", {4, 256}, t);
    NodeId w = p.input("w", {256, 4}, t);
    p.output("y", p.matmul(a, w));
    std::vector<Tensor> ins{random_tensor(t, {4, 256}, rng), random_tensor(t, {256, 4}, rng)};
    EXPECT_NE(compare(Tensor(t, {4, 4}), run_on("reference", product, ins)[0], false, 256), "");
  }
}

TEST(Sweep, EveryPrimitiveHasCases) {
  for (const std::string& name : primitive_names()) {
    EXPECT_TRUE(makers().contains(name)) << "primitive '" << name << "' has no case in the device sweep";
  }
}

}  // namespace
}  // namespace sx::device::testing
