// The optimizer step against hand-written C++ of PyTorch's algorithms (torch.optim.AdamW
// and SGD's _single_tensor_* functions, clip_grad_norm_, LambdaLR, AveragedModel), run for
// several steps on the reference device; group assignment, the state the loop keeps, and
// the checks of sgd, adamw, group and the schedules.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>

#include "device/cpu/isa.h"
#include "graph/passes.h"
#include "train_test_util.h"

namespace sx::train::testing {
namespace {

// Two trainable parameters, one tagged :no-decay, one frozen.
const std::string kToy = R"(
(defmodel toy ()
  (defparam w (zeros [2 3]))
  (defparam b (zeros [3]) :tags [:no-decay])
  (defparam frozen (zeros [2]) :trainable false)
  (lambda (x) x))
(defvar model (toy))
)";

double f32r(double x) { return static_cast<double>(static_cast<float>(x)); }

// Deterministic values, rounded to f32 as the graph holds them.
std::vector<double> wave(size_t n, double phase, double scale) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(f32r(scale * std::sin(0.37 * static_cast<double>(i) + phase)));
  return out;
}

Values initial(const GroupAssignment& groups) {
  Values out;
  for (size_t k = 0; k < groups.params.size(); ++k) {
    const auto& p = *groups.params[k].param;
    out[p.path] = wave(static_cast<size_t>(graph::numel(p.decl->shape)), 0.5 + static_cast<double>(k), 1.0);
  }
  return out;
}

Values grads_at(const GroupAssignment& groups, int64_t step, double scale) {
  Values out;
  for (size_t k = 0; k < groups.params.size(); ++k) {
    const auto& p = *groups.params[k].param;
    out[p.path] = wave(static_cast<size_t>(graph::numel(p.decl->shape)),
                       1.3 * static_cast<double>(step) + 2.0 * static_cast<double>(k), scale);
  }
  return out;
}

// --- PyTorch's algorithms, written out in double --------------------------------------

// torch.optim.adamw._single_tensor_adamw for one parameter; t counts from 1.
void torch_adamw(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v, const std::vector<double>& g,
                 double lr, double wd, double b1, double b2, double eps, int64_t t) {
  double bias1 = 1 - std::pow(b1, static_cast<double>(t));
  double bias2 = 1 - std::pow(b2, static_cast<double>(t));
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1 - lr * wd;
    m[i] = m[i] * b1 + (1 - b1) * g[i];
    v[i] = v[i] * b2 + (1 - b2) * g[i] * g[i];
    double denom = std::sqrt(v[i]) / std::sqrt(bias2) + eps;
    p[i] += -(lr / bias1) * m[i] / denom;
  }
}

// torch.optim.sgd._single_tensor_sgd for one parameter, dampening 0, no nesterov.
void torch_sgd(std::vector<double>& p, std::vector<double>* buf, std::vector<double> g, double lr, double momentum,
               double wd, bool first) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (wd != 0) g[i] += wd * p[i];
    if (buf) {
      (*buf)[i] = first ? g[i] : (*buf)[i] * momentum + g[i];
      g[i] = (*buf)[i];
    }
    p[i] += -lr * g[i];
  }
}

// torch.nn.utils.clip_grad_norm_: scales every gradient; returns the norm before.
double torch_clip(Values& grads, double max_norm) {
  double squares = 0;
  for (const auto& [path, g] : grads) {
    for (double x : g) squares += x * x;
  }
  double norm = std::sqrt(squares);
  double coef = std::min(max_norm / (norm + 1e-6), 1.0);
  for (auto& [path, g] : grads) {
    for (double& x : g) x *= coef;
  }
  return norm;
}

