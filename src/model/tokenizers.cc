// `tokenizer`, `encode` and `decode` (see tokenizer_value.h).
#include <fmt/format.h>

#include "io/location.h"
#include "io/safetensors.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/model.h"
#include "model/tokenizer_value.h"

namespace sx::model {
namespace {

using lang::Args;
using lang::Type;
using lang::Value;

// The largest tokenizer.json read: the largest vocabularies shipped are tens of MB.
constexpr size_t kMaxTokenizerBytes = size_t{1} << 30;

Value tokenizer(Args& a) {
  const std::string& written = a.string(0);
  std::string location = resolve_data_path(written, a.span(0));
  std::string json;
  try {
    json = io::read_small_location(io::resolve_location(location), kMaxTokenizerBytes, text::kTokenizerFile);
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), a.span(0), e.what());
  }
  try {
    return Value(new TokenizerValue(text::Tokenizer::parse(json, location), written, location));
  } catch (const text::TokenizerError& e) {
    fail_tokenizer(e, a.span(0));
  }
}

const TokenizerValue& tokenizer_at(Args& a, size_t i) {
  const TokenizerValue* tk = as_tokenizer(a[i]);
  if (!tk) a.type_error(i, "a tokenizer, such as (tokenizer \"tokenizer.json\")");
  return *tk;
}

// Whether keyword `key` is given and false (nil or false).
bool turned_off(Args& a, std::string_view key) {
  auto it = a.keywords().find(std::string(key));
  if (it == a.keywords().end()) return false;
  const Value& v = a[it->second];
  return v.is(Type::Nil) || (v.is(Type::Bool) && !v.as_bool());
}

Value encode(Args& a) {
  const TokenizerValue& tk = tokenizer_at(a, 0);
  const std::string& text = a.string(1);
  text::EncodeOptions options;
  options.add_special_tokens = !turned_off(a, "special");
  if (auto it = a.keywords().find("length"); it != a.keywords().end()) {
    options.length = a.integer(it->second);
    if (options.length < 1 || options.length > (int64_t{1} << 30)) {
      lang::fail("E-EVAL-004", a.span(it->second),
                 fmt::format("`:length` is a whole number from 1 to {}, not {}", int64_t{1} << 30, options.length));
    }
  }
  text::Encoding encoding;
  try {
    encoding = tk.tokenizer->encode(text, options);
  } catch (const text::TokenizerError& e) {
    fail_tokenizer(e, a.span(1));
  }
  std::vector<double> ids(encoding.ids.begin(), encoding.ids.end());
  graph::Tensor t = graph::Tensor::from_doubles(graph::DType::i32, {static_cast<int64_t>(ids.size())}, ids);
  const auto& tracer = a.interp.tracer();
  return lang::make_tensor(tracer, tracer->builder().constant(std::move(t)));
}

// The ids of a vector or list of integers, or of an integer tensor of one axis.
std::vector<int32_t> ids_of(Args& a, size_t i) {
  const char* expected = "ids: a tensor of integers of one axis, or a vector of integers";
  std::vector<int32_t> ids;
  auto take = [&](double v) {
    if (v < INT32_MIN || v > INT32_MAX) {
      lang::fail(text::kTokenizerIds, a.span(i), fmt::format("{} is no token's id: ids are 32-bit", v));
    }
    ids.push_back(static_cast<int32_t>(v));
  };
  const Value& given = a[i];
  if (given.is(Type::Vector) || given.is_list()) {
    for (const Value& item : given.is(Type::Vector) ? given.as<lang::Vector>()->items : lang::list_items(given)) {
      if (!item.is(Type::Int)) a.type_error(i, expected);
      take(static_cast<double>(item.as_int()));
    }
    return ids;
  }
  Value shown = a.interp.materialized(given);
  const lang::TensorValue* t = lang::as_tensor(shown);
  if (!t) a.type_error(i, expected);
  const graph::Node& node = t->info();
  if (!graph::is_integer(node.dtype) || node.shape.size() > 1) a.type_error(i, expected);
  if (!node.value) {
    lang::fail("E-EVAL-004", a.span(i), "`decode`: the ids are computed, but nothing runs here",
               "decode runs in `sexpgpu eval` and the REPL; `check` runs nothing");
  }
  for (double v : node.value->to_doubles()) take(v);
  return ids;
}

Value decode(Args& a) {
  const TokenizerValue& tk = tokenizer_at(a, 0);
  std::vector<int32_t> ids = ids_of(a, 1);
  try {
    return lang::make_string(tk.tokenizer->decode(ids, !turned_off(a, "skip-special")));
  } catch (const text::TokenizerError& e) {
    fail_tokenizer(e, a.span(1));
  }
}

}  // namespace

std::string TokenizerValue::print() const {
  return fmt::format("(tokenizer {})", lang::print(lang::make_string(written)));
}

void fail_tokenizer(const text::TokenizerError& e, lang::Span span) { lang::fail(e.code(), span, e.what()); }

void install_tokenizers(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Tokenizers",
      {
          {"tokenizer", tokenizer, "(path)",
           "Reads a Hugging Face tokenizer.json (WordPiece, byte-level BPE, byte-fallback BPE) from any location.",
           "(tokenizer \"tokenizer.json\")  ; here tokenizer.json does not exist\n;; error[E-LOAD-002]"},
          {"encode", encode, "(tokenizer text &key length (special true))",
           "The ids of a text, i32 [n], with the special tokens the post-processor adds; :length N cuts or pads "
           "to N.",
           "(encode (tokenizer \"tokenizer.json\") \"Hello!\")  ; here tokenizer.json does not exist\n"
           ";; error[E-LOAD-002]"},
          {"decode", decode, "(tokenizer ids &key (skip-special true))",
           "The text of ids (a tensor or a vector of integers), special tokens left out unless :skip-special is "
           "false.",
           "(decode (tokenizer \"tokenizer.json\") [101 7592 102])  ; here tokenizer.json does not exist\n"
           ";; error[E-LOAD-002]"},
      });
}

}  // namespace sx::model
