// The malformed corpus: files that break each rule of the format, made here, each refused
// with its code and a message naming the file and what is wrong; and every truncation and
// many single-byte corruptions of a valid file, none of which may crash.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "io/safetensors.h"
#include "io/tensor_source.h"
#include "test_util.h"

namespace sx::io {
namespace {

using testing::safetensors_bytes;
using testing::TempDir;

struct Case {
  const char* name;
  std::string bytes;
  const char* code;
  std::string message;  // the whole message after "PATH: "
};

const std::string kW = R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";

std::vector<Case> corpus() {
  std::string lfs =
      "version https://git-lfs.github.com/spec/v1\n"
      "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
      "size 4976698672\n";
  std::string non_utf8_name = "{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  return {
      {"empty file", "", "E-LOAD-004",
       "the file is 0 bytes, too short for the 8-byte header length a safetensors file starts with"},
      {"shorter than 8 bytes", std::string("\x05\0\0", 3), "E-LOAD-004",
       "the file is 3 bytes, too short for the 8-byte header length a safetensors file starts with"},
      {"header length past the end", testing::le64(100) + "{}", "E-LOAD-004",
       "the header length is 100 bytes but only 2 bytes follow it; the file is truncated or not a safetensors file"},
      {"enormous header length", testing::le64(0xffffffffffffffffull) + "{}", "E-LOAD-004",
       "the first 8 bytes give a header length of 18446744073709551615 bytes, more than the limit of 100000000; "
       "this is not a safetensors file, or its start is damaged"},
      {"data shorter than the offsets say", safetensors_bytes("{" + kW + "}", 20), "E-LOAD-004",
       "tensor `w` says its data ends at byte 24 but the data section is 20 bytes; the file is truncated, or its "
       "header is wrong"},
      {"a header that lies about offsets",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20), "E-LOAD-007",
       "tensor `w` is F32 [2, 3], which is 24 bytes, but its data_offsets [0, 20] span 20 bytes"},
      {"offsets that end before they begin",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8), "E-LOAD-007",
       "the data_offsets of tensor `w` are [8, 4]: it ends before it begins"},
      {"overlapping offsets",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         12),
       "E-LOAD-007", "tensor `b` (data_offsets [4, 12]) overlaps tensor `a` (data_offsets [0, 8])"},
      {"gapped offsets",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                         12),
       "E-LOAD-007",
       "bytes 4 to 8 of the data section belong to no tensor (a gap before tensor `b`, data_offsets [8, 12])"},
      {"offsets that do not start at 0",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "E-LOAD-007",
       "bytes 0 to 4 of the data section belong to no tensor (a gap before tensor `a`, data_offsets [4, 8])"},
      {"bytes after the last tensor", safetensors_bytes("{" + kW + "}", 30), "E-LOAD-007",
       "the data section is 30 bytes but the tensors end at byte 24; bytes 24 to 30 belong to no tensor"},
      {"data but no tensors", safetensors_bytes("{}", 4), "E-LOAD-007",
       "the data section is 4 bytes but the tensors end at byte 0; bytes 0 to 4 belong to no tensor"},
      {"an unknown dtype", safetensors_bytes(R"({"w":{"dtype":"float32","shape":[1],"data_offsets":[0,4]}})", 4),
       "E-LOAD-006",
       "tensor `w` has the dtype `float32`, which safetensors does not define; the dtypes are BOOL U8 I8 U16 I16 F16 "
       "BF16 U32 I32 F32 U64 I64 F64 F8_E4M3 F8_E5M2"},
      {"a dtype that is not a string", safetensors_bytes(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4),
       "E-LOAD-005", "the dtype of tensor `w` is an integer (4), not a string such as \"F32\""},
      {"a non-UTF-8 name", safetensors_bytes(non_utf8_name, 4), "E-LOAD-005",
       "the header is not valid UTF-8: byte 3 of the header (0xff) after `{\"w`"},
      {"invalid JSON", safetensors_bytes(R"({"w": {"dtype": "F32",)", 0), "E-LOAD-005",
       "the header is not valid JSON: parse error at line 1, column 23: syntax error while parsing object key - "
       "unexpected end of input; expected string literal"},
      {"a number too large for a double (found by fuzzing)",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1E400],"data_offsets":[0,4]}})", 4), "E-LOAD-005",
       "the header is not valid JSON: number overflow parsing '1E400'"},
      {"an empty header", safetensors_bytes("", 0), "E-LOAD-005", ""},
      {"a header that is an array", safetensors_bytes("[1, 2]", 0), "E-LOAD-005",
       "the header is an array, not an object of tensors"},
      {"a header that is a string", safetensors_bytes(R"("w")", 0), "E-LOAD-005",
       "the header is a string, not an object of tensors"},
      {"a duplicate name",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         8),
       "E-LOAD-005", "the header has the key `w` twice"},
      {"a duplicate field",
       safetensors_bytes(R"({"w":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})", 4), "E-LOAD-005",
       "the header has the key `dtype` twice in the entry of `w`"},
      {"a shape/offset mismatch",
       safetensors_bytes(R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,24]}})", 24), "E-LOAD-007",
       "tensor `w` is BF16 [2, 3], which is 12 bytes, but its data_offsets [0, 24] span 24 bytes"},
      {"a negative shape entry", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", 24),
       "E-LOAD-005", "the shape of tensor `w` is [2,-3], and -3 is not a size (a non-negative integer)"},
      {"a non-integer shape entry", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8),
       "E-LOAD-005", "the shape of tensor `w` is [2.5], and 2.5 is not a size (a non-negative integer)"},
      {"a shape entry past int64",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]}})", 8),
       "E-LOAD-005",
       "the shape of tensor `w` is [18446744073709551615], and 18446744073709551615 is not a size (a non-negative "
       "integer)"},
      {"a shape whose byte count overflows",
       safetensors_bytes(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296,2],"data_offsets":[0,0]}})", 0),
       "E-LOAD-007", "tensor `w` is F64 [4294967296, 4294967296, 2], more bytes than a tensor can hold (2^63)"},
      {"a shape past 2^63 bytes",
       safetensors_bytes(R"({"w":{"dtype":"U8","shape":[4294967296,2147483648],"data_offsets":[0,0]}})", 0),
       "E-LOAD-007", "tensor `w` is U8 [4294967296, 2147483648], more bytes than a tensor can hold (2^63)"},
      {"an empty shape whose other sizes overflow",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", 0),
       "E-LOAD-007", "tensor `w` is F32 [0, 4294967296, 4294967296], more bytes than a tensor can hold (2^63)"},
      {"a shape that is not a list", safetensors_bytes(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})", 16),
       "E-LOAD-005", "the shape of tensor `w` is an integer (4), not a list of sizes"},
      {"offsets that are not two integers",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4), "E-LOAD-005",
       "the data_offsets of tensor `w` are [0], not two non-negative integers [begin, end]"},
      {"a negative offset", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
       "E-LOAD-005", "the data_offsets of tensor `w` are [-4,0], not two non-negative integers [begin, end]"},
      {"a missing field", safetensors_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4), "E-LOAD-005",
       "tensor `w` has no `shape`"},
      {"an unknown field",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"stride":[1]}})", 4), "E-LOAD-005",
       "tensor `w` has the key `stride`; a tensor has only dtype, shape and data_offsets"},
      {"an entry that is not an object", safetensors_bytes(R"({"w":[1,2]})", 0), "E-LOAD-005",
       "the entry of tensor `w` is an array, not an object with dtype, shape and data_offsets"},
      {"metadata that is not an object", safetensors_bytes(R"({"__metadata__":"x"})", 0), "E-LOAD-005",
       "`__metadata__` is a string, not an object of strings"},
      {"a metadata value that is not a string", safetensors_bytes(R"({"__metadata__":{"step":20}})", 0), "E-LOAD-005",
       "`__metadata__` entry `step` is an integer (20), not a string"},
      {"nesting deeper than the format",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4), "E-LOAD-005",
       "the header nests JSON objects and arrays more than 3 deep, which the format never does"},
      {"a git-lfs pointer", lfs, "E-LOAD-003",
       "this is a git-lfs pointer (135 bytes), not the file of 4976698672 bytes it stands for; fetch the file with "
       "`git lfs pull --include=\"FILE\"` (or `git lfs pull`) in its repository"},
  };
}

