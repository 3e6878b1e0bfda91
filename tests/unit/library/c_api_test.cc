// The C API (include/sexpgpu.h) through libsexpgpu.so, on models the serve tests' fixture
// writes: opening exports and checkpoints, their inputs and outputs, calls whose bits are
// those serve's code path gives, the errors a caller can meet (each with its code), and
// one model shared by eight threads.
#include <gtest/gtest.h>
#include <sexpgpu.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "device/device.h"
#include "library/from_c.h"
#include "serve/batcher.h"
#include "serve/fixture.h"
#include "serve/model.h"

namespace sx::library {
namespace {

using serve::testing::TempDir;

struct Failure {
  std::string code, message;
};

// The error's code and message, the error freed; empty for none.
Failure failure(sexpgpu_error* error) {
  if (!error) return {};
  Failure f{sexpgpu_error_code(error), sexpgpu_error_message(error)};
  sexpgpu_error_free(error);
  return f;
}

// A model opened by the C API, closed at the end of the scope.
class Opened {
 public:
  explicit Opened(const std::string& location, const sexpgpu_options* options = nullptr) {
    Failure f = failure(sexpgpu_open(location.c_str(), options, &model_));
    EXPECT_EQ(f.code, "") << f.message;
  }
  ~Opened() { sexpgpu_close(model_); }
  Opened(const Opened&) = delete;
  Opened& operator=(const Opened&) = delete;
  sexpgpu_model* get() const { return model_; }

  // One call: the inputs' bytes as one body (a call frame's), the outputs' as one answer's
  // body after its status byte; the error's code and message, or the outputs.
  std::string run(const std::string& call, Failure* error = nullptr) const {
    std::vector<sexpgpu_const_buffer> inputs;
    size_t at = 0;
    for (int i = 0; i < sexpgpu_input_count(model_); ++i) {
      sexpgpu_tensor_info info;
      EXPECT_EQ(failure(sexpgpu_input_info(model_, i, &info)).code, "");
      inputs.push_back({call.data() + at, info.byte_size});
      at += info.byte_size;
    }
    std::vector<size_t> sizes;
    size_t total = 0;
    for (int j = 0; j < sexpgpu_output_count(model_); ++j) {
      sexpgpu_tensor_info info;
      EXPECT_EQ(failure(sexpgpu_output_info(model_, j, &info)).code, "");
      sizes.push_back(info.byte_size);
      total += info.byte_size;
    }
    std::string answer(total, '\x55');
    std::vector<sexpgpu_buffer> outputs;
    for (size_t j = 0, offset = 0; j < sizes.size(); offset += sizes[j++]) {
      outputs.push_back({answer.data() + offset, sizes[j]});
    }
    Failure f = failure(sexpgpu_run(model_, inputs.data(), inputs.size(), outputs.data(), outputs.size()));
    if (error) *error = f;
    else EXPECT_EQ(f.code, "") << f.message;
    return f.code.empty() ? answer : std::string();
  }

