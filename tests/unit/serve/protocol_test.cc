// The protocol byte for byte (docs/serving.md, "The protocol"): frames, the handshake,
// each dtype's encoding, calls of the wrong length and values serve refuses.
#include "serve/protocol.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace sx::serve {
namespace {

using graph::DType;
using graph::Tensor;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// "its length in bytes as a little-endian u64, then the bytes"
TEST(ServeProtocol, FrameIsLittleEndianLengthThenBytes) {
  auto header = frame_header(0x0102030405060708ull);
  EXPECT_EQ(std::string(header.begin(), header.end()), bytes({8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(frame_length(header), 0x0102030405060708ull);
  EXPECT_EQ(frame("abc"), bytes({3, 0, 0, 0, 0, 0, 0, 0}) + "abc");
  EXPECT_EQ(frame(""), std::string(8, '\0'));
}

// "the checkpoint, its step and slug, the precision, and the model's inputs and outputs"
TEST(ServeProtocol, HandshakeNamesCheckpointStepSlugPrecisionInputsOutputs) {
  Handshake about{"/tmp/tiny-run/step-00000020",
                  20,
                  "tiny",
                  "f32",
                  {{"inputs", {1, 16}, DType::i32}, {"at", {1}, DType::i32}},
                  {{"output", {1, 1, 32}, DType::f32}}};
  auto doc = nlohmann::json::parse(handshake_json(about));
  EXPECT_EQ(doc["checkpoint"], "/tmp/tiny-run/step-00000020");
  EXPECT_EQ(doc["step"], 20);
  EXPECT_EQ(doc["slug"], "tiny");
  EXPECT_EQ(doc["precision"], "f32");
  EXPECT_EQ(doc["protocol"], kProtocolVersion);
  EXPECT_EQ(doc["inputs"].dump(),
            R"([{"dtype":"i32","name":"inputs","shape":[1,16]},{"dtype":"i32","name":"at","shape":[1]}])");
  EXPECT_EQ(doc["outputs"].dump(), R"([{"dtype":"f32","name":"output","shape":[1,1,32]}])");
}

// "f32 and i32 4 bytes, f64 and i64 8", row-major, little-endian
TEST(ServeProtocol, NumbersAreRowMajorLittleEndianAtTheirWidth) {
  Tensor i32(DType::i32, {2, 2});
  for (int i = 0; i < 4; ++i) i32.data<int32_t>()[i] = i + 1;
  EXPECT_EQ(encode_tensor(i32), bytes({1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}));
  Tensor f32 = Tensor::scalar(DType::f32, 1.0);
  EXPECT_EQ(encode_tensor(f32), bytes({0, 0, 0x80, 0x3f}));
  Tensor i64 = Tensor::scalar(DType::i64, -2);
  EXPECT_EQ(encode_tensor(i64), bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  Tensor f64 = Tensor::scalar(DType::f64, 2.0);
  EXPECT_EQ(encode_tensor(f64), bytes({0, 0, 0, 0, 0, 0, 0, 0x40}));
  for (const Tensor* t : {&i32, &f32, &i64, &f64}) {
    TensorSpec spec{"x", t->shape(), t->dtype()};
    EXPECT_EQ(decode_tensor(spec, encode_tensor(*t)), *t);
  }
}

// "bf16 2 (the high half of the f32, rounded to nearest even)"
TEST(ServeProtocol, Bf16IsTheHighHalfRoundedToNearestEven) {
  auto encoded = [](float value) {
    return encode_tensor(Tensor::from_doubles(DType::bf16, {1}, std::vector<double>{value}));
  };
  EXPECT_EQ(encoded(1.0f), bytes({0x80, 0x3f}));                               // 0x3f800000: exact
  EXPECT_EQ(encoded(std::bit_cast<float>(0x3f808000u)), bytes({0x80, 0x3f}));  // a tie: to the even 0x3f80
  EXPECT_EQ(encoded(std::bit_cast<float>(0x3f818000u)), bytes({0x82, 0x3f}));  // a tie: to the even 0x3f82
  EXPECT_EQ(encoded(std::bit_cast<float>(0x3f808001u)), bytes({0x81, 0x3f}));  // above the tie: up
  EXPECT_EQ(encoded(std::bit_cast<float>(0x3f807fffu)), bytes({0x80, 0x3f}));  // below it: down
  EXPECT_EQ(encoded(-2.0f), bytes({0x00, 0xc0}));
}

// "bool 1, 0 or 1"
TEST(ServeProtocol, BoolIsOneByteZeroOrOne) {
  Tensor t = Tensor::from_doubles(DType::boolean, {3}, std::vector<double>{1, 0, 1});
  EXPECT_EQ(encode_tensor(t), bytes({1, 0, 1}));
  TensorSpec spec{"mask", {3}, DType::boolean};
  EXPECT_EQ(decode_tensor(spec, bytes({1, 0, 1})), t);
  EXPECT_FALSE(decode_tensor(spec, bytes({1, 2, 1})));
  EXPECT_FALSE(decode_tensor(spec, bytes({1, 0})));
}

// "A call frame of another length than the inputs take is answered with an error"
TEST(ServeProtocol, CallOfAnotherLengthIsRefused) {
  CallLayout layout({{"inputs", {1, 16}, DType::i32}, {"at", {1}, DType::i32}});
  EXPECT_EQ(layout.call_bytes(), 68u);
  EXPECT_EQ(layout.offset(1), 64u);
  EXPECT_FALSE(check_call_length(layout, 68));
  for (uint64_t length : {0ull, 67ull, 69ull, ~0ull}) {
    auto why = check_call_length(layout, length);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("E-SERVE-007"), std::string::npos) << *why;
    EXPECT_NE(why->find("68 bytes"), std::string::npos) << *why;
  }
}

// "an `at` outside it is an error"; a bool byte other than 0 or 1 too
TEST(ServeProtocol, AtOutsideTheAxisAndBadBoolsAreRefused) {
  CallLayout layout({{"mask", {2}, DType::boolean}, {"at", {1}, DType::i32}});
  auto call = [](int mask, int32_t at) {
    std::string body = bytes({1, mask});
    body.append(reinterpret_cast<const char*>(&at), sizeof at);
    return body;
  };
  EXPECT_FALSE(check_call_values(layout, call(0, 0), 16));
  EXPECT_FALSE(check_call_values(layout, call(1, 15), 16));
  for (int32_t at : {16, -1, 1 << 30}) {
    auto why = check_call_values(layout, call(0, at), 16);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("E-SERVE-008"), std::string::npos) << *why;
    EXPECT_NE(why->find("0 to 15"), std::string::npos) << *why;
  }
  auto why = check_call_values(layout, call(2, 0), 16);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("`mask` is bool"), std::string::npos) << *why;
  // Without --at an input named `at` is the model's own, any value.
  EXPECT_FALSE(check_call_values(layout, call(0, 99), std::nullopt));
}

// "its answer is one frame starting with a status byte: 0 then every output ... or 1 then the error"
TEST(ServeProtocol, AnswersAreStatusThenOutputsOrText) {
  CallLayout layout({{"x", {2}, DType::i32}});
  std::string a = bytes({1, 0, 0, 0, 2, 0, 0, 0}), b = bytes({3, 0, 0, 0, 4, 0, 0, 0});
  std::vector<std::string_view> calls = {a, b};
  Tensor stacked = stack_input(layout, 0, calls);
  EXPECT_EQ(stacked.shape(), (graph::Shape{2, 2}));
  EXPECT_EQ(encode_tensor(stacked), a + b);
  Tensor other = Tensor::from_doubles(DType::f32, {2, 1}, std::vector<double>{0.5, -0.5});
  std::vector<Tensor> outputs = {stacked, other};
  EXPECT_EQ(ok_answer(outputs, 1), bytes({0}) + b + bytes({0, 0, 0, 0xbf}));
  EXPECT_EQ(error_answer("no"), bytes({1}) + "no");
}

}  // namespace
}  // namespace sx::serve
