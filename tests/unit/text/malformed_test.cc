// tokenizer.json files the reader refuses: each with its code and a message naming the
// field; every truncation of a valid file is refused, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "text/tokenizer.h"

namespace sx::text {
namespace {

// A small valid WordPiece tokenizer, edited by the cases.
const std::string kValid = R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 0, "content": "[UNK]", "special": true, "normalized": false,
                    "lstrip": false, "rstrip": false, "single_word": false},
                   {"id": 1, "content": "[CLS]", "special": true, "normalized": false,
                    "lstrip": false, "rstrip": false, "single_word": false},
                   {"id": 2, "content": "[SEP]", "special": true, "normalized": false,
                    "lstrip": false, "rstrip": false, "single_word": false}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, "world": 4, "##s": 5, "!": 6}}
})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The code `run` throws, or "" when it throws none.
template <class F>
std::string code_thrown(F run) {
  try {
    run();
  } catch (const TokenizerError& e) {
    return e.code();
  }
  return "";
}

// The code and message parsing `text` throws.
std::pair<std::string, std::string> refusal(const std::string& text) {
  try {
    Tokenizer::parse(text, "tk.json");
  } catch (const TokenizerError& e) {
    return {e.code(), e.what()};
  }
  return {"", "accepted"};
}

TEST(TokenizerFile, TheValidFileEncodesAndDecodes) {
  auto tk = Tokenizer::parse(kValid, "tk.json");
  Encoding e = tk->encode("Hello worlds!");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 3, 4, 5, 6, 2}));
  EXPECT_EQ(e.mask, (std::vector<int32_t>(6, 1)));
  EXPECT_EQ(tk->decode(e.ids), "hello worlds!");
  EXPECT_EQ(tk->decode(e.ids, false), "[CLS] hello worlds! [SEP]");
  EXPECT_EQ(tk->model_kind(), "WordPiece");
  EXPECT_EQ(tk->vocab_size(), 7);
}

TEST(TokenizerFile, ALengthCutsBeforeTheSpecialTokensAndPads) {
  auto tk = Tokenizer::parse(kValid, "tk.json");
  EXPECT_EQ(tk->encode("hello world hello", {.length = 4}).ids, (std::vector<int32_t>{1, 3, 4, 2}));
  Encoding padded = tk->encode("hello", {.length = 5});
  EXPECT_EQ(padded.ids, (std::vector<int32_t>{1, 3, 2, 0, 0}));
  EXPECT_EQ(padded.mask, (std::vector<int32_t>{1, 1, 1, 0, 0}));
  EXPECT_EQ(code_thrown([&] { tk->encode("hello", {.length = 1}); }), "E-TOKEN-006");
}

TEST(TokenizerFile, TextThatIsNotUtf8AndIdsThatAreNoTokensAreRefused) {
  auto tk = Tokenizer::parse(kValid, "tk.json");
  EXPECT_EQ(code_thrown([&] { tk->encode("ok \xff"); }), "E-TOKEN-004");
  for (int32_t id : {-1, 7, 1 << 30}) {
    std::vector<int32_t> ids{3, id};
    EXPECT_EQ(code_thrown([&] { tk->decode(ids); }), "E-TOKEN-005") << id;
  }
}

struct Case {
  const char* name;
  std::string text;
  const char* code;
  const char* in_message;
};