// The LambdaLR factor of each schedule (optimizer.h), at s steps done of T.
double torch_factor(ScheduleSpec::Kind kind, int64_t warmup, int64_t total, double end_ratio, int64_t s) {
  if (s < warmup) return static_cast<double>(s) / static_cast<double>(warmup);
  double progress =
      std::min(1.0, static_cast<double>(s - warmup) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
  switch (kind) {
    case ScheduleSpec::Kind::Constant: return 1.0;
    case ScheduleSpec::Kind::WarmupCosine:
      return end_ratio + (1 - end_ratio) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
    case ScheduleSpec::Kind::Linear: return 1.0 - (1 - end_ratio) * progress;
  }
  return 0;
}

// --- The update against them ------------------------------------------------------------

TEST(AdamW, WeightDecayAndGroupsForSeveralSteps) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer(
      "(adamw :lr 0.01 :betas [0.8 0.99] :eps 1e-6 :weight-decay 0.1 "
      ":groups (list (group (select :tag :no-decay) :lr 0.02 :weight-decay 0.0)))");
  GroupAssignment groups = assign_groups(f.table, opt);
  ASSERT_EQ(groups.params.size(), 2u);
  Stepper stepper(groups, settings_for(opt));
  Values params = initial(groups), want = params;
  Values m, v;
  for (const auto& [path, p] : params) m[path] = v[path] = std::vector<double>(p.size(), 0.0);
  for (int64_t step = 0; step < 6; ++step) {
    Values grads = grads_at(groups, step, 0.5);
    stepper.step(params, grads);
    for (const auto& entry : groups.params) {
      const std::string& path = entry.param->path;
      double lr = path == "model.b" ? 0.02 : 0.01, wd = path == "model.b" ? 0.0 : 0.1;
      torch_adamw(want[path], m[path], v[path], grads[path], lr, wd, 0.8, 0.99, 1e-6, step + 1);
      std::string at = path + " after step " + std::to_string(step);
      expect_close(params[path], want[path], 1e-5, 1e-7, at);
      expect_close(stepper.state["opt." + path + ".m"], m[path], 1e-5, 1e-9, at + " m");
      expect_close(stepper.state["opt." + path + ".v"], v[path], 1e-5, 1e-11, at + " v");
    }
    EXPECT_NEAR(stepper.lr, 0.01, 1e-9);
  }
}

TEST(Sgd, MomentumStartsAtTheFirstGradientWhateverTheBufferHolds) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer("(sgd :lr 0.1 :momentum 0.9 :weight-decay 0.01)");
  GroupAssignment groups = assign_groups(f.table, opt);
  Stepper stepper(groups, settings_for(opt));
  Values params = initial(groups), want = params, bufs;
  // The buffers start as zeros; garbage there must not matter at step 0 either (torch
  // clones the first gradient).
  for (auto& [name, value] : stepper.state) value.assign(value.size(), 123.0);
  for (int64_t step = 0; step < 5; ++step) {
    Values grads = grads_at(groups, step, 1.0);
    stepper.step(params, grads);
    for (const auto& entry : groups.params) {
      const std::string& path = entry.param->path;
      bufs[path].resize(want[path].size());
      torch_sgd(want[path], &bufs[path], grads[path], 0.1, 0.9, 0.01, step == 0);
      expect_close(params[path], want[path], 1e-5, 1e-7, path + " step " + std::to_string(step));
      expect_close(stepper.state["opt." + path + ".momentum"], bufs[path], 1e-5, 1e-7, path + " buffer");
    }
  }
}

TEST(Sgd, WithoutMomentumKeepsNoState) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer("(sgd :lr 0.5)");
  GroupAssignment groups = assign_groups(f.table, opt);
  Stepper stepper(groups, settings_for(opt));
  EXPECT_TRUE(stepper.state.empty());
  Values params = initial(groups), want = params;
  for (int64_t step = 0; step < 3; ++step) {
    Values grads = grads_at(groups, step, 1.0);
    stepper.step(params, grads);
    for (auto& [path, p] : want) torch_sgd(p, nullptr, grads[path], 0.5, 0, 0, step == 0);
    for (const auto& [path, p] : want) expect_close(params[path], p, 1e-6, 1e-7, path);
  }
}

