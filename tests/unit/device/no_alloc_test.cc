// After its first run, a cpu plan runs into buffers it was given without
// allocating (counted by allocation_counter.h: the plan's arena, packing
// buffers and step inputs are made at compile time or on the first run), and
// writes its outputs over its inputs' buffers when given them (donation).
#include "../allocation_counter.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

TEST(NoAllocation, ACpuPlanRunsIntoItsOutputsWithoutAllocating) {
  // A layer's forward and its loss: matmul (f32 and bf16), add, tanh,
  // softmax's reductions, a transpose, a reshape view.
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int cores : {1, 2}) {
      Graph graph;
      Builder b(graph);
      NodeId x = b.input("x", {64, 96}, dtype);
      NodeId w = b.input("w", {96, 128}, dtype);
      NodeId bias = b.input("bias", {128}, dtype);
      NodeId h = b.tanh(b.add(b.matmul(x, w), b.broadcast_to(bias, {64, 128})));
      NodeId e = b.exp(b.sub(h, b.broadcast_to(b.reduce_max(h, {1}, true), {64, 128})));
      NodeId p = b.div(e, b.broadcast_to(b.sum(e, {1}, true), {64, 128}));
      b.output("p", b.reshape(b.transpose(p, {1, 0}), {128 * 64}));
      b.output("loss", b.sum(b.mul(h, h), {0, 1}));
      std::mt19937 rng(2);
      std::vector<Tensor> inputs;
      for (const auto& in : graph.inputs) inputs.push_back(random_tensor(dtype, graph.node(in.node).shape, rng));
      auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
      auto plan = on->compile(graph);
      std::vector<Buffer> in, out;
      for (const Tensor& t : inputs) in.push_back(on->upload(t));
      for (const auto& type : plan->output_types()) out.push_back(on->allocate(type));
      std::vector<const Buffer*> in_ptrs{&in[0], &in[1], &in[2]};
      std::vector<Buffer*> out_ptrs{&out[0], &out[1]};
      plan->run(in_ptrs, out_ptrs);
      plan->run(in_ptrs, out_ptrs);
      int64_t before = sx::testing::allocations();
      for (int i = 0; i < 10; ++i) plan->run(in_ptrs, out_ptrs);
      EXPECT_EQ(sx::testing::allocations() - before, 0)
          << graph::dtype_name(dtype) << " on " << cores << " cores: allocations in 10 runs";
      std::vector<Tensor> want = plan->run_host(inputs);
      EXPECT_TRUE(same_bits(on->download(out[0]), want[0]) && same_bits(on->download(out[1]), want[1]));
    }
  }
}

TEST(NoAllocation, ARunRefusesOutputBuffersOfTheWrongShape) {
  Graph graph;
  Builder b(graph);
  b.output("y", b.neg(b.input("x", {2}, DType::f32)));
  for (const char* device : {"cpu", "reference"}) {
    auto on = make_device(device);
    auto plan = on->compile(graph);
    Buffer x = on->upload(Tensor(DType::f32, {2})), wrong = on->allocate({{3}, DType::f32}), empty;
    std::vector<const Buffer*> inputs{&x};
    std::vector<Buffer*> outputs{&wrong};
    EXPECT_THROW(plan->run(inputs, outputs), DeviceError) << device;
    outputs = {&empty};
    EXPECT_THROW(plan->run(inputs, outputs), DeviceError) << device;
    outputs = {};
    EXPECT_THROW(plan->run(inputs, outputs), DeviceError) << device;
  }
}

// A host device's buffer can be read where it lies (a checkpoint does, rather than
// download a copy of a model); a buffer without memory has nothing to read there.
TEST(HostTensor, AHostBufferIsReadWhereItLies) {
  for (const char* device : {"cpu", "reference"}) {
    auto on = make_device(device);
    Buffer x = on->upload(Tensor::from_doubles(DType::f32, {2}, std::vector<double>{1, 2}));
    ASSERT_NE(host_tensor_if(x), nullptr) << device;
    EXPECT_EQ(host_tensor_if(x), &host_tensor(x)) << device;
    EXPECT_EQ(host_tensor_if(x)->to_doubles(), (std::vector<double>{1, 2})) << device;
  }
  EXPECT_EQ(host_tensor_if(Buffer{}), nullptr);
}

// The products of a plan run one at a time and share their packing buffers: a plan of a
// large and a small product holds the large one's, which its memory counts.
TEST(PlanMemory, TheProductsOfAPlanShareTheirPackingBuffers) {
  auto scratch_of = [](bool large, bool small) {
    Graph graph;
    Builder b(graph);
    if (large) b.output("large", b.matmul(b.input("a", {96, 512}, DType::f32), b.input("b", {512, 384}, DType::f32)));
    if (small) b.output("small", b.matmul(b.input("c", {8, 64}, DType::f32), b.input("d", {64, 32}, DType::f32)));
    return make_device("cpu", DeviceOptions{.cpu_cores = 1})->compile(graph)->memory().scratch_bytes;
  };
  const size_t large = scratch_of(true, false), small = scratch_of(false, true);
  EXPECT_GT(small, 0u);
  EXPECT_GT(large, small);
  EXPECT_EQ(scratch_of(true, true), large);
}

