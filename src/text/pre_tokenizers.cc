// The pre-tokenizers of tokenizer.json, each as the `tokenizers` package defines it: a
// piece is split by the matches of a pattern, which a behavior keeps, removes or joins
// to a neighbour.
#include <fmt/format.h>

#include <functional>

#include "text/components.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace sx::text {
namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

using Ranges = std::vector<std::pair<size_t, size_t>>;

Behavior behavior_of(const Json& o, const Where& w) {
  std::string name = string_at(o, "behavior", w);
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  if (name == "Contiguous") return Behavior::Contiguous;
  unsupported(w.at("behavior"), fmt::format("is `{}`, not a split behavior (Removed, Isolated, MergedWithPrevious, "
                                            "MergedWithNext, Contiguous)",
                                            name));
}

// The matches of each code point `is_match` takes, one a code point.
Ranges char_matches(std::string_view text, const std::function<bool(char32_t)>& is_match) {
  Ranges out;
  size_t at = 0;
  for (char32_t c : code_points(text)) {
    size_t n = utf8_length(c);
    if (is_match(c)) out.emplace_back(at, at + n);
    at += n;
  }
  return out;
}

// Splits `piece` at `matches` (ordered, disjoint) as `behavior` says; `invert` splits at
// what does not match instead.
void split_piece(const Piece& piece, const Ranges& matches, Behavior behavior, bool invert, std::vector<Piece>& out) {
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t at = 0;
  for (auto [begin, end] : matches) {
    if (begin > at) parts.push_back({at, begin, invert});
    parts.push_back({begin, end, !invert});
    at = end;
  }
  if (at < piece.text.size()) parts.push_back({at, piece.text.size(), invert});

  std::vector<Part> kept;
  bool previous = false;
  switch (behavior) {
    case Behavior::Removed:
      for (const Part& p : parts) {
        if (!p.is_match) kept.push_back(p);
      }
      break;
    case Behavior::Isolated: kept = parts; break;
    case Behavior::MergedWithPrevious:
      for (const Part& p : parts) {
        if (p.is_match && !previous && !kept.empty()) kept.back().end = p.end;
        else kept.push_back(p);
        previous = p.is_match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous && !kept.empty()) kept.back().begin = it->begin;
        else kept.push_back(*it);
        previous = it->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::Contiguous:
      for (const Part& p : parts) {
        if (p.is_match == previous && !kept.empty()) kept.back().end = p.end;
        else kept.push_back(p);
        previous = p.is_match;
      }
      break;
  }
  for (const Part& p : kept) {
    if (p.end > p.begin) out.push_back({piece.text.substr(p.begin, p.end - p.begin), piece.at_start && p.begin == 0});
  }
}

// A pre-tokenizer that splits each piece at what `matches_in` finds.
class PatternSplit : public PreTokenizer {
 public:
  PatternSplit(Behavior behavior, bool invert) : behavior_(behavior), invert_(invert) {}
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (const Piece& p : pieces) split_piece(p, matches_in(p.text), behavior_, invert_, out);
    return out;
  }

 protected:
  virtual Ranges matches_in(std::string_view text) const = 0;

 private:
  Behavior behavior_;
  bool invert_;
};

class CharSplit final : public PatternSplit {
 public:
  CharSplit(std::function<bool(char32_t)> is_match, Behavior behavior)
      : PatternSplit(behavior, false), is_match_(std::move(is_match)) {}

 private:
  Ranges matches_in(std::string_view text) const override { return char_matches(text, is_match_); }
  std::function<bool(char32_t)> is_match_;
};

class RegexSplit final : public PatternSplit {
 public:
  RegexSplit(std::unique_ptr<Regex> regex, Behavior behavior, bool invert)
      : PatternSplit(behavior, invert), regex_(std::move(regex)) {}
  RegexSplit(std::string_view pattern, const Where& w, Behavior behavior, bool invert)
      : RegexSplit(std::make_unique<Regex>(pattern, w.shown()), behavior, invert) {}

 private:
  Ranges matches_in(std::string_view text) const override { return regex_->find_all(text); }
  std::unique_ptr<Regex> regex_;
};