TEST(Clipping, ByTheGlobalNormOfAllGradients) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer("(adamw :lr 0.01 :weight-decay 0.0)");
  GroupAssignment groups = assign_groups(f.table, opt);
  UpdateSettings settings = settings_for(opt);
  settings.grad_clip = 1.0;
  Stepper stepper(groups, settings);
  Values params = initial(groups), want = params, m, v;
  for (const auto& [path, p] : params) m[path] = v[path] = std::vector<double>(p.size(), 0.0);
  // Large gradients are clipped; small ones (the last steps) are left as they are.
  const double scales[] = {10.0, 3.0, 0.1, 0.01};
  for (int64_t step = 0; step < 4; ++step) {
    Values grads = grads_at(groups, step, scales[step]);
    stepper.step(params, grads);
    double norm = torch_clip(grads, 1.0);
    EXPECT_NEAR(stepper.norm, norm, 1e-5 * norm) << step;
    if (step < 2) {
      EXPECT_GT(norm, 1.0);
    } else {
      EXPECT_LT(norm, 1.0);
    }
    for (auto& [path, p] : want) torch_adamw(p, m[path], v[path], grads[path], 0.01, 0.0, 0.9, 0.999, 1e-8, step + 1);
    for (const auto& [path, p] : want)
      expect_close(params[path], p, 1e-5, 1e-7, path + " step " + std::to_string(step));
    for (const auto& [path, mm] : m) expect_close(stepper.state["opt." + path + ".m"], mm, 1e-5, 1e-9, path + " m");
  }
}

TEST(Ema, IsTheParametersAtTheFirstStepThenDecays) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer("(sgd :lr 0.1)");
  GroupAssignment groups = assign_groups(f.table, opt);
  UpdateSettings settings = settings_for(opt);
  settings.ema = 0.75;
  Stepper stepper(groups, settings);
  Values params = initial(groups), ema;
  for (int64_t step = 0; step < 4; ++step) {
    stepper.step(params, grads_at(groups, step, 1.0));
    for (const auto& [path, p] : params) {
      if (step == 0) ema[path] = p;
      else {
        for (size_t i = 0; i < p.size(); ++i) ema[path][i] = 0.75 * ema[path][i] + 0.25 * p[i];
      }
      expect_close(stepper.state["ema." + path], ema[path], 1e-6, 1e-7, path + " step " + std::to_string(step));
    }
  }
}

// The learning rate of each schedule at the steps where it changes course: 0, the last
// warmup step, the first after it, the run's last step and one past it.
TEST(Schedules, AtTheirBoundaries) {
  struct Case {
    std::string schedule;
    ScheduleSpec::Kind kind;
    int64_t warmup;
    double end;
  };
  const double lr = 0.02;
  const int64_t total = 50;
  const std::vector<Case> cases = {
      {"(constant)", ScheduleSpec::Kind::Constant, 0, 0},
      {"(constant :warmup 4)", ScheduleSpec::Kind::Constant, 4, 0},
      {"(warmup-cosine :warmup 10 :min-lr 0.002)", ScheduleSpec::Kind::WarmupCosine, 10, 0.002},
      {"(warmup-cosine)", ScheduleSpec::Kind::WarmupCosine, 0, 0},
      {"(warmup-cosine :warmup 50)", ScheduleSpec::Kind::WarmupCosine, 50, 0},
      {"(warmup-linear :warmup 5 :end-lr 0.001)", ScheduleSpec::Kind::Linear, 5, 0.001},
      {"(warmup-linear)", ScheduleSpec::Kind::Linear, 0, 0},
  };
  for (const auto& c : cases) {
    RunFile f;
    f.load(kToy);
    const auto& opt = f.optimizer("(sgd :lr 0.02 :groups (list (group (select :tag :no-decay) :lr 0.06)))");
    GroupAssignment groups = assign_groups(f.table, opt);
    UpdateSettings settings = settings_for(opt, &f.schedule(c.schedule), total);
    Stepper stepper(groups, settings);
    for (int64_t s : {int64_t{0}, c.warmup - 1, c.warmup, c.warmup + 1, total / 2, total - 1, total}) {
      if (s < 0) continue;
      stepper.steps_done = s;
      // With p = 0 and g = 1, SGD's new p is -lr of the parameter's group.
      Values params = initial(groups), grads = grads_at(groups, 0, 1.0);
      for (auto& [path, p] : params) p.assign(p.size(), 0.0);
      for (auto& [path, g] : grads) g.assign(g.size(), 1.0);
      stepper.step(params, grads);
      double factor = torch_factor(c.kind, c.warmup, total, c.end / lr, s);
      std::string at = c.schedule + " at step " + std::to_string(s);
      EXPECT_NEAR(stepper.lr, f32r(lr * factor), 1e-7 * lr) << at;
      expect_close(params["model.w"], std::vector<double>(6, -lr * factor), 1e-6, 1e-12, at);
      expect_close(params["model.b"], std::vector<double>(3, -3 * lr * factor), 1e-6, 1e-12, at + " (group)");
    }
  }
}