TEST(Malformed, EachRefusedWithItsCodeAndMessage) {
  TempDir dir;
  for (const Case& c : corpus()) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file("bad.safetensors");
    testing::write_file(path, c.bytes);
    std::string message = c.message;
    if (auto pos = message.find("FILE"); pos != std::string::npos) message.replace(pos, 4, "bad.safetensors");
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << "opened";
    } catch (const LoadError& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      if (!message.empty()) {
        EXPECT_EQ(std::string(e.what()), path + ": " + message);
      }
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
    // From memory: the same answer, naming the given name.
    try {
      SafetensorsFile::from_bytes("mem", testing::as_vector(c.bytes));
      ADD_FAILURE() << "opened from memory";
    } catch (const LoadError& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("mem: ", 0), 0u) << e.what();
    }
  }
}

TEST(Malformed, ValidEdgeCasesOpen) {
  // Trailing spaces after the JSON, zero-size tensors at the same offset, an empty name,
  // names with escapes, and metadata alone.
  auto file = SafetensorsFile::from_bytes(
      "ok",
      testing::as_vector(safetensors_bytes(R"({"e1":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                           R"("":{"dtype":"U8","shape":[],"data_offsets":[0,1]},)"
                                           R"("e2":{"dtype":"F64","shape":[3,0],"data_offsets":[1,1]},)"
                                           R"("a\"b\u00e9":{"dtype":"I16","shape":[1],"data_offsets":[1,3]}}     )",
                                           3)));
  ASSERT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->tensors()[3].name, "a\"b\u00e9");
  EXPECT_NE(file->find(""), nullptr);
  auto meta = SafetensorsFile::from_bytes("m", testing::as_vector(safetensors_bytes(R"({"__metadata__":{}})", 0)));
  EXPECT_TRUE(meta->tensors().empty());
}

