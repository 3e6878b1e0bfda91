// The decoders of tokenizer.json, each as the `tokenizers` package defines it: a chain
// from tokens to strings, which decode joins.
#include <fmt/format.h>

#include "text/components.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace sx::text {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// BERT's cleanup of the spaces before punctuation and contractions.
std::string cleaned_up(std::string s) {
  for (auto [from, to] : {std::pair{" .", "."},
                          {" ?", "?"},
                          {" !", "!"},
                          {" ,", ","},
                          {" ' ", "'"},
                          {" n't", "n't"},
                          {" 'm", "'m"},
                          {" do not", " don't"},
                          {" 's", "'s"},
                          {" 've", "'ve"},
                          {" 're", "'re"}}) {
    replace_all(s, from, to);
  }
  return s;
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(const Json& o, const Where& w)
      : prefix_(o.contains("prefix") ? string_at(o, "prefix", w) : "##"), cleanup_(bool_at(o, "cleanup", w, true)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) t.erase(0, prefix_.size());
        else t.insert(0, " ");
      }
      if (cleanup_) t = cleaned_up(t);
    }
    return tokens;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class ByteLevelDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mapped;
      bool all = true;
      for (char32_t c : code_points(t)) {
        auto b = byte_of_level_char(c);
        if (!b) {
          all = false;
          break;
        }
        mapped += static_cast<char>(*b);
      }
      bytes += all ? mapped : t;
    }
    return {utf8_lossy(bytes)};
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(const Json& o, const Where& w) : add_prefix_space_(bool_at(o, "add_prefix_space", w, true)) {
    std::u32string r = code_points(string_at(o, "replacement", w));
    if (r.size() != 1) malformed(w.at("replacement"), "is not one character");
    replacement_ = r[0];
    if (!o.contains("add_prefix_space") && o.contains("prepend_scheme") && o["prepend_scheme"] == "never") {
      add_prefix_space_ = false;
    }
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::u32string out;
      for (char32_t c : code_points(tokens[i])) {
        if (c != replacement_) out += c;
        else if (i != 0 || !add_prefix_space_) out += U' ';
      }
      tokens[i] = utf8_of(out);
    }
    return tokens;
  }

 private:
  char32_t replacement_;
  bool add_prefix_space_;
};

class ByteFallbackDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) return;
      if (first_invalid_utf8(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
    };
    for (std::string& t : tokens) {
      if (auto b = byte_token(t)) {
        bytes += static_cast<char>(*b);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    return out;
  }

 private:
  static std::optional<uint8_t> byte_token(std::string_view t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = hex(t[3]), lo = hex(t[4]);
    if (hi < 0 || lo < 0) return std::nullopt;
    return static_cast<uint8_t>(hi * 16 + lo);
  }
};

class FuseDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const auto& t : tokens) joined += t;
    return {joined};
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(const Json& o, const Where& w)
      : start_(integer_at(o, "start", w, 0)), stop_(integer_at(o, "stop", w, 0)) {
    std::u32string c = code_points(string_at(o, "content", w));
    if (c.size() != 1) malformed(w.at("content"), "is not one character");
    content_ = c[0];
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      std::u32string cps = code_points(t);
      size_t begin = 0, end = cps.size();
      while (static_cast<int64_t>(begin) < start_ && begin < cps.size() && cps[begin] == content_) ++begin;
      size_t cut = 0;
      while (static_cast<int64_t>(cut) < stop_ && end > begin && cps[end - 1] == content_) --end, ++cut;
      t = utf8_of(cps.substr(begin, end - begin));
    }
    return tokens;
  }

 private:
  int64_t start_, stop_;
  char32_t content_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(const Json& o, const Where& w) : regex_(pattern_of(o, w)), content_(string_at(o, "content", w)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) t = regex_->replace_all(t, content_);
    return tokens;
  }

 private:
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

// The end-of-word suffix becomes a space (a space after every word but the last).
class BpeDecoder final : public Decoder {
 public:
  BpeDecoder(const Json& o, const Where& w) : suffix_(o.contains("suffix") ? string_at(o, "suffix", w) : "</w>") {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }

 private:
  std::string suffix_;
};

class SequenceDecoder final : public SequenceOf<Decoder, std::vector<std::string>, &Decoder::decode_chain> {
 public:
  SequenceDecoder(const Json& o, const Where& w) : SequenceOf(o, "decoders", w, make_decoder) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    return run(std::move(tokens));
  }
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& o, const Where& w) {
  if (o.is_null()) return nullptr;
  std::string type = string_at(o, "type", w);
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(o, w);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(o, w);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(o, w);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(o, w);
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(o, w);
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(o, w);
  unsupported(w.at("type"), fmt::format("is the decoder `{}`, which this reader does not run (it runs WordPiece, "
                                        "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, BPEDecoder and "
                                        "Sequence)",
                                        type));
}

}  // namespace sx::text