TEST(Schedules, FixedPoints) {
  // The definitions' own values, so a wrong torch_factor cannot hide a wrong schedule.
  using K = ScheduleSpec::Kind;
  EXPECT_EQ(torch_factor(K::WarmupCosine, 10, 50, 0.1, 0), 0.0);
  EXPECT_DOUBLE_EQ(torch_factor(K::WarmupCosine, 10, 50, 0.1, 5), 0.5);
  EXPECT_DOUBLE_EQ(torch_factor(K::WarmupCosine, 10, 50, 0.1, 10), 1.0);
  EXPECT_DOUBLE_EQ(torch_factor(K::WarmupCosine, 10, 50, 0.1, 30), 0.55);
  EXPECT_DOUBLE_EQ(torch_factor(K::WarmupCosine, 10, 50, 0.1, 50), 0.1);
  EXPECT_DOUBLE_EQ(torch_factor(K::Linear, 0, 40, 0.0, 10), 0.75);
}

TEST(Update, Bf16ParametersAreUpdatedInF32AndStayBf16) {
  RunFile f;
  f.load("(defmodel half () (defparam w (zeros [4] :dtype :bf16)) (lambda (x) x)) (defvar model (half))");
  const auto& opt = f.optimizer("(adamw :lr 0.01)");
  GroupAssignment groups = assign_groups(f.table, opt);
  Stepper stepper(groups, settings_for(opt));
  EXPECT_EQ(stepper.graph().node(stepper.update().new_params[0]).dtype, graph::DType::bf16);
  for (const auto& s : stepper.update().state) EXPECT_EQ(s.tensor.dtype, graph::DType::f32);
  Values params{{"model.w", {1, 1, 1, 1}}};
  stepper.step(params, Values{{"model.w", {1, -1, 1, -1}}});
  // AdamW's first step moves each element by lr against the gradient's sign, after decay.
  expect_close(params["model.w"], {0.9899, 1.0099, 0.9899, 1.0099}, 4e-3, 0, "bf16");
}

// The loop runs the step on the cpu device: it must give the reference's values.
TEST(Update, TheCpuDeviceAgreesWithTheReference) {
  auto devices = device::available_devices();
  if (std::find(devices.begin(), devices.end(), "cpu") == devices.end()) GTEST_SKIP() << "no cpu device";
  RunFile f;
  f.load(kToy);
  for (const char* text : {"(adamw :lr 0.01 :groups (list (group (select :tag :no-decay) :weight-decay 0.0)))",
                           "(sgd :lr 0.1 :momentum 0.9 :weight-decay 0.01)"}) {
    const auto& opt = f.optimizer(text);
    GroupAssignment groups = assign_groups(f.table, opt);
    UpdateSettings settings = settings_for(opt, &f.schedule("(warmup-cosine :warmup 2 :min-lr 0.001)"), 6);
    settings.grad_clip = 1.0;
    settings.ema = 0.9;
    Stepper reference(groups, settings), cpu(groups, settings);
    Values on_reference = initial(groups), on_cpu = on_reference;
    for (int64_t step = 0; step < 6; ++step) {
      Values grads = grads_at(groups, step, 2.0);
      reference.step(on_reference, grads);
      cpu.step(on_cpu, grads, "cpu");
      for (const auto& [path, p] : on_reference)
        expect_close(on_cpu[path], p, 1e-6, 1e-8, std::string(text) + " " + path);
      for (const auto& [name, v] : reference.state) expect_close(cpu.state[name], v, 1e-6, 1e-9, text + (" " + name));
      EXPECT_NEAR(cpu.norm, reference.norm, 1e-6 * reference.norm);
      EXPECT_EQ(cpu.lr, reference.lr);
    }
  }
}

