// A tokenizer.json's pipeline (see tokenizer.h): added tokens, then normalizer,
// pre-tokenizer, model, truncation, post-processor and padding, as `tokenizers` orders them.
#include "text/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "text/components.h"
#include "text/unicode.h"

namespace sx::text {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// The added tokens one pass looks for: their texts (for the normalized ones, as the
// normalizer leaves them), longest first.
struct AddedMatcher {
  std::vector<std::pair<std::string, const AddedToken*>> patterns;
};

namespace {

// A stretch of text, or an added token found in it.
struct Segment {
  std::string text;
  const AddedToken* token = nullptr;
  bool at_start = false;
};

bool ends_with_word(std::string_view s) {
  std::u32string cps = code_points(s);
  return !cps.empty() && is_alphanumeric(cps.back());
}

bool starts_with_word(std::string_view s) {
  std::u32string cps = code_points(s.substr(0, std::min<size_t>(4, s.size())));
  return !cps.empty() && is_alphanumeric(cps.front());
}

// Where the run of white space that ends `s` begins.
size_t white_space_run_start(std::string_view s) {
  std::u32string cps = code_points(s);
  size_t at = s.size();
  for (auto it = cps.rbegin(); it != cps.rend() && is_white_space(*it); ++it) {
    at -= utf8_length(*it);
  }
  return at;
}

// The bytes of the run of white space that starts `s`.
size_t white_space_run_length(std::string_view s) {
  size_t at = 0;
  for (char32_t c : code_points(s)) {
    if (!is_white_space(c)) break;
    at += utf8_length(c);
  }
  return at;
}

// `text` split at the leftmost-longest matches of the matcher's tokens, as `tokenizers`
// splits them (a single_word token only between non-word characters; lstrip and rstrip
// take the white space beside the token with it).
std::vector<Segment> split_added(const std::string& text, bool at_start, const AddedMatcher& matcher) {
  std::vector<Segment> out;
  size_t done = 0;
  for (size_t at = 0; at < text.size() && !matcher.patterns.empty();) {
    const std::pair<std::string, const AddedToken*>* found = nullptr;
    for (const auto& p : matcher.patterns) {
      if (text.compare(at, p.first.size(), p.first) == 0) {
        found = &p;
        break;
      }
    }
    if (!found) {
      ++at;
      continue;
    }
    size_t start = at, stop = at + found->first.size();
    at = stop;
    const AddedToken& token = *found->second;
    if (token.single_word && ((start > 0 && ends_with_word(std::string_view(text).substr(0, start))) ||
                              (stop < text.size() && starts_with_word(std::string_view(text).substr(stop))))) {
      continue;
    }
    if (token.lstrip) start = std::max(white_space_run_start(std::string_view(text).substr(0, start)), done);
    if (token.rstrip) stop += white_space_run_length(std::string_view(text).substr(stop));
    if (done < start) out.push_back({text.substr(done, start - done), nullptr, at_start && done == 0});
    out.push_back({text.substr(start, stop - start), &token, false});
    done = stop;
    at = std::max(at, stop);
  }
  if (done < text.size() || text.empty()) out.push_back({text.substr(done), nullptr, at_start && done == 0});
  return out;
}

// Deeper than any tokenizer.json nests (Sequences are read recursively): refused.
constexpr size_t kMaxDepth = 64;

size_t depth_of(const Json& root) {
  size_t deepest = 0;
  std::vector<std::pair<const Json*, size_t>> pending{{&root, 1}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    if (depth > kMaxDepth) break;
    if (value->is_structured()) {
      for (const Json& item : *value) {
        if (item.is_structured()) pending.emplace_back(&item, depth + 1);
      }
    }
  }
  return deepest;
}

}  // namespace

struct Tokenizer::Pipeline {
  std::string name;
  std::vector<AddedToken> added;
  AddedMatcher raw_matcher, normalized_matcher;
  std::unordered_map<int32_t, const AddedToken*> added_by_id;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  int64_t truncate_to = 0;  // 0: none
  bool truncate_left = false;
  int64_t pad_to = 0;  // 0: to the encoding's own length
  int64_t pad_multiple = 0;
  bool padding = false, pad_left = false;
  int32_t pad_id = 0;
};

namespace {

void read_added_tokens(const Json& root, const Where& w, Tokenizer::Pipeline& p);

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
Tokenizer::~Tokenizer() = default;

std::shared_ptr<const Tokenizer> Tokenizer::parse(std::string_view json_text, std::string_view name) {
  Where w{std::string(name), ""};
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    std::string reason = e.what();
    size_t cut = reason.find("] ");
    if (cut != std::string::npos) reason = reason.substr(cut + 2);
    throw TokenizerError(kTokenizerFile, fmt::format("{}: not JSON: {}", name, reason));
  }
  if (!root.is_object()) malformed(w, "is not a tokenizer.json: its top level is not a JSON object");
  if (depth_of(root) > kMaxDepth)
    malformed(w, fmt::format("nests more than {} levels deep: not a tokenizer.json", kMaxDepth));
  auto p = std::make_unique<Pipeline>();
  p->name = std::string(name);
  try {
    auto stage = [&](std::string_view key) -> const Json& {
      static const Json null;
      auto it = root.find(key);
      return it == root.end() ? null : *it;
    };
    p->model = make_model(field(root, "model", w), w.at("model"));
    p->normalizer = make_normalizer(stage("normalizer"), w.at("normalizer"));
    p->pre_tokenizer = make_pre_tokenizer(stage("pre_tokenizer"), w.at("pre_tokenizer"));
    p->post_processor = make_post_processor(stage("post_processor"), w.at("post_processor"));
    p->decoder = make_decoder(stage("decoder"), w.at("decoder"));
    read_added_tokens(root, w, *p);

    if (const Json& t = stage("truncation"); !t.is_null()) {
      Where tw = w.at("truncation");
      p->truncate_to = integer_at(t, "max_length", tw, 0);
      if (p->truncate_to < 1) malformed(tw.at("max_length"), "is not a positive length");
      std::string direction = t.contains("direction") ? string_at(t, "direction", tw) : "Right";
      if (direction != "Right" && direction != "Left") unsupported(tw.at("direction"), "is neither Right nor Left");
      p->truncate_left = direction == "Left";
      std::string strategy = t.contains("strategy") ? string_at(t, "strategy", tw) : "LongestFirst";
      if (strategy != "LongestFirst" && strategy != "OnlyFirst") {
        unsupported(tw.at("strategy"),
                    fmt::format("is `{}`: one sequence truncates by LongestFirst or OnlyFirst", strategy));
      }
    }
    if (const Json& pad = stage("padding"); !pad.is_null()) {
      Where pw = w.at("padding");
      p->padding = true;
      const Json& strategy = field(pad, "strategy", pw);
      if (strategy.is_object() && strategy.contains("Fixed")) {
        p->pad_to = integer_at(strategy, "Fixed", pw.at("strategy"), 0);
      } else if (strategy != "BatchLongest") {
        unsupported(pw.at("strategy"),
                    fmt::format("is {}, neither BatchLongest nor {{\"Fixed\": N}}", strategy.dump()));
      }
      std::string direction = pad.contains("direction") ? string_at(pad, "direction", pw) : "Right";
      if (direction != "Right" && direction != "Left") unsupported(pw.at("direction"), "is neither Right nor Left");
      p->pad_left = direction == "Left";
      p->pad_multiple = integer_at(pad, "pad_to_multiple_of", pw, 0);
      p->pad_id = static_cast<int32_t>(integer_at(pad, "pad_id", pw, 0));
    }
  } catch (const Json::exception& e) {
    throw TokenizerError(kTokenizerFile, fmt::format("{}: not a tokenizer.json: {}", name, e.what()));
  }
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(p)));
}