TEST(TokenizerFile, EachFaultHasItsCodeAndNamesTheField) {
  const Case cases[] = {
      {"empty", "", "E-TOKEN-001", "not JSON"},
      {"not an object", "[1, 2]", "E-TOKEN-001", "top level is not a JSON object"},
      {"no model", replaced(kValid, "\"model\"", "\"modal\""), "E-TOKEN-001", "`model` is missing"},
      {"vocab not an object", replaced(kValid, "\"vocab\": {", "\"vocab\": [{\"a\": 1}], \"x\": {"), "E-TOKEN-001",
       "`model.vocab`"},
      {"negative id", replaced(kValid, "\"!\": 6", "\"!\": -6"), "E-TOKEN-001", "`model.vocab.!`"},
      {"unk missing", replaced(kValid, "\"unk_token\": \"[UNK]\"", "\"unk_token\": \"<unk>\""), "E-TOKEN-003",
       "`<unk>`"},
      {"unigram", replaced(kValid, "\"type\": \"WordPiece\", \"unk", "\"type\": \"Unigram\", \"unk"), "E-TOKEN-002",
       "`model.type` is the model `Unigram`"},
      {"precompiled", replaced(kValid, "\"type\": \"BertNormalizer\"", "\"type\": \"Precompiled\""), "E-TOKEN-002",
       "`normalizer.type` is the normalizer `Precompiled`"},
      {"unknown pre-tokenizer", replaced(kValid, "BertPreTokenizer", "UnicodeScripts"), "E-TOKEN-002",
       "`pre_tokenizer.type`"},
      {"unknown decoder", replaced(kValid, "\"type\": \"WordPiece\", \"prefix\"", "\"type\": \"CTC\", \"prefix\""),
       "E-TOKEN-002", "`decoder.type` is the decoder `CTC`"},
      {"unknown post-processor", replaced(kValid, "BertProcessing", "Custom"), "E-TOKEN-002", "`post_processor.type`"},
      {"cls not a pair", replaced(kValid, "\"cls\": [\"[CLS]\", 1]", "\"cls\": \"[CLS]\""), "E-TOKEN-001",
       "`post_processor.cls`"},
      {"added token without id", replaced(kValid, "{\"id\": 0, ", "{"), "E-TOKEN-001", "`added_tokens[0].id`"},
      {"lowercase not a bool", replaced(kValid, "\"lowercase\": true", "\"lowercase\": 1"), "E-TOKEN-001",
       "`normalizer.lowercase`"},
      {"truncation from both sides",
       replaced(kValid, "\"truncation\": null", R"("truncation": {"max_length": 8, "strategy": "OnlySecond"})"),
       "E-TOKEN-002", "`truncation.strategy`"},
      {"bpe dropout", R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []}})", "E-TOKEN-002",
       "`model.dropout`"},
      {"merge of unknown tokens", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})",
       "E-TOKEN-003", "`ab`"},
      {"merge not a pair", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})", "E-TOKEN-001",
       "`model.merges[0]`"},
      {"bad regex",
       R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
           "invert": false}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})",
       "E-TOKEN-002", "regex"},
      {"deep nesting", "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "E-TOKEN-001",
       "nests more than 64 levels"},
      {"deep sequences",
       "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"normalizer\": " +
           [] {
             std::string nested = "null";
             for (int i = 0; i < 40; ++i) nested = R"({"type": "Sequence", "normalizers": [)" + nested + "]}";
             return nested;
           }() +
           "}",
       "E-TOKEN-001", "nests more than 64 levels"},
  };
  for (const Case& c : cases) {
    auto [code, message] = refusal(c.text);
    EXPECT_EQ(code, c.code) << c.name << ": " << message;
    EXPECT_NE(message.find(c.in_message), std::string::npos) << c.name << ": " << message;
    EXPECT_TRUE(message.starts_with("tk.json")) << c.name << ": " << message;
  }
}

TEST(TokenizerFile, SparseIdsNeedNoTableOfEveryId) {
  auto tk = Tokenizer::parse(R"({"model": {"type": "BPE", "vocab": {"a": 2147483646, "b": 0}, "merges": []}})", "tk");
  EXPECT_EQ(tk->vocab_size(), 2147483647);
  EXPECT_EQ(tk->encode("ab").ids, (std::vector<int32_t>{2147483646, 0}));
  EXPECT_EQ(tk->decode(std::vector<int32_t>{0, 2147483646}), "b a");
}

// ignore_merges (Llama 3's files): a word the vocabulary holds whole is that token, though
// the merges would spell it otherwise.
TEST(TokenizerFile, IgnoreMergesTakesAWholeWordFirst) {
  std::string bpe = R"({"model": {"type": "BPE", "ignore_merges": IGNORE,
      "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "bc": 5}, "merges": ["a b", "b c"]}})";
  EXPECT_EQ(Tokenizer::parse(replaced(bpe, "IGNORE", "false"), "tk")->encode("abc").ids, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(Tokenizer::parse(replaced(bpe, "IGNORE", "true"), "tk")->encode("abc").ids, (std::vector<int32_t>{4}));
  EXPECT_EQ(Tokenizer::parse(replaced(bpe, "IGNORE", "true"), "tk")->encode("bca").ids, (std::vector<int32_t>{5, 0}));
}

TEST(TokenizerFile, CorruptedBytesGiveACodeOrATokenizerNeverACrash) {
  for (size_t at = 0; at < kValid.size(); at += 3) {
    for (char c : {'\0', '"', '{', ']', '9', '\xff'}) {
      std::string corrupted = kValid;
      corrupted[at] = c;
      std::string code = code_thrown([&] {
        auto tk = Tokenizer::parse(corrupted, "tk.json");
        tk->decode(tk->encode("Hello [CLS] worlds!").ids);
      });
      EXPECT_TRUE(code.empty() || code.starts_with("E-TOKEN-")) << at << ": " << code;
    }
  }
}

TEST(TokenizerFile, EveryTruncationIsRefusedWithACode) {
  for (size_t n = 0; n + 1 < kValid.size(); ++n) {
    auto [code, message] = refusal(kValid.substr(0, n));
    EXPECT_EQ(code, "E-TOKEN-001") << n << ": " << message;
  }
}

}  // namespace
}  // namespace sx::text