// The update of each parameter is one step of the cpu device (device/cpu/kernels/update.cc),
// its clipped gradient scaled in it, with the bits of its decomposition, on every
// instruction set.
TEST(Update, RunsByItsKernelWithTheBitsOfItsDecomposition) {
  RunFile f;
  f.load(
      "(defmodel net () (defparam w (zeros [40 24])) (defparam b (zeros [27]) :tags [:no-decay]) "
      "(lambda (x) x)) (defvar model (net))");
  const auto& opt = f.optimizer("(adamw :lr 3e-3 :groups (list (group (select :tag :no-decay) :weight-decay 0.0)))");
  GroupAssignment groups = assign_groups(f.table, opt);
  UpdateSettings settings = settings_for(opt, &f.schedule("(warmup-cosine :warmup 2 :min-lr 1e-4)"), 10);
  settings.grad_clip = 1.0;
  Stepper stepper(groups, settings);
  stepper.steps_done = 3;
  Values params = initial(groups);
  for (auto& [name, value] : stepper.state) value = wave(value.size(), name.ends_with(".m") ? 0.2 : 0.7, 1e-3);
  for (auto& [name, value] : stepper.state)
    if (name.ends_with(".v")) std::for_each(value.begin(), value.end(), [](double& x) { x = x * x; });
  const std::vector<graph::Tensor> inputs = stepper.inputs(params, grads_at(groups, 3, 4.0));
  const graph::Graph decomposed = graph::expand_composites(stepper.graph());
  for (device::cpu::Isa isa : device::cpu::host_isas()) {
    SCOPED_TRACE(device::cpu::isa_name(isa));
    auto device = device::make_device("cpu", {.cpu_cores = 1, .cpu_isa = std::string(device::cpu::isa_name(isa))});
    setenv("SEXPGPU_CPU_PROFILE", "1", 1);
    ::testing::internal::CaptureStderr();
    const std::vector<graph::Tensor> outputs = device->compile(stepper.graph())->run_host(inputs);
    const std::string profile = ::testing::internal::GetCapturedStderr();
    unsetenv("SEXPGPU_CPU_PROFILE");
    // Both parameters' updates, the decayed and the undecayed, each its own step.
    for (const char* update : {"adamw of f32[40, 24] and", "adamw of f32[27] and"}) {
      const size_t at = profile.find(update);
      ASSERT_NE(at, std::string::npos) << profile;
      EXPECT_NE(profile.find(", its gradient scaled by its last operand", at), std::string::npos) << profile;
    }
    const std::vector<graph::Tensor> want = device->compile(decomposed)->run_host(inputs);
    ASSERT_EQ(outputs.size(), want.size());
    for (size_t k = 0; k < outputs.size(); ++k) EXPECT_TRUE(outputs[k] == want[k]) << stepper.graph().outputs[k].name;
  }
}

// --- Groups and state -------------------------------------------------------------------

const std::string kGrouped = R"(
(defmodel norm (dim) (defparam scale (ones [dim]) :tags [:no-decay]) (lambda (x) (* x scale)))
(defmodel net (dim)
  (defparam embed (zeros [dim]) :tags [:no-decay :embed])
  (defparam w (zeros [dim dim]))
  (defparam frozen (zeros [dim]) :trainable false :tags [:no-decay])
  (let ((norm (norm dim))) (lambda (x) (norm (matmul (+ x embed) w)))))
(defvar model (net 2))
)";

TEST(Groups, FirstMatchWinsFrozenJoinNoneTheRestTakeTheDefaults) {
  RunFile f;
  f.load(kGrouped);
  const auto& opt = f.optimizer(
      "(adamw :lr 0.001 :weight-decay 0.1 :groups (list (group (select :tag :embed) :lr 0.01)"
      " (group (select :tag :no-decay) :weight-decay 0.0)))");
  GroupAssignment groups = assign_groups(f.table, opt);
  ASSERT_EQ(groups.params.size(), 3u);
  EXPECT_EQ(groups.params[0].param->path, "model.embed");
  EXPECT_EQ(groups.params[0].group, 0);
  EXPECT_EQ(groups.params[0].lr, 0.01);
  EXPECT_EQ(groups.params[0].weight_decay, 0.1);  // the first group leaves it the optimizer's
  EXPECT_EQ(groups.params[1].param->path, "model.w");
  EXPECT_EQ(groups.params[1].group, -1);
  EXPECT_EQ(groups.params[1].lr, 0.001);
  EXPECT_EQ(groups.params[2].param->path, "model.norm.scale");
  EXPECT_EQ(groups.params[2].group, 1);
  EXPECT_EQ(groups.params[2].weight_decay, 0.0);
  EXPECT_EQ(groups.params[2].lr, 0.001);
  EXPECT_TRUE(groups.warnings.empty());
}

