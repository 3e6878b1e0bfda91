// The loaders from C++: fields, determinism in (seed, step), resuming, epochs, and every
// kind of bad data refused with its code and where.
#include "train/loaders.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/test_util.h"

namespace sx::train {
namespace {

using graph::DType;
using graph::Tensor;
using io::testing::TempDir;
using io::testing::write_file;

LoaderSpec spec_of(LoaderKind kind, const std::string& path, int64_t window = 0) {
  LoaderSpec spec;
  spec.kind = kind;
  spec.written = path;
  spec.path = path;
  spec.window = window;
  return spec;
}

// The diagnostic opening `spec` (or, with `step` >= 0, reading that step) raises.
lang::Diagnostic error_of(const LoaderSpec& spec, int64_t step = -1) {
  try {
    auto loader = open_loader(spec);
    if (step >= 0) loader->batch(1, step, 4);
  } catch (const lang::Error& e) {
    return e.diagnostic();
  }
  ADD_FAILURE() << "no error from " << spec.print();
  return {};
}

std::string text_of(size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) text += static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return text;
}

std::string u16_tokens(const std::vector<uint16_t>& tokens) {
  std::string out;
  for (uint16_t t : tokens) out += {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
  return out;
}

std::string u32_tokens(const std::vector<uint32_t>& tokens) {
  std::string out;
  for (uint32_t t : tokens) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((t >> (8 * i)) & 0xff);
  }
  return out;
}

std::vector<int32_t> row(const Tensor& t, int64_t r) {
  int64_t n = t.numel() / t.shape()[0];
  return std::vector<int32_t>(t.data<int32_t>() + r * n, t.data<int32_t>() + (r + 1) * n);
}

// --- text-windows ----------------------------------------------------------------------

TEST(TextWindows, RecordsAreWindowsOfTheFilesBytesAsI32) {
  TempDir dir;
  std::string text = text_of(1000);
  write_file(dir.file("input.txt"), text);
  auto loader = open_loader(spec_of(LoaderKind::TextWindows, dir.file("input.txt"), 16));
  ASSERT_EQ(loader->fields().size(), 1u);
  EXPECT_EQ(loader->fields()[0], (FieldInfo{"ids", DType::i32, {17}}));
  EXPECT_EQ(loader->size(), 1000 - 17 + 1);
  Batch batch = loader->batch(7, 3, 8);
  ASSERT_EQ(batch.fields.size(), 1u);
  const Tensor* ids = batch.find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->dtype(), DType::i32);
  EXPECT_EQ(ids->shape(), (graph::Shape{8, 17}));
  for (int64_t r = 0; r < 8; ++r) {
    std::string window;
    for (int32_t c : row(*ids, r)) window += static_cast<char>(c);
    EXPECT_NE(text.find(window), std::string::npos) << window;
  }
  EXPECT_EQ(batch.find("nope"), nullptr);
}

TEST(TextWindows, ABatchIsAPureFunctionOfSeedAndStep) {
  TempDir dir;
  write_file(dir.file("input.txt"), text_of(5000));
  auto spec = spec_of(LoaderKind::TextWindows, dir.file("input.txt"), 32);
  auto a = open_loader(spec);
  auto b = open_loader(spec);
  Batch first = a->batch(11, 5, 4);
  // Whatever is asked in between, and from another loader of the same file.
  a->batch(11, 6, 4);
  a->batch(12, 5, 9);
  EXPECT_EQ(a->batch(11, 5, 4).fields, first.fields);
  EXPECT_EQ(b->batch(11, 5, 4).fields, first.fields);
  EXPECT_NE(a->batch(11, 6, 4).fields, first.fields);
  EXPECT_NE(a->batch(12, 5, 4).fields, first.fields);
}

TEST(TextWindows, AResumedRunSeesTheBatchesOfAnUnbrokenOne) {
  TempDir dir;
  write_file(dir.file("input.txt"), text_of(3000));
  auto spec = spec_of(LoaderKind::TextWindows, dir.file("input.txt"), 8);
  std::vector<Batch> unbroken;
  {
    auto loader = open_loader(spec);
    for (int64_t step = 0; step < 10; ++step) unbroken.push_back(loader->batch(3, step, 5));
  }
  auto resumed = open_loader(spec);
  for (int64_t step = 6; step < 10; ++step) EXPECT_EQ(resumed->batch(3, step, 5).fields, unbroken[step].fields);
}