// GPT-2's split: contractions, letters, numbers, other symbols, each with one space
// before it, and runs of spaces.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(const Json& o, const Where& w)
      : add_prefix_space_(bool_at(o, "add_prefix_space", w, true)), use_regex_(bool_at(o, "use_regex", w, true)) {
    if (use_regex_) regex_ = std::make_unique<RegexSplit>(kGpt2Pattern, w, Behavior::Isolated, false);
  }
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    if (add_prefix_space_) {
      for (Piece& p : pieces) {
        if (!p.text.starts_with(' ')) p.text.insert(0, " ");
      }
    }
    if (regex_) pieces = regex_->split(std::move(pieces));
    const std::u32string& chars = byte_level_chars();
    for (Piece& p : pieces) {
      std::string mapped;
      for (unsigned char b : p.text) append_utf8(mapped, chars[b]);
      p.text = std::move(mapped);
    }
    return pieces;
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<RegexSplit> regex_;
};

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(const Json& o, const Where& w)
      : replacement_(string_at(o, "replacement", w)),
        add_prefix_space_(bool_at(o, "add_prefix_space", w, true)),
        split_(bool_at(o, "split", w, true)) {
    if (code_points(replacement_).size() != 1) malformed(w.at("replacement"), "is not one character");
    std::string scheme = o.contains("prepend_scheme") && o["prepend_scheme"].is_string()
                             ? o["prepend_scheme"].get<std::string>()
                             : "always";
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      unsupported(w.at("prepend_scheme"), fmt::format("is `{}`, not always, first or never", scheme));
    }
    // Newer files say only prepend_scheme; add_prefix_space then follows it.
    if (!o.contains("add_prefix_space")) add_prefix_space_ = scheme != "never";
    scheme_ = scheme;
    splitter_ = std::make_unique<RegexSplit>(Regex::escaped(replacement_), w, Behavior::MergedWithNext, false);
  }
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    for (Piece& p : pieces) {
      std::string replaced;
      for (char c : p.text) {
        if (c == ' ') replaced += replacement_;
        else replaced += c;
      }
      p.text = std::move(replaced);
      bool prepend = scheme_ == "always" || (scheme_ == "first" && p.at_start);
      if (add_prefix_space_ && prepend && !p.text.starts_with(replacement_)) p.text.insert(0, replacement_);
    }
    return split_ ? splitter_->split(std::move(pieces)) : pieces;
  }

 private:
  std::string replacement_;
  bool add_prefix_space_, split_;
  std::string scheme_;
  std::unique_ptr<RegexSplit> splitter_;
};

class PreTokenizerSequence final : public SequenceOf<PreTokenizer, std::vector<Piece>, &PreTokenizer::split> {
 public:
  PreTokenizerSequence(const Json& o, const Where& w) : SequenceOf(o, "pretokenizers", w, make_pre_tokenizer) {}
  std::vector<Piece> split(std::vector<Piece> pieces) const override { return run(std::move(pieces)); }
};

// BERT's: whitespace removed, then each punctuation character alone.
class BertPreTokenizer final : public PreTokenizer {
 public:
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    return punctuation_.split(whitespace_.split(std::move(pieces)));
  }

 private:
  CharSplit whitespace_{is_white_space, Behavior::Removed};
  CharSplit punctuation_{is_punctuation, Behavior::Isolated};
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& o, const Where& w) {
  if (o.is_null()) return nullptr;
  std::string type = string_at(o, "type", w);
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(o, w);
  if (type == "Metaspace") return std::make_unique<Metaspace>(o, w);
  if (type == "Split") {
    return std::make_unique<RegexSplit>(pattern_of(o, w), behavior_of(o, w), bool_at(o, "invert", w, false));
  }
  if (type == "Sequence") return std::make_unique<PreTokenizerSequence>(o, w);
  if (type == "Whitespace") return std::make_unique<RegexSplit>(R"(\w+|[^\w\s]+)", w, Behavior::Removed, true);
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_white_space, Behavior::Removed);
  if (type == "Punctuation") return std::make_unique<CharSplit>(is_punctuation, behavior_of(o, w));
  if (type == "Digits") {
    bool individual = bool_at(o, "individual_digits", w, false);
    return std::make_unique<CharSplit>(is_numeric, individual ? Behavior::Isolated : Behavior::Contiguous);
  }
  if (type == "CharDelimiterSplit") {
    std::u32string delimiter = code_points(string_at(o, "delimiter", w));
    if (delimiter.size() != 1) malformed(w.at("delimiter"), "is not one character");
    return std::make_unique<CharSplit>([d = delimiter[0]](char32_t c) { return c == d; }, Behavior::Removed);
  }
  unsupported(w.at("type"), fmt::format("is the pre-tokenizer `{}`, which this reader does not run (it runs "
                                        "BertPreTokenizer, ByteLevel, Metaspace, Split, Sequence, Whitespace, "
                                        "WhitespaceSplit, Punctuation, Digits and CharDelimiterSplit)",
                                        type));
}

std::unique_ptr<Regex> pattern_of(const Json& o, const Where& w) {
  const Json& pattern = object_at(o, "pattern", w);
  Where pw = w.at("pattern");
  if (pattern.contains("String"))
    return std::make_unique<Regex>(Regex::escaped(string_at(pattern, "String", pw)), pw.shown());
  if (pattern.contains("Regex")) return std::make_unique<Regex>(string_at(pattern, "Regex", pw), pw.shown());
  malformed(pw, "holds neither `String` nor `Regex`");
}

const std::u32string& byte_level_chars() {
  static const std::u32string chars = [] {
    std::u32string out(256, 0);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      out[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return out;
  }();
  return chars;
}

std::optional<uint8_t> byte_of_level_char(char32_t c) {
  const std::u32string& chars = byte_level_chars();
  for (int b = 0; b < 256; ++b) {
    if (chars[b] == c) return static_cast<uint8_t>(b);
  }
  return std::nullopt;
}

}  // namespace sx::text