TEST(Groups, AGroupNoParameterJoinsIsAWarning) {
  RunFile f;
  f.load(kGrouped);
  // :nodecay is misspelled; the second (select :tag :embed) is taken by the first.
  const auto& opt = f.optimizer(
      "(adamw :groups (list (group (select :tag :nodecay) :weight-decay 0.0) (group (select :tag :embed))"
      " (group (select :path \"model.embed\"))))");
  GroupAssignment groups = assign_groups(f.table, opt);
  ASSERT_EQ(groups.warnings.size(), 2u);
  EXPECT_EQ(groups.warnings[0].code, "W-RUN-001");
  EXPECT_EQ(groups.warnings[0].severity, lang::Severity::Warning);
  EXPECT_NE(groups.warnings[0].message.find("(select :tag :nodecay)"), std::string::npos);
  EXPECT_NE(groups.warnings[1].message.find("model.embed"), std::string::npos);
  EXPECT_EQ(std::string(groups.warnings[0].span.file->text().substr(groups.warnings[0].span.offset, 6)), "(group");
}

TEST(State, NamedByPathInTheOrderBuildUpdateUses) {
  RunFile f;
  f.load(kGrouped);
  const auto& adamw = f.optimizer("(adamw)");
  GroupAssignment groups = assign_groups(f.table, adamw);
  UpdateSettings settings = settings_for(adamw);
  settings.ema = 0.99;
  std::vector<std::string> names;
  for (const auto& s : state_tensors(groups, settings)) {
    names.push_back(s.name);
    EXPECT_EQ(s.dtype, graph::DType::f32);
    EXPECT_EQ(s.shape, f.table.find(s.path)->decl->shape);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"opt.model.embed.m", "opt.model.embed.v", "opt.model.w.m", "opt.model.w.v",
                                             "opt.model.norm.scale.m", "opt.model.norm.scale.v", "ema.model.embed",
                                             "ema.model.w", "ema.model.norm.scale"}));
  // build_update makes one input of each, by that name, in that order.
  graph::Graph g;
  graph::Builder b(g);
  std::vector<ParamNodes> nodes;
  for (const auto& e : groups.params) {
    graph::NodeId p = b.input(e.param->path, e.param->decl->shape, graph::DType::f32);
    nodes.push_back({p, p});
  }
  UpdateGraph u = build_update(b, groups, nodes, settings);
  ASSERT_EQ(u.state.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(g.inputs[g.inputs.size() - names.size() + i].name, names[i]);
  EXPECT_EQ(*g.find_input("step"), u.step);

  const auto& sgd = f.optimizer("(sgd :momentum 0.9)");
  names.clear();
  for (const auto& s : state_tensors(assign_groups(f.table, sgd), settings_for(sgd))) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"opt.model.embed.momentum", "opt.model.w.momentum",
                                             "opt.model.norm.scale.momentum"}));
  const auto& plain = f.optimizer("(sgd)");
  EXPECT_TRUE(state_tensors(assign_groups(f.table, plain), settings_for(plain)).empty());
}

TEST(Update, AGivenStepInputIsUsedAndMisuseIsRefused) {
  RunFile f;
  f.load(kToy);
  const auto& opt = f.optimizer("(sgd)");
  GroupAssignment groups = assign_groups(f.table, opt);
  graph::Graph g;
  graph::Builder b(g);
  graph::NodeId step = b.input("train.step", {}, graph::DType::i64);
  std::vector<ParamNodes> nodes;
  for (const auto& e : groups.params) {
    graph::NodeId p = b.input(e.param->path, e.param->decl->shape, graph::DType::f32);
    nodes.push_back({p, p});
  }
  EXPECT_EQ(build_update(b, groups, nodes, settings_for(opt), step).step, step);
  EXPECT_FALSE(g.find_input("step"));
  EXPECT_THROW(build_update(b, groups, std::span<const ParamNodes>(nodes).first(1), settings_for(opt), step),
               std::invalid_argument);
  // warmup-cosine ends at the run's last step: without one it is refused.
  UpdateSettings no_total = settings_for(opt, &f.schedule("(warmup-cosine :warmup 3)"), 0);
  try {
    build_update(b, groups, nodes, no_total, step);
    ADD_FAILURE() << "no error";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-RUN-011");
  }
}