TEST(TextWindows, WindowsStartAnywhereInTheFile) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += static_cast<char>(i);
  write_file(dir.file("input.txt"), text);
  auto loader = open_loader(spec_of(LoaderKind::TextWindows, dir.file("input.txt"), 3));
  std::set<int32_t> starts;
  for (int64_t step = 0; step < 50; ++step) {
    const Tensor ids = *loader->batch(0, step, 8).find("ids");
    for (int64_t r = 0; r < 8; ++r) {
      auto w = row(ids, r);
      for (size_t k = 1; k < w.size(); ++k) EXPECT_EQ(w[k], w[0] + static_cast<int32_t>(k));
      starts.insert(w[0]);
    }
  }
  // 400 draws over 37 starts: every start, the first and the last included.
  EXPECT_EQ(starts.size(), 37u);
  EXPECT_EQ(*starts.begin(), 0);
  EXPECT_EQ(*starts.rbegin(), 36);
}

TEST(TextWindows, AFileShorterThanOneWindowIsRefused) {
  TempDir dir;
  write_file(dir.file("short.txt"), "0123456789");
  auto d = error_of(spec_of(LoaderKind::TextWindows, dir.file("short.txt"), 10));
  EXPECT_EQ(d.code, "E-RUN-022");
  EXPECT_NE(d.message.find("short.txt"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("10 bytes, fewer than one window of 11"), std::string::npos) << d.message;
  // Exactly one window is enough.
  EXPECT_EQ(open_loader(spec_of(LoaderKind::TextWindows, dir.file("short.txt"), 9))->size(), 1);
  write_file(dir.file("empty.txt"), "");
  EXPECT_EQ(error_of(spec_of(LoaderKind::TextWindows, dir.file("empty.txt"), 1)).code, "E-RUN-022");
}

TEST(Loaders, AMissingFileOrAFolderIsRefusedNamingIt) {
  TempDir dir;
  for (auto kind : {LoaderKind::TextWindows, LoaderKind::TokenWindows, LoaderKind::Records, LoaderKind::Jsonl}) {
    auto d = error_of(spec_of(kind, dir.file("missing.bin"), 4));
    EXPECT_EQ(d.code, "E-RUN-021");
    EXPECT_EQ(d.message, dir.file("missing.bin") + ": the file does not exist");
    d = error_of(spec_of(kind, dir.path().string(), 4));
    EXPECT_EQ(d.code, "E-RUN-021");
    EXPECT_NE(d.message.find("a directory, not a file"), std::string::npos);
  }
}

TEST(Loaders, BadStepsAndBatchSizesAreProgrammingErrors) {
  TempDir dir;
  write_file(dir.file("input.txt"), text_of(100));
  auto loader = open_loader(spec_of(LoaderKind::TextWindows, dir.file("input.txt"), 4));
  EXPECT_THROW(loader->batch(0, -1, 4), std::invalid_argument);
  EXPECT_THROW(loader->batch(0, 0, 0), std::invalid_argument);
  EXPECT_THROW(loader->batch(0, int64_t{1} << 62, 8), std::invalid_argument);
}

// --- token-windows ---------------------------------------------------------------------

TEST(TokenWindows, ReadsLittleEndianU16U32AndI32Tokens) {
  TempDir dir;
  std::vector<uint16_t> u16;
  std::vector<uint32_t> u32;
  for (uint32_t i = 0; i < 500; ++i) {
    u16.push_back(static_cast<uint16_t>(60000 + i % 5000));
    u32.push_back(100000 + i);
  }
  write_file(dir.file("t16.bin"), u16_tokens(u16));
  write_file(dir.file("t32.bin"), u32_tokens(u32));
  auto spec = spec_of(LoaderKind::TokenWindows, dir.file("t16.bin"), 6);
  auto loader = open_loader(spec);
  EXPECT_EQ(loader->fields()[0], (FieldInfo{"ids", DType::i32, {7}}));
  EXPECT_EQ(loader->size(), 500 - 7 + 1);
  const Tensor ids = *loader->batch(1, 0, 4).find("ids");
  for (int64_t r = 0; r < 4; ++r) {
    auto w = row(ids, r);
    EXPECT_GE(w[0], 60000);  // u16 above 32767 stays positive
    for (size_t k = 1; k < w.size(); ++k) EXPECT_EQ(w[k], w[0] + static_cast<int32_t>(k));
  }
  for (auto format : {TokenFormat::u32, TokenFormat::i32}) {
    spec = spec_of(LoaderKind::TokenWindows, dir.file("t32.bin"), 6);
    spec.format = format;
    const Tensor wide = *open_loader(spec)->batch(1, 0, 4).find("ids");
    for (int64_t r = 0; r < 4; ++r) {
      auto w = row(wide, r);
      EXPECT_GE(w[0], 100000);
      for (size_t k = 1; k < w.size(); ++k) EXPECT_EQ(w[k], w[0] + static_cast<int32_t>(k));
    }
  }
}

TEST(TokenWindows, ATruncatedFileIsRefusedWithItsSize) {
  TempDir dir;
  write_file(dir.file("t.bin"), u16_tokens({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) + "x");
  auto d = error_of(spec_of(LoaderKind::TokenWindows, dir.file("t.bin"), 4));
  EXPECT_EQ(d.code, "E-RUN-022");
  EXPECT_NE(d.message.find("21 bytes, not a whole number of 2-byte u16 tokens"), std::string::npos) << d.message;
  write_file(dir.file("few.bin"), u16_tokens({1, 2, 3}));
  d = error_of(spec_of(LoaderKind::TokenWindows, dir.file("few.bin"), 4));
  EXPECT_EQ(d.code, "E-RUN-022");
  EXPECT_NE(d.message.find("3 tokens, fewer than one window of 5"), std::string::npos) << d.message;
}

TEST(TokenWindows, ATokenThatIsNoIdIsRefusedWithItsPosition) {
  TempDir dir;
  write_file(dir.file("big.bin"), u32_tokens(std::vector<uint32_t>(20, 3'000'000'000u)));
  auto spec = spec_of(LoaderKind::TokenWindows, dir.file("big.bin"), 4);
  spec.format = TokenFormat::u32;
  auto d = error_of(spec, 0);
  EXPECT_EQ(d.code, "E-RUN-022");
  EXPECT_NE(d.message.find("is 3000000000, which is not a token id"), std::string::npos) << d.message;
  spec.format = TokenFormat::i32;
  d = error_of(spec, 0);
  EXPECT_EQ(d.code, "E-RUN-022");
  EXPECT_NE(d.message.find("is -1294967296"), std::string::npos) << d.message;
}

TEST(TokenWindows, AFileCutShortAfterOpeningIsAnErrorNotACrash) {
  TempDir dir;
  write_file(dir.file("t.bin"), u16_tokens(std::vector<uint16_t>(1000, 7)));
  auto loader = open_loader(spec_of(LoaderKind::TokenWindows, dir.file("t.bin"), 8));
  ASSERT_EQ(::truncate(dir.file("t.bin").c_str(), 4), 0);
  try {
    loader->batch(0, 0, 16);
    FAIL() << "no error";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-RUN-022");
    EXPECT_NE(e.diagnostic().message.find("cut short since the run opened it"), std::string::npos);
  }
}

// --- records ---------------------------------------------------------------------------

// A records file of `rows` rows: `index` I32 [rows] holding each row's number, and `x` F32
// [rows, 3] holding 10*row + column.
std::string write_rows(const TempDir& dir, int64_t rows) {
  std::vector<double> index, x;
  for (int64_t r = 0; r < rows; ++r) {
    index.push_back(static_cast<double>(r));
    for (int c = 0; c < 3; ++c) x.push_back(static_cast<double>(10 * r + c));
  }
  std::string path = dir.file("rows.safetensors");
  io::write_safetensors(path, {{"index", Tensor::from_doubles(DType::i32, {rows}, index)},
                               {"x", Tensor::from_doubles(DType::f32, {rows, 3}, x)}});
  return path;
}

TEST(Records, EachTensorIsAFieldAndEachRowARecord) {
  TempDir dir;
  auto loader = open_loader(spec_of(LoaderKind::Records, write_rows(dir, 10)));
  EXPECT_EQ(loader->fields(), (std::vector<FieldInfo>{{"index", DType::i32, {}}, {"x", DType::f32, {3}}}));
  EXPECT_EQ(loader->size(), 10);
  Batch batch = loader->batch(5, 2, 4);
  const Tensor& index = *batch.find("index");
  const Tensor& x = *batch.find("x");
  EXPECT_EQ(index.shape(), (graph::Shape{4}));
  EXPECT_EQ(x.shape(), (graph::Shape{4, 3}));
  for (int64_t i = 0; i < 4; ++i) {
    int32_t r = index.data<int32_t>()[i];
    for (int c = 0; c < 3; ++c) EXPECT_EQ(x.data<float>()[i * 3 + c], static_cast<float>(10 * r + c));
  }
}

TEST(Records, EveryRecordIsSeenOncePerEpochInAnOrderOfTheSeed) {
  TempDir dir;
  auto loader = open_loader(spec_of(LoaderKind::Records, write_rows(dir, 10)));
  auto samples = [&](uint64_t seed) {
    std::vector<int32_t> out;
    for (int64_t step = 0; step < 10; ++step) {  // 30 samples: three epochs of 10
      const Tensor index = *loader->batch(seed, step, 3).find("index");
      out.insert(out.end(), index.data<int32_t>(), index.data<int32_t>() + 3);
    }
    return out;
  };
  auto seen = samples(42);
  std::vector<std::vector<int32_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    std::vector<int32_t> epoch(seen.begin() + 10 * e, seen.begin() + 10 * (e + 1));
    epochs.push_back(epoch);
    std::sort(epoch.begin(), epoch.end());
    for (int32_t r = 0; r < 10; ++r) EXPECT_EQ(epoch[r], r) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);  // each epoch has its own order
  EXPECT_NE(samples(43), seen);     // and the seed chooses it
  EXPECT_EQ(samples(42), seen);
  // The same samples with another batch size: sample g is g, however it is batched.
  std::vector<int32_t> by_five;
  for (int64_t step = 0; step < 6; ++step) {
    const Tensor index = *loader->batch(42, step, 5).find("index");
    by_five.insert(by_five.end(), index.data<int32_t>(), index.data<int32_t>() + 5);
  }
  EXPECT_EQ(by_five, seen);
}

TEST(Records, ShuffledRowIsAPermutationForEveryRowCount) {
  for (int64_t rows : {1, 2, 3, 5, 16, 17, 100, 1000, 4099}) {
    for (uint64_t epoch : {0u, 1u, 7u}) {
      std::vector<bool> hit(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) {
        int64_t r = shuffled_row(99, epoch, i, rows);
        ASSERT_GE(r, 0);
        ASSERT_LT(r, rows);
        EXPECT_FALSE(hit[r]) << rows << " rows, epoch " << epoch;
        hit[r] = true;
      }
    }
  }
  EXPECT_THROW(shuffled_row(0, 0, 5, 5), std::invalid_argument);
  EXPECT_THROW(shuffled_row(0, 0, 0, 0), std::invalid_argument);
}

TEST(Records, FilesThatAreNotRecordsAreRefusedNamingTheTensor) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  auto code_and_message = [&](const std::vector<std::pair<std::string, Tensor>>& tensors) {
    io::write_safetensors(path, tensors);
    return error_of(spec_of(LoaderKind::Records, path));
  };
  auto d = code_and_message({{"a", Tensor(DType::f32, {4, 2})}, {"b", Tensor(DType::i32, {5})}});
  EXPECT_EQ(d.code, "E-RUN-023");
  EXPECT_NE(d.message.find("tensor `b` has 5 rows but `a` has 4"), std::string::npos) << d.message;
  d = code_and_message({{"s", Tensor(DType::f32, {})}});
  EXPECT_EQ(d.code, "E-RUN-023");
  EXPECT_NE(d.message.find("tensor `s` is a scalar"), std::string::npos) << d.message;
  d = code_and_message({});
  EXPECT_EQ(d.code, "E-RUN-023");
  EXPECT_NE(d.message.find("holds no tensors"), std::string::npos) << d.message;
  d = code_and_message({{"a", Tensor(DType::f32, {0, 2})}});
  EXPECT_EQ(d.code, "E-RUN-023");
  EXPECT_NE(d.message.find("no rows"), std::string::npos) << d.message;
  // A dtype no field holds: F16, written by hand.
  write_file(path, io::testing::safetensors_bytes(R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4));
  d = error_of(spec_of(LoaderKind::Records, path));
  EXPECT_EQ(d.code, "E-RUN-023");
  EXPECT_NE(d.message.find("tensor `h` is F16"), std::string::npos) << d.message;
  // A file that is no safetensors keeps its E-LOAD code.
  write_file(path, "not a safetensors file at all");
  EXPECT_EQ(error_of(spec_of(LoaderKind::Records, path)).code.substr(0, 7), "E-LOAD-");
}

// --- jsonl -----------------------------------------------------------------------------

LoaderSpec jsonl_spec(const std::string& path, std::vector<std::string> fields) {
  LoaderSpec spec = spec_of(LoaderKind::Jsonl, path);
  spec.fields = std::move(fields);
  return spec;
}

TEST(Jsonl, FieldsAreNumbersOrFixedShapeArrays) {
  TempDir dir;
  std::string path = dir.file("d.jsonl");
  std::string text;
  for (int i = 0; i < 6; ++i) {
    text += fmt::format(R"({{"x": [[{0}, {1}], [{2}, 3]], "y": {0}, "z": {3}, "skip": "text"}})", i, i + 1, i + 2,
                        i == 3 ? "1.5" : "2");
    text += i == 2 ? "\n\n  \n" : "\n";  // blank lines are skipped
  }
  write_file(path, text);
  auto loader = open_loader(jsonl_spec(path, {"y", "x", "z"}));
  EXPECT_EQ(loader->fields(),
            (std::vector<FieldInfo>{{"y", DType::i32, {}}, {"x", DType::i32, {2, 2}}, {"z", DType::f32, {}}}));
  EXPECT_EQ(loader->size(), 6);
  Batch batch = loader->batch(0, 0, 6);
  std::vector<int32_t> ys(batch.find("y")->data<int32_t>(), batch.find("y")->data<int32_t>() + 6);
  std::vector<int32_t> sorted = ys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));  // one epoch: every line once
  for (int64_t i = 0; i < 6; ++i) {
    int32_t y = ys[i];
    const int32_t* x = batch.find("x")->data<int32_t>() + 4 * i;
    EXPECT_EQ(std::vector<int32_t>(x, x + 4), (std::vector<int32_t>{y, y + 1, y + 2, 3}));
    EXPECT_EQ(batch.find("z")->data<float>()[i], y == 3 ? 1.5f : 2.0f);
  }
}

TEST(Jsonl, BadLinesAreRefusedNamingTheFileLineAndField) {
  TempDir dir;
  std::string path = dir.file("d.jsonl");
  auto error = [&](const std::string& text, std::vector<std::string> fields = {"x"}) {
    write_file(path, text);
    return error_of(jsonl_spec(path, std::move(fields)));
  };
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"{\"x\": 1}\n{\"x\": 2}\n{\"x\": 3\n", path + ":3: not JSON: "},
      {"{\"x\": 1}\n[1, 2]\n", path + ":2: an array is not a JSON object"},
      {"{\"x\": 1}\n{\"y\": 2, \"z\": 3}\n", path + ":2: the object has no field `x`; it has `y`, `z`"},
      {"{\"x\": [[1, 2], [3]]}\n", path + ":1: field `x` is a ragged array"},
      {"{\"x\": [1, [2]]}\n", path + ":1: field `x` is a ragged array"},
      {"{\"x\": [[1], 2]}\n", path + ":1: field `x` is a ragged array"},
      {"{\"x\": [1, 2]}\n{\"x\": [1, 2, 3]}\n",
       path + ":2: field `x` has the shape [3] here but [2] at line 1; a field has one shape in every line"},
      {"{\"x\": \"seven\"}\n", path + ":1: field `x` holds a string; a field is a number or an array of numbers"},
      {"{\"x\": [1, null]}\n", path + ":1: field `x` holds null"},
      {"{\"x\": true}\n", path + ":1: field `x` holds a boolean"},
      {"{\"x\": 1}\n{\"x\": 3000000000}\n", path + ":2: field `x` holds an integer outside i32"},
      {"\n  \n", path + ": the file holds no lines, so no records"},
      {"", path + ": the file holds no lines, so no records"},
      {std::string(40, '[') + std::string(40, ']'), "nests arrays deeper than 32"},
  };
  for (const auto& c : cases) {
    std::string text = c.text.starts_with("[[[") ? "{\"x\": " + c.text + "}\n" : c.text;
    auto d = error(text);
    EXPECT_EQ(d.code, "E-RUN-024") << text;
    EXPECT_NE(d.message.find(c.expected), std::string::npos) << text << "\n" << d.message;
  }
  // Integers past i32 are fine in a field that is f32 anyway.
  write_file(path, "{\"x\": 3000000000}\n{\"x\": 0.5}\n");
  EXPECT_EQ(open_loader(jsonl_spec(path, {"x"}))->fields()[0].dtype, DType::f32);
}

}  // namespace
}  // namespace sx::train