 private:
  sexpgpu_model* model_ = nullptr;
};

// What serve's code path answers to `call` on the model at `location` (resolve_operand,
// open_model, the server's check of the call's values and a Batcher on the cpu device):
// the outputs after the status byte, or the error text after it.
std::string served(const std::string& location, const std::string& call, const serve::ServeOptions& options = {}) {
  serve::ServedModel model = serve::open_model(serve::resolve_operand(location), options);
  auto device = device::make_device("cpu");
  serve::Batcher batcher(*device, model, 1);
  if (auto why = serve::check_call_values(batcher.layout(), call, model.at_limit)) return *why;
  return batcher.run({&call, 1}).at(0).substr(1);
}

graph::Tensor i32_at(int32_t place) {
  graph::Tensor t(graph::DType::i32, {1});
  t.data<int32_t>()[0] = place;
  return t;
}

sexpgpu_options defaults() {
  sexpgpu_options options;
  sexpgpu_options_init(&options);
  return options;
}

TEST(CApi, VersionIsTheHeadersAndTheProjects) {
  EXPECT_STREQ(sexpgpu_version(), SEXPGPU_VERSION);
  EXPECT_STREQ(SEXPGPU_VERSION, SEXPGPU_PROJECT_VERSION);
}

TEST(CApi, OptionsInitGivesServesDefaults) {
  sexpgpu_options options;
  std::memset(&options, 0x7f, sizeof options);
  sexpgpu_options_init(&options);
  EXPECT_EQ(options.size, sizeof options);
  EXPECT_EQ(options.device, nullptr);
  EXPECT_EQ(options.cpu_cores, 0);
  EXPECT_EQ(options.batch, 1);
  EXPECT_EQ(options.outputs, nullptr);
  EXPECT_EQ(options.output_count, 0u);
  EXPECT_EQ(options.at, 0);
  EXPECT_EQ(options.precision, nullptr);
  EXPECT_EQ(options.trained, 0);
  sexpgpu_options_init(nullptr);
}

TEST(CApi, AnExportListsItsInputsAndOutputs) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm({.mask = true}));
  Opened model(tmp / "export");
  ASSERT_EQ(sexpgpu_input_count(model.get()), 2);
  ASSERT_EQ(sexpgpu_output_count(model.get()), 1);
  sexpgpu_tensor_info info;
  ASSERT_EQ(failure(sexpgpu_input_info(model.get(), 0, &info)).code, "");
  EXPECT_STREQ(info.name, "inputs.0");
  EXPECT_STREQ(info.dtype, "i32");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 1);
  EXPECT_EQ(info.shape[1], serve::testing::kWindow);
  EXPECT_EQ(info.shape[2], 0);
  EXPECT_EQ(info.byte_size, 4u * serve::testing::kWindow);
  ASSERT_EQ(failure(sexpgpu_input_info(model.get(), 1, &info)).code, "");
  EXPECT_STREQ(info.name, "inputs.1");
  EXPECT_STREQ(info.dtype, "bool");
  EXPECT_EQ(info.byte_size, 1u * serve::testing::kWindow);
  ASSERT_EQ(failure(sexpgpu_output_info(model.get(), 0, &info)).code, "");
  EXPECT_STREQ(info.name, "output");
  EXPECT_STREQ(info.dtype, "f32");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.shape[2], serve::testing::kVocab);
  EXPECT_EQ(info.byte_size, 4u * serve::testing::kWindow * serve::testing::kVocab);

  Failure past = failure(sexpgpu_output_info(model.get(), 1, &info));
  EXPECT_EQ(past.code, "E-API-002");
  EXPECT_EQ(past.message, "sexpgpu_output_info: no output 1: the model has 1, 0 to 0");
  EXPECT_EQ(failure(sexpgpu_input_info(model.get(), -1, &info)).code, "E-API-002");
  EXPECT_EQ(failure(sexpgpu_input_info(model.get(), 0, nullptr)).code, "E-API-001");
}

// The bits serve's code path gives, for an export, a checkpoint named by its step and a
// location whose newest checkpoint it is (of other weights than the older one).
TEST(CApi, CallsGiveTheBitsServeGives) {
  TempDir tmp;
  auto m = serve::testing::tiny_lm();
  serve::testing::write_model(tmp / "export", m);
  auto older = m;
  older.weights[0].second = serve::testing::pseudo_random({serve::testing::kVocab, serve::testing::kWidth}, 9);
  serve::testing::write_checkpoint(tmp / "run", older, 10);
  const std::string newest = serve::testing::write_checkpoint(tmp / "run", m, 20);
  const std::string call = serve::testing::call_body({serve::testing::ids(3)});
  const std::string expected = served(tmp / "export", call);
  ASSERT_EQ(expected.size(), 4u * serve::testing::kWindow * serve::testing::kVocab);
  for (const std::string& location : {tmp / "export", newest, tmp / "run", "file://" + tmp / "run"}) {
    Opened model(location);
    EXPECT_EQ(model.run(call), expected) << location;
  }
  Opened step_10(tmp / "run/step-00000010");
  EXPECT_EQ(step_10.run(call), served(tmp / "run/step-00000010", call));
  EXPECT_NE(step_10.run(call), expected);
}

TEST(CApi, FromCRunsTheModel) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  const std::string call = serve::testing::call_body({serve::testing::ids(5)});
  std::string out(4 * serve::testing::kWindow * serve::testing::kVocab, '\0');
  EXPECT_STREQ(run_once_from_c((tmp / "export").c_str(), 2, call.data(), call.size(), out.data(), out.size()), "");
  EXPECT_EQ(out, served(tmp / "export", call));
  EXPECT_STREQ(run_once_from_c((tmp / "nothing").c_str(), 1, call.data(), call.size(), out.data(), out.size()),
               "E-CKPT-003");
}

