// The normalizers of tokenizer.json, each as the `tokenizers` package defines it.
#include <fmt/format.h>

#include "text/components.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace sx::text {
namespace {

bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// The text without the marks `is_dropped` takes: BERT drops the nonspacing ones (Mn),
// StripAccents every mark (M*).
std::string without_marks(std::string_view text, bool (*is_dropped)(char32_t)) {
  std::u32string out;
  for (char32_t c : code_points(text)) {
    if (!is_dropped(c)) out += c;
  }
  return utf8_of(out);
}

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(const Json& o, const Where& w)
      : clean_text_(bool_at(o, "clean_text", w, true)),
        chinese_(bool_at(o, "handle_chinese_chars", w, true)),
        lowercase_(bool_at(o, "lowercase", w, true)),
        strip_accents_(bool_at(o, "strip_accents", w, lowercase_)) {}

  std::string normalize(std::string text) const override {
    if (clean_text_ || chinese_) {
      std::u32string out;
      for (char32_t c : code_points(text)) {
        if (clean_text_) {
          bool control = c != '\t' && c != '\n' && c != '\r' && is_other(c);
          if (c == 0 || c == 0xFFFD || control) continue;
          if (c == '\t' || c == '\n' || c == '\r' || is_white_space(c)) c = ' ';
        }
        if (chinese_ && is_chinese(c)) {
          out += U' ';
          out += c;
          out += U' ';
        } else {
          out += c;
        }
      }
      text = utf8_of(out);
    }
    if (strip_accents_) text = without_marks(normalized(text, NormalForm::NFD), is_nonspacing_mark);
    if (lowercase_) text = lowercased(text);
    return text;
  }

 private:
  bool clean_text_, chinese_, lowercase_, strip_accents_;
};

class FormNormalizer final : public Normalizer {
 public:
  explicit FormNormalizer(NormalForm form) : form_(form) {}
  std::string normalize(std::string text) const override { return normalized(text, form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return lowercased(text); }
};

class StripAccents final : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return without_marks(text, is_mark); }
};

class Strip final : public Normalizer {
 public:
  Strip(const Json& o, const Where& w)
      : left_(bool_at(o, "strip_left", w, false)), right_(bool_at(o, "strip_right", w, false)) {}
  std::string normalize(std::string text) const override {
    std::u32string cps = code_points(text);
    size_t begin = 0, end = cps.size();
    if (left_) {
      while (begin < end && is_white_space(cps[begin])) ++begin;
    }
    if (right_) {
      while (end > begin && is_white_space(cps[end - 1])) --end;
    }
    return utf8_of(cps.substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  Prepend(const Json& o, const Where& w) : prefix_(string_at(o, "prepend", w)) {}
  std::string normalize(std::string text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(const Json& o, const Where& w) : regex_(pattern_of(o, w)), content_(string_at(o, "content", w)) {}
  std::string normalize(std::string text) const override { return regex_->replace_all(text, content_); }

 private:
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

class NormalizerSequence final : public SequenceOf<Normalizer, std::string, &Normalizer::normalize> {
 public:
  NormalizerSequence(const Json& o, const Where& w) : SequenceOf(o, "normalizers", w, make_normalizer) {}
  std::string normalize(std::string text) const override { return run(std::move(text)); }
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& o, const Where& w) {
  if (o.is_null()) return nullptr;
  std::string type = string_at(o, "type", w);
  if (type == "BertNormalizer") return std::make_unique<BertNormalizer>(o, w);
  if (type == "NFC") return std::make_unique<FormNormalizer>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<FormNormalizer>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<FormNormalizer>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<FormNormalizer>(NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") return std::make_unique<Strip>(o, w);
  if (type == "Prepend") return std::make_unique<Prepend>(o, w);
  if (type == "Replace") return std::make_unique<Replace>(o, w);
  if (type == "Sequence") return std::make_unique<NormalizerSequence>(o, w);
  unsupported(w.at("type"), fmt::format("is the normalizer `{}`, which this reader does not run (it runs "
                                        "BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, "
                                        "Prepend, Replace and Sequence)",
                                        type));
}

}  // namespace sx::text