// --- The values and their checks ----------------------------------------------------------

std::string printed(const std::string& text) {
  RunFile f;
  return lang::print(f.eval(text));
}

TEST(Specs, PrintWithEveryOptionAndPyTorchsDefaults) {
  EXPECT_EQ(printed("(adamw)"), "(adamw :lr 0.001 :betas [0.9 0.999] :eps 1e-08 :weight-decay 0.01)");
  EXPECT_EQ(printed("(sgd)"), "(sgd :lr 0.001 :momentum 0.0 :weight-decay 0.0)");
  EXPECT_EQ(printed("(adamw :lr 1 :betas (list 0.5 0.6) :groups [(group (select :tag :x) :lr 0.1)])"),
            "(adamw :lr 1.0 :betas [0.5 0.6] :eps 1e-08 :weight-decay 0.01 :groups (list (group (select :tag :x) "
            ":lr 0.1)))");
  EXPECT_EQ(printed("(list (constant) (warmup-cosine :warmup 10) (warmup-linear :end-lr 0))"),
            "((constant :warmup 0) (warmup-cosine :warmup 10 :min-lr 0.0) (warmup-linear :warmup 0 :end-lr 0.0))");
  EXPECT_EQ(printed("(list (type-of (adamw)) (type-of (group (select :tag :x))) (type-of (constant)))"),
            "(:optimizer :optimizer-group :schedule)");
}

TEST(Specs, BadOptionsAreRefusedWhenCalled) {
  for (const char* bad :
       {"(adamw :lr -1)", "(adamw :lr \"fast\")", "(adamw :betas 0.9)", "(adamw :betas [0.9])",
        "(adamw :betas [0.9 1.0])", "(adamw :eps -1e-8)", "(adamw :weight-decay -0.1)", "(sgd :momentum 1.5)",
        "(sgd :momentum -0.1)", "(adamw :groups 3)", "(adamw :groups (list (select :tag :x)))", "(group :no-decay)",
        "(group (select :tag :x) :lr -1)"}) {
    EXPECT_EQ(error_code(bad), "E-RUN-010") << bad;
  }
  for (const char* bad : {"(warmup-cosine :warmup 0.1)", "(warmup-cosine :warmup -1)", "(warmup-linear :end-lr -1e-5)",
                          "(warmup-cosine :min-lr :none)"}) {
    EXPECT_EQ(error_code(bad), "E-RUN-011") << bad;
  }
  EXPECT_EQ(error_code("(adamw :momentum 0.9)"), "E-EVAL-006");
  EXPECT_EQ(error_code("(constant :min-lr 0.1)"), "E-EVAL-006");
  EXPECT_EQ(error_code("(warmup-linear :min-lr 0.1)"), "E-EVAL-006");
  EXPECT_EQ(error_code("(sgd :lr)"), "E-EVAL-007");
}

TEST(Specs, DefrunChecksTheTrainingSettings) {
  for (const char* bad :
       {"(defrun :optimizer :adamw)", "(defrun :schedule (adamw))", "(defrun :optimizer (constant))",
        "(defrun :grad-clip 0)", "(defrun :grad-clip -1.0)", "(defrun :ema 1.0)", "(defrun :ema :yes)"}) {
    EXPECT_EQ(error_code(bad), "E-RUN-001") << bad;
  }
  // nil is none: a knob can turn clipping or the EMA off.
  EXPECT_EQ(error_code("(defrun :optimizer nil :schedule nil :grad-clip nil :ema nil)"), "");
  RunFile f;
  f.load("(defrun :optimizer (sgd :lr 0.1) :schedule (warmup-linear) :grad-clip 1 :ema 0.999 :steps 10)");
  ASSERT_NE(f.settings->optimizer(), nullptr);
  EXPECT_EQ(f.settings->optimizer()->lr, 0.1);
  ASSERT_NE(f.settings->schedule(), nullptr);
  EXPECT_EQ(f.settings->schedule()->kind, ScheduleSpec::Kind::Linear);
  EXPECT_EQ(f.settings->number("grad-clip"), 1.0);
  EXPECT_EQ(f.settings->number("ema"), 0.999);
  EXPECT_EQ(f.settings->number("batch"), std::nullopt);
}

}  // namespace
}  // namespace sx::train::testing