// --output, --at, --precision and --batch as options: serve's bits for serve's flags.
TEST(CApi, OptionsShapeTheModelAsServesFlagsDo) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm({.mask = true, .heavy_head = true}));
  graph::Tensor mask(graph::DType::boolean, {1, serve::testing::kWindow});
  for (int64_t k = 0; k < serve::testing::kWindow; ++k) mask.data<bool>()[k] = k % 3 != 0;
  const std::string call = serve::testing::call_body({serve::testing::ids(4), mask, i32_at(5)});
  const char* names[] = {"aux", "output"};
  sexpgpu_options options = defaults();
  options.outputs = names;
  options.output_count = 2;
  options.at = 1;
  options.precision = "bf16";
  options.batch = 4;
  options.device = "cpu";
  options.cpu_cores = 1;
  Opened model(tmp / "export", &options);
  ASSERT_EQ(sexpgpu_input_count(model.get()), 3);
  sexpgpu_tensor_info info;
  ASSERT_EQ(failure(sexpgpu_input_info(model.get(), 2, &info)).code, "");
  EXPECT_STREQ(info.name, "at");
  ASSERT_EQ(failure(sexpgpu_output_info(model.get(), 0, &info)).code, "");
  EXPECT_STREQ(info.name, "aux");
  EXPECT_EQ(info.shape[1], 1);
  EXPECT_EQ(model.run(call),
            served(tmp / "export", call, {.outputs = {"aux", "output"}, .at = true, .precision = "bf16"}));
}

TEST(CApi, AMissingLocationIsNoCheckpoint) {
  TempDir tmp;
  sexpgpu_model* model = reinterpret_cast<sexpgpu_model*>(&tmp);
  Failure f = failure(sexpgpu_open((tmp / "nowhere").c_str(), nullptr, &model));
  EXPECT_EQ(f.code, "E-CKPT-003");
  EXPECT_NE(f.message.find(tmp / "nowhere"), std::string::npos) << f.message;
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(failure(sexpgpu_open(nullptr, nullptr, &model)).code, "E-API-001");
  EXPECT_EQ(failure(sexpgpu_open((tmp / "nowhere").c_str(), nullptr, nullptr)).code, "E-API-001");
}

TEST(CApi, WrongCountsAndSizesNameWhich) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  Opened model(tmp / "export");
  std::string ids = serve::testing::call_body({serve::testing::ids(1)});
  std::string out(4 * serve::testing::kWindow * serve::testing::kVocab, '\0');
  const std::string untouched = out;
  sexpgpu_const_buffer in[2] = {{ids.data(), ids.size()}, {ids.data(), ids.size()}};
  sexpgpu_buffer outs[2] = {{out.data(), out.size()}, {out.data(), out.size()}};

  Failure two_inputs = failure(sexpgpu_run(model.get(), in, 2, outs, 1));
  EXPECT_EQ(two_inputs.code, "E-API-002");
  EXPECT_EQ(two_inputs.message, "sexpgpu_run: 2 inputs given; the model takes 1: `inputs` [1, 8] i32");
  Failure no_output = failure(sexpgpu_run(model.get(), in, 1, outs, 0));
  EXPECT_EQ(no_output.code, "E-API-002");
  EXPECT_EQ(no_output.message, "sexpgpu_run: 0 outputs given; the model takes 1: `output` [1, 8, 32] f32");

  in[0].bytes = 16;
  Failure short_input = failure(sexpgpu_run(model.get(), in, 1, outs, 1));
  EXPECT_EQ(short_input.code, "E-API-002");
  EXPECT_EQ(short_input.message, "sexpgpu_run: input 0 (`inputs` [1, 8] i32) takes 32 bytes; its buffer has 16");
  in[0].bytes = ids.size();
  outs[0].bytes = out.size() + 4;
  Failure long_output = failure(sexpgpu_run(model.get(), in, 1, outs, 1));
  EXPECT_EQ(long_output.code, "E-API-002");
  EXPECT_EQ(long_output.message,
            "sexpgpu_run: output 0 (`output` [1, 8, 32] f32) takes 1024 bytes; its buffer has 1028");
  outs[0].bytes = out.size();
  in[0].data = nullptr;
  EXPECT_EQ(failure(sexpgpu_run(model.get(), in, 1, outs, 1)).code, "E-API-001");
  EXPECT_EQ(failure(sexpgpu_run(model.get(), nullptr, 1, outs, 1)).code, "E-API-001");
  EXPECT_EQ(out, untouched);
}