namespace {

void read_added_tokens(const Json& root, const Where& w, Tokenizer::Pipeline& p) {
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return;
  Where aw = w.at("added_tokens");
  if (!it->is_array()) malformed(aw, "is not a JSON array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    Where tw = aw.at(i);
    AddedToken token;
    token.content = string_at(t, "content", tw);
    int64_t id = integer_at(t, "id", tw, -1);
    if (id < 0 || id > INT32_MAX) malformed(tw.at("id"), "is not an id (a whole number from 0 to 2147483647)");
    token.id = static_cast<int32_t>(id);
    token.special = bool_at(t, "special", tw, false);
    token.normalized = bool_at(t, "normalized", tw, !token.special);
    token.lstrip = bool_at(t, "lstrip", tw, false);
    token.rstrip = bool_at(t, "rstrip", tw, false);
    token.single_word = bool_at(t, "single_word", tw, false);
    if (token.content.empty()) malformed(tw.at("content"), "is empty");
    if (first_invalid_utf8(token.content) != std::string::npos) malformed(tw.at("content"), "is not UTF-8");
    p.added.push_back(std::move(token));
  }
  for (const AddedToken& t : p.added) {
    p.added_by_id[t.id] = &t;
    if (t.normalized) {
      std::string pattern = p.normalizer ? p.normalizer->normalize(t.content) : t.content;
      if (!pattern.empty()) p.normalized_matcher.patterns.emplace_back(pattern, &t);
    } else {
      p.raw_matcher.patterns.emplace_back(t.content, &t);
    }
  }
  for (AddedMatcher* m : {&p.raw_matcher, &p.normalized_matcher}) {
    std::stable_sort(m->patterns.begin(), m->patterns.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
}

}  // namespace

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const Pipeline& p = *pipeline_;
  if (size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    throw TokenizerError(kTokenizerText, fmt::format("the text is not UTF-8: byte {} (0x{:02X}) begins no character",
                                                     bad, static_cast<unsigned char>(text[bad])));
  }
  std::vector<int32_t> ids;
  // The first stretch of text the added tokens leave, wherever it begins, is what
  // Metaspace's prepend_scheme "first" prepends to (as `tokenizers` 0.15 has it).
  bool first_text = true;
  for (Segment& raw : split_added(std::string(text), true, p.raw_matcher)) {
    if (raw.token) {
      ids.push_back(raw.token->id);
      continue;
    }
    std::string normal = p.normalizer ? p.normalizer->normalize(std::move(raw.text)) : std::move(raw.text);
    for (Segment& s : split_added(normal, std::exchange(first_text, false), p.normalized_matcher)) {
      if (s.token) {
        ids.push_back(s.token->id);
        continue;
      }
      if (s.text.empty()) continue;
      std::vector<Piece> pieces{{std::move(s.text), s.at_start}};
      if (p.pre_tokenizer) pieces = p.pre_tokenizer->split(std::move(pieces));
      for (const Piece& piece : pieces) {
        if (!piece.text.empty()) p.model->tokenize(piece.text, ids);
      }
    }
  }

  size_t added = options.add_special_tokens && p.post_processor ? p.post_processor->added_count() : 0;
  int64_t limit = options.length > 0 ? options.length : p.truncate_to;
  bool from_left = options.length > 0 ? false : p.truncate_left;
  if (limit > 0) {
    if (static_cast<int64_t>(added) > limit) {
      throw TokenizerError(kTokenizerLength, fmt::format("{}: a length of {} leaves no room for the {} special tokens "
                                                         "the post-processor adds",
                                                         p.name, limit, added));
    }
    auto keep = static_cast<size_t>(limit) - added;
    if (ids.size() > keep) {
      if (from_left) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
      else ids.resize(keep);
    }
  }
  if (options.add_special_tokens && p.post_processor) ids = p.post_processor->process(std::move(ids));

  Encoding out;
  out.mask.assign(ids.size(), 1);
  size_t target = ids.size();
  bool pad_left = p.pad_left;
  if (options.length > 0) {
    target = static_cast<size_t>(options.length);
    pad_left = false;
  } else if (p.padding) {
    target = std::max(target, static_cast<size_t>(p.pad_to));
    if (p.pad_multiple > 0 && target % p.pad_multiple) target += p.pad_multiple - target % p.pad_multiple;
  }
  if (target > ids.size()) {
    size_t n = target - ids.size();
    auto at = pad_left ? 0 : ids.size();
    ids.insert(ids.begin() + static_cast<std::ptrdiff_t>(at), n, p.pad_id);
    out.mask.insert(out.mask.begin() + static_cast<std::ptrdiff_t>(at), n, 0);
  }
  out.ids = std::move(ids);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const Pipeline& p = *pipeline_;
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (auto it = p.added_by_id.find(id); it != p.added_by_id.end()) {
      if (!(skip_special && it->second->special)) tokens.push_back(it->second->content);
      continue;
    }
    const std::string* token = p.model->token_of(id);
    if (!token) {
      throw TokenizerError(kTokenizerIds, fmt::format("{}: {} is no token's id: the ids run from 0 to {}", p.name, id,
                                                      vocab_size() - 1));
    }
    tokens.push_back(*token);
  }
  if (p.decoder) tokens = p.decoder->decode_chain(std::move(tokens));
  else if (!tokens.empty()) {
    std::string joined = tokens[0];
    for (size_t i = 1; i < tokens.size(); ++i) joined += " " + tokens[i];
    return joined;
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::string Tokenizer::model_kind() const { return pipeline_->model->kind(); }

int64_t Tokenizer::vocab_size() const {
  int64_t n = pipeline_->model->size();
  for (const auto& t : pipeline_->added) n = std::max<int64_t>(n, int64_t{t.id} + 1);
  return n;
}

}  // namespace sx::text