// The fused steps of a plan share their tiles of scratch, counted with the products'
// buffers: a second chain like the first costs nothing more.
TEST(PlanMemory, TheFusedStepsOfAPlanShareTheirTiles) {
  auto scratch_of = [](int chains) {
    Graph graph;
    Builder b(graph);
    for (int i = 0; i < chains; ++i) {
      b.output(fmt::format("y{}", i), b.exp(b.neg(b.input(fmt::format("x{}", i), {64, 1024}, DType::f32))));
    }
    return make_device("cpu", DeviceOptions{.cpu_cores = 1})->compile(graph)->memory().scratch_bytes;
  };
  EXPECT_GT(scratch_of(1), 0u);
  EXPECT_EQ(scratch_of(3), scratch_of(1));
}

// A product whose rows fit one block of A (a served call, gpt-large's forward: 128 rows)
// packs A whole and B a panel at a time, each panel small enough to stay in L2 (256 x 256
// floats): its buffers hold that panel, not one of the 2048 columns a product of many
// rows takes (which took gpt-large's forward from 5.6 to 9.1 MiB).
TEST(PlanMemory, AProductOfFewRowsHoldsAPanelOfBThatFitsL2) {
  Graph graph;
  Builder b(graph);
  b.output("c", b.matmul(b.input("a", {128, 768}, DType::f32), b.input("b", {768, 3072}, DType::f32)));
  const size_t scratch = make_device("cpu", DeviceOptions{.cpu_cores = 1})->compile(graph)->memory().scratch_bytes;
  const size_t a_packed = 132 * 768 * sizeof(float);
  EXPECT_GE(scratch, a_packed);
  EXPECT_LE(scratch, a_packed + (512u << 10));
}

// A bf16 product's f32 sums wait for their rounding in the plan's scratch, counted
// there, one buffer for all the plan's products: as large as the largest's output.
TEST(PlanMemory, TheBf16ProductsOfAPlanShareTheirF32Sums) {
  auto scratch_of = [](DType dtype, int products) {
    Graph graph;
    Builder b(graph);
    for (int i = 0; i < products; ++i) {
      b.output(fmt::format("c{}", i), b.matmul(b.input(fmt::format("a{}", i), {96, 512}, dtype),
                                               b.input(fmt::format("b{}", i), {512, 384}, dtype)));
    }
    return make_device("cpu", DeviceOptions{.cpu_cores = 1})->compile(graph)->memory().scratch_bytes;
  };
  const size_t sums = 96 * 384 * sizeof(float);
  EXPECT_GE(scratch_of(DType::bf16, 1), sums);
  EXPECT_EQ(scratch_of(DType::bf16, 3), scratch_of(DType::bf16, 1));
  EXPECT_LT(scratch_of(DType::f32, 1) + sums / 2, scratch_of(DType::bf16, 1) + sums);
}

// Donation: the step of a training loop writes each parameter's new value
// over its old one. Every input is read before any output is written, even
// when the outputs are the inputs swapped or passed through.
TEST(Donation, OutputsMayBeTheInputBuffers) {
  Graph graph;
  Builder b(graph);
  NodeId p = b.input("p", {3}, DType::f32), q = b.input("q", {3}, DType::f32);
  b.output("p2", b.add(p, q));
  b.output("q2", p);
  b.output("p3", q);
  for (const char* device : {"cpu", "reference"}) {
    auto on = make_device(device);
    auto plan = on->compile(graph);
    Buffer pb = on->upload(Tensor::from_doubles(DType::f32, {3}, std::vector<double>{1, 2, 3}));
    Buffer qb = on->upload(Tensor::from_doubles(DType::f32, {3}, std::vector<double>{10, 20, 30}));
    Buffer r = on->allocate({{3}, DType::f32});
    std::vector<const Buffer*> inputs{&pb, &qb};
    std::vector<Buffer*> outputs{&pb, &qb, &r};
    plan->run(inputs, outputs);
    EXPECT_EQ(on->download(pb).to_doubles(), (std::vector<double>{11, 22, 33})) << device;
    EXPECT_EQ(on->download(qb).to_doubles(), (std::vector<double>{1, 2, 3})) << device;
    EXPECT_EQ(on->download(r).to_doubles(), (std::vector<double>{10, 20, 30})) << device;
    outputs = {&r, &qb, &pb};  // p and q trade buffers
    plan->run(inputs, outputs);
    EXPECT_EQ(on->download(r).to_doubles(), (std::vector<double>{12, 24, 36})) << device;
    EXPECT_EQ(on->download(qb).to_doubles(), (std::vector<double>{11, 22, 33})) << device;
    EXPECT_EQ(on->download(pb).to_doubles(), (std::vector<double>{1, 2, 3})) << device;
  }
}