TEST(CApi, NullAndClosedModelsAreErrorsNotCrashes) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  std::string ids = serve::testing::call_body({serve::testing::ids(1)});
  std::string out(4 * serve::testing::kWindow * serve::testing::kVocab, '\0');
  sexpgpu_const_buffer in = {ids.data(), ids.size()};
  sexpgpu_buffer outs = {out.data(), out.size()};
  sexpgpu_tensor_info info;

  Failure null_model = failure(sexpgpu_run(nullptr, &in, 1, &outs, 1));
  EXPECT_EQ(null_model.code, "E-API-001");
  EXPECT_EQ(null_model.message, "sexpgpu_run: the model is NULL");
  EXPECT_EQ(sexpgpu_input_count(nullptr), -1);
  EXPECT_EQ(sexpgpu_output_count(nullptr), -1);
  EXPECT_EQ(failure(sexpgpu_input_info(nullptr, 0, &info)).code, "E-API-001");
  sexpgpu_close(nullptr);

  sexpgpu_model* model = nullptr;
  ASSERT_EQ(failure(sexpgpu_open((tmp / "export").c_str(), nullptr, &model)).code, "");
  EXPECT_EQ(failure(sexpgpu_run(model, &in, 1, &outs, 1)).code, "");
  sexpgpu_close(model);
  Failure closed = failure(sexpgpu_run(model, &in, 1, &outs, 1));
  EXPECT_EQ(closed.code, "E-API-001");
  EXPECT_EQ(closed.message, "sexpgpu_run: the model is closed (or was never opened)");
  EXPECT_EQ(sexpgpu_input_count(model), -1);
  EXPECT_EQ(failure(sexpgpu_output_info(model, 0, &info)).code, "E-API-001");
  sexpgpu_close(model);  // twice: nothing happens

  EXPECT_STREQ(sexpgpu_error_code(nullptr), "");
  sexpgpu_error_free(nullptr);
}

// A bool byte other than 0 or 1, an `at` off the axis and a token id outside the
// vocabulary: E-SERVE-008, in serve's words.
TEST(CApi, ValuesServeRefusesAreRefusedInItsWords) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm({.mask = true}));
  sexpgpu_options options = defaults();
  options.at = 1;
  Opened model(tmp / "export", &options);
  graph::Tensor mask(graph::DType::boolean, {1, serve::testing::kWindow});
  graph::Tensor bad_ids = serve::testing::ids(2);
  bad_ids.data<int32_t>()[1] = -1;  // at the place `at` reads
  std::string bad_mask = serve::testing::call_body({serve::testing::ids(2), mask, i32_at(1)});
  bad_mask[4 * serve::testing::kWindow + 2] = 2;
  const std::vector<std::string> calls = {
      bad_mask, serve::testing::call_body({serve::testing::ids(2), mask, i32_at(serve::testing::kWindow)}),
      serve::testing::call_body({bad_ids, mask, i32_at(1)})};
  for (const std::string& call : calls) {
    Failure f;
    model.run(call, &f);
    EXPECT_EQ(f.code, "E-SERVE-008");
    EXPECT_EQ("error[E-SERVE-008]: " + f.message, served(tmp / "export", call, {.at = true}));
  }
  // The model still answers.
  const std::string fine = serve::testing::call_body({serve::testing::ids(2), mask, i32_at(1)});
  EXPECT_EQ(model.run(fine), served(tmp / "export", fine, {.at = true}));
}

TEST(CApi, OptionsOfASizeThisLibraryCannotReadAreRefused) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  sexpgpu_model* model = nullptr;
  sexpgpu_options options = defaults();
  options.size = 0;
  Failure unset = failure(sexpgpu_open((tmp / "export").c_str(), &options, &model));
  EXPECT_EQ(unset.code, "E-API-003");
  EXPECT_NE(unset.message.find("sexpgpu_options_init"), std::string::npos) << unset.message;

  // A newer caller's struct: its fields past this library's are read as unset when zero.
  struct Newer {
    sexpgpu_options known;
    int64_t added;
  } newer{defaults(), 0};
  newer.known.size = sizeof newer;
  EXPECT_EQ(failure(sexpgpu_open((tmp / "export").c_str(), &newer.known, &model)).code, "");
  sexpgpu_close(model);
  newer.added = 1;
  EXPECT_EQ(failure(sexpgpu_open((tmp / "export").c_str(), &newer.known, &model)).code, "E-API-003");
  EXPECT_EQ(model, nullptr);
}