// The header is read in time linear in its entries (issue 12 item 12: 40,000 took over a
// minute). The bound is loose, for sanitizer builds and busy machines: a quadratic reader
// takes tens of minutes here.
TEST(Malformed, AHundredThousandTensorsOpenQuickly) {
  constexpr int kTensors = 100'000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i) {
    header += fmt::format(R"({}"t{}":{{"dtype":"U8","shape":[1],"data_offsets":[{},{}]}})", i ? "," : "", i, i, i + 1);
  }
  header += "}";
  auto began = std::chrono::steady_clock::now();
  auto file = SafetensorsFile::from_bytes("many", testing::as_vector(safetensors_bytes(header, kTensors)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_EQ(file->tensors().size(), static_cast<size_t>(kTensors));
  EXPECT_NE(file->find("t99999"), nullptr);
  EXPECT_LT(seconds, 20.0);
}

TEST(Malformed, NotAFile) {
  TempDir dir;
  for (const auto& [path, message] :
       std::vector<std::pair<std::string, std::string>>{{dir.file("missing.safetensors"), "the file does not exist"},
                                                        {dir.path().string(), "a directory, not a file"}}) {
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << path;
    } catch (const LoadError& e) {
      EXPECT_EQ(e.code(), "E-LOAD-002");
      EXPECT_EQ(std::string(e.what()), path + ": " + message);
    }
  }
}

// Every prefix of a valid file, and every byte of it set to a few values: each either
// opens (and every tensor reads) or is refused with a LoadError.
TEST(Malformed, TruncationsAndCorruptionsNeverCrash) {
  TempDir dir;
  const std::string path = dir.file("v.safetensors");
  write_safetensors(path,
                    {{"a", graph::Tensor::from_doubles(graph::DType::f32, {2, 2}, std::vector<double>{1, 2, 3, 4})},
                     {"b", graph::Tensor(graph::DType::bf16, {3})},
                     {"c", graph::Tensor(graph::DType::i64, {1})}},
                    {{"k", "v"}});
  const std::string valid = testing::read_file(path);
  auto attempt = [](const std::string& bytes) {
    try {
      auto file = SafetensorsFile::from_bytes("x", testing::as_vector(bytes));
      for (const auto& t : file->tensors()) {
        try {
          read_tensor(*file, t, graph::DType::bf16);
        } catch (const LoadError& e) {
          EXPECT_EQ(e.code(), "E-LOAD-008");
        }
      }
      return true;
    } catch (const LoadError&) {
      return false;
    }
  };
  EXPECT_TRUE(attempt(valid));
  for (size_t n = 0; n < valid.size(); ++n) EXPECT_FALSE(attempt(valid.substr(0, n))) << n;
  for (size_t i = 0; i < valid.size(); ++i) {
    for (char value : {'\0', '\xff', '"', '9', ' ', '-', '{'}) {
      std::string bytes = valid;
      bytes[i] = value;
      attempt(bytes);
    }
  }
}

}  // namespace
}  // namespace sx::io