// A plan writes the outputs its steps compute straight into the caller's buffers, so its
// arena holds none of them; but where an output buffer is an input's, an output written
// early would be read back as the input by a later step, so such a run computes them in
// an arena that holds them, and copies them out at the end. Runs of either kind, in any
// order, give the same bits and, once each kind has run, allocate nothing.
TEST(Donation, AnOutputOverAnInputThatIsReadLaterWaitsForTheEnd) {
  Graph graph;
  Builder b(graph);
  const graph::Shape shape{4096};
  NodeId x = b.input("x", shape, DType::f32);
  NodeId first = b.add(x, b.broadcast(b.scalar(1.0, DType::f32), shape));  // computed before x's last read
  b.output("first", first);
  b.output("later", b.sum(b.mul(x, b.broadcast(b.sum(first, {0}, true), shape)), {0}));
  std::mt19937 rng(4);
  Tensor value = random_tensor(DType::f32, shape, rng);
  auto on = make_device("cpu", DeviceOptions{.cpu_cores = 1});
  auto plan = on->compile(graph);
  const std::vector<Tensor> want = on->compile(graph)->run_host(std::vector<Tensor>{value});  // apart from x
  const size_t direct_arena = plan->memory().arena_bytes;
  Buffer in = on->upload(value), out = on->allocate({shape, DType::f32}), sum = on->allocate({{}, DType::f32});
  std::vector<const Buffer*> inputs{&in};
  std::vector<Buffer*> apart{&out, &sum}, over{&in, &sum};
  for (int round = 0; round < 2; ++round) {
    in = on->upload(value);
    plan->run(inputs, apart);
    EXPECT_TRUE(same_bits(on->download(out), want[0]) && same_bits(on->download(sum), want[1])) << round;
    EXPECT_EQ(plan->memory().arena_bytes, direct_arena);
    plan->run(inputs, over);  // `first` over x, which the sum reads after it
    EXPECT_TRUE(same_bits(on->download(in), want[0]) && same_bits(on->download(sum), want[1])) << round;
    EXPECT_GE(plan->memory().arena_bytes, direct_arena + shape[0] * sizeof(float)) << "the output is in the arena";
  }
  in = on->upload(value);
  int64_t before = sx::testing::allocations();
  plan->run(inputs, apart);
  plan->run(inputs, over);
  EXPECT_EQ(sx::testing::allocations() - before, 0);
}

// An output whose step reads its input's bytes last, and tile for tile before writing over
// them (an optimizer's update of a parameter and its moments: one fused step), is written
// straight over the input it is given, so the arena holds no copy of it; one whose input
// a member of its step reads after writing (`after`), or that a step of its own reads
// with the result in the same instruction (`same`), is still computed in the arena. The
// bits are those of a run into buffers apart, on one core and on two.
TEST(Donation, AnOutputOverAnInputReadOnlyBeforeItIsWrittenGoesStraightThere) {
  const graph::Shape shape{3, 5000};
  const int64_t n = graph::numel(shape);
  Graph graph;
  Builder b(graph);
  NodeId p = b.input("p", shape, DType::f32), g = b.input("g", shape, DType::f32), m = b.input("m", shape, DType::f32);
  NodeId q = b.input("q", shape, DType::f32), r = b.input("r", shape, DType::f32);
  auto scalar = [&](double v) { return b.broadcast(b.scalar(v, DType::f32), shape); };
  b.output("loss", b.sum(b.mul(p, p), {0, 1}));
  NodeId m2 = b.add(b.mul(m, scalar(0.9)), b.mul(g, scalar(0.1)));
  b.output("p", b.sub(b.mul(p, scalar(0.999)), b.div(m2, b.add(b.sqrt(b.abs(m2)), scalar(1e-3)))));
  b.output("m", m2);
  NodeId twice = b.mul(q, scalar(2.0));
  b.output("after", twice);
  b.output("after_use", b.add(twice, q));
  b.output("same", b.add(r, g));
  std::mt19937 rng(5);
  std::vector<Tensor> values;
  for (const auto& in : graph.inputs) values.push_back(random_tensor(DType::f32, graph.node(in.node).shape, rng));
  for (int cores : {1, 2}) {
    auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
    auto plan = on->compile(graph);
    const std::vector<Tensor> want = plan->run_host(values);
    std::vector<Buffer> in;
    for (const Tensor& t : values) in.push_back(on->upload(t));
    Buffer loss = on->allocate({{}, DType::f32}), after_use = on->allocate({shape, DType::f32});
    std::vector<const Buffer*> inputs{&in[0], &in[1], &in[2], &in[3], &in[4]};
    std::vector<Buffer*> over{&loss, &in[0], &in[2], &in[3], &after_use, &in[4]};
    plan->run(inputs, over);
    const std::vector<Buffer*> written{&loss, &in[0], &in[2], &in[3], &after_use, &in[4]};
    for (size_t k = 0; k < written.size(); ++k) {
      EXPECT_TRUE(same_bits(on->download(*written[k]), want[k])) << graph.outputs[k].name << " on " << cores;
    }
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    EXPECT_GE(plan->memory().arena_bytes, 2 * bytes) << "`after` and `same` are in the arena";
    EXPECT_LT(plan->memory().arena_bytes, 3 * bytes) << "`p` and `m` are not";
  }
}

}  // namespace
}  // namespace sx::device::testing