TEST(CApi, OptionsThatDoNotFitAreServesAndTheDevicesErrors) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  auto open_code = [&](sexpgpu_options options) {
    sexpgpu_model* model = nullptr;
    Failure f = failure(sexpgpu_open((tmp / "export").c_str(), &options, &model));
    sexpgpu_close(model);
    return f.code;
  };
  const char* unknown[] = {"logits"};
  const char* missing[] = {nullptr};
  sexpgpu_options options = defaults();
  options.trained = 1;
  EXPECT_EQ(open_code(options), "E-SERVE-004");
  options = defaults();
  options.outputs = unknown;
  options.output_count = 1;
  EXPECT_EQ(open_code(options), "E-SERVE-004");
  options.outputs = missing;
  EXPECT_EQ(open_code(options), "E-API-001");
  options.outputs = nullptr;
  EXPECT_EQ(open_code(options), "E-API-001");
  options = defaults();
  options.batch = 0;
  EXPECT_EQ(open_code(options), "E-SERVE-004");
  options.batch = 257;
  EXPECT_EQ(open_code(options), "E-SERVE-004");
  options = defaults();
  options.precision = "f16";
  EXPECT_EQ(open_code(options), "E-SERVE-004");
  options = defaults();
  options.device = "metal";
  EXPECT_EQ(open_code(options).substr(0, 9), "E-DEVICE-");
  options.device = "cpu";
  options.cpu_cores = -1;
  EXPECT_EQ(open_code(options), "E-DEVICE-001");
}

TEST(CApi, MoreThanEightAxesIsRefusedAtOpen) {
  TempDir tmp;
  serve::testing::TestModel m;
  graph::Builder b(m.graph);
  const graph::Shape nine = {1, 1, 1, 1, 1, 1, 1, 1, 2};
  b.output("output", b.tanh(b.input("inputs", nine, graph::DType::f32)));
  m.inputs.push_back({"inputs", nine, graph::DType::f32});
  m.outputs.push_back({"output", nine, graph::DType::f32});
  serve::testing::write_model(tmp / "export", m);
  sexpgpu_model* model = nullptr;
  Failure f = failure(sexpgpu_open((tmp / "export").c_str(), nullptr, &model));
  EXPECT_EQ(f.code, "E-API-004");
  EXPECT_EQ(f.message,
            "sexpgpu_open: the input `inputs` [1, 1, 1, 1, 1, 1, 1, 1, 2] f32 has 9 axes; the library "
            "takes at most 8");
  EXPECT_EQ(model, nullptr);
}

// One model, eight threads calling it at once with their own inputs: each call gets the
// bits serve gives it alone.
TEST(CApi, EightThreadsShareOneModel) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  std::vector<std::string> calls, expected;
  for (uint32_t seed = 0; seed < 8; ++seed) {
    calls.push_back(serve::testing::call_body({serve::testing::ids(seed)}));
    expected.push_back(served(tmp / "export", calls.back()));
  }
  sexpgpu_options options = defaults();
  options.batch = 4;
  Opened model(tmp / "export", &options);
  std::atomic<int> wrong = 0;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        size_t k = (t + static_cast<size_t>(i)) % calls.size();
        Failure f;
        if (model.run(calls[k], &f) != expected[k] || !f.code.empty()) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
}

// A thread that closes the model while others call it: the calls running finish, the
// later ones are E-API-001, and nothing crashes.
TEST(CApi, ClosingWhileOthersCallIsSafe) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  sexpgpu_model* model = nullptr;
  sexpgpu_options options = defaults();
  options.batch = 2;
  ASSERT_EQ(failure(sexpgpu_open((tmp / "export").c_str(), &options, &model)).code, "");
  const std::string call = serve::testing::call_body({serve::testing::ids(7)});
  const std::string expected = served(tmp / "export", call);
  std::atomic<int> answered = 0, refused = 0, wrong = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::string out(expected.size(), '\0');
      sexpgpu_const_buffer in = {call.data(), call.size()};
      sexpgpu_buffer outs = {out.data(), out.size()};
      for (;;) {
        Failure f = failure(sexpgpu_run(model, &in, 1, &outs, 1));
        if (f.code == "E-API-001") break;
        if (!f.code.empty() || out != expected) ++wrong;
        ++answered;
      }
      ++refused;
    });
  }
  while (answered < 20) std::this_thread::yield();
  sexpgpu_close(model);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused, 4);
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace sx::library
