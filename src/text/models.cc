// The models of tokenizer.json: WordPiece (greedy longest match, BERT) and BPE (merges
// by rank, with byte fallback and fused unknowns: GPT-2, Llama, Mistral), each as the
// `tokenizers` package runs it.
#include <fmt/format.h>

#include <queue>

#include "text/components.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace sx::text {

std::optional<int32_t> Model::id_of(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

const std::string* Model::token_of(int32_t id) const {
  auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

void Model::read_vocab(const Json& vocab, const Where& where) {
  if (!vocab.is_object()) malformed(where, "is not a JSON object of tokens and their ids");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX) {
      malformed(where.at(it.key()), "is not an id (a whole number from 0 to 2147483647)");
    }
    auto id = static_cast<int32_t>(it->get<int64_t>());
    ids_[it.key()] = id;
    tokens_[id] = it.key();
    size_ = std::max<int64_t>(size_, int64_t{id} + 1);
  }
}

namespace {

size_t utf8_length_at(std::string_view s, size_t at) {
  auto b = static_cast<unsigned char>(s[at]);
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

class WordPiece final : public Model {
 public:
  WordPiece(const Json& o, const Where& w)
      : unk_(string_at(o, "unk_token", w)),
        prefix_(o.contains("continuing_subword_prefix") ? string_at(o, "continuing_subword_prefix", w) : "##"),
        max_chars_(integer_at(o, "max_input_chars_per_word", w, 100)) {
    read_vocab(field(o, "vocab", w), w.at("vocab"));
    auto unk = id_of(unk_);
    if (!unk) {
      throw TokenizerError(kTokenizerVocabulary,
                           fmt::format("{}: the unknown token `{}` is not in the vocabulary", w.shown(), unk_));
    }
    unk_id_ = *unk;
  }
  std::string kind() const override { return "WordPiece"; }

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
    if (static_cast<int64_t>(code_points(word).size()) > max_chars_) {
      ids.push_back(unk_id_);
      return;
    }
    std::vector<int32_t> pieces;
    size_t start = 0;
    while (start < word.size()) {
      size_t end = word.size();
      std::optional<int32_t> found;
      while (start < end) {
        std::string candidate = (start > 0 ? prefix_ : "") + std::string(word.substr(start, end - start));
        found = id_of(candidate);
        if (found) break;
        do --end;  // back one code point
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (!found) {
        ids.push_back(unk_id_);
        return;
      }
      pieces.push_back(*found);
      start = end;
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
  }

 private:
  std::string unk_, prefix_;
  int64_t max_chars_;
  int32_t unk_id_ = 0;
};

class Bpe final : public Model {
 public:
  Bpe(const Json& o, const Where& w) {
    if (o.contains("dropout") && !o["dropout"].is_null()) {
      unsupported(w.at("dropout"), "is set: BPE dropout is a training aid this reader does not run");
    }
    read_vocab(field(o, "vocab", w), w.at("vocab"));
    auto optional_string = [&](std::string_view key) -> std::optional<std::string> {
      auto it = o.find(key);
      if (it == o.end() || it->is_null()) return std::nullopt;
      return string_at(o, key, w);
    };
    if (auto unk = optional_string("unk_token")) {
      unk_id_ = id_of(*unk);
      if (!unk_id_) {
        throw TokenizerError(kTokenizerVocabulary,
                             fmt::format("{}: the unknown token `{}` is not in the vocabulary", w.shown(), *unk));
      }
    }
    prefix_ = optional_string("continuing_subword_prefix").value_or("");
    suffix_ = optional_string("end_of_word_suffix").value_or("");
    fuse_unk_ = bool_at(o, "fuse_unk", w, false);
    byte_fallback_ = bool_at(o, "byte_fallback", w, false);
    ignore_merges_ = bool_at(o, "ignore_merges", w, false);
    read_merges(array_at(o, "merges", w), w.at("merges"));
  }
  std::string kind() const override { return "BPE"; }

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override {
    if (ignore_merges_) {
      if (auto id = id_of(word)) {
        ids.push_back(*id);
        return;
      }
    }
    std::vector<int32_t> symbols = initial_symbols(word);
    merge_all(symbols);
    ids.insert(ids.end(), symbols.begin(), symbols.end());
  }

 private:
  struct Merge {
    int32_t rank, id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

  void read_merges(const Json& merges, const Where& w) {
    for (size_t i = 0; i < merges.size(); ++i) {
      std::string a, b;
      const Json& m = merges[i];
      if (m.is_string()) {
        std::string line = m.get<std::string>();
        size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
          malformed(w.at(i), fmt::format("is `{}`, not two tokens with a space between", line));
        }
        a = line.substr(0, space);
        b = line.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else {
        malformed(w.at(i), "is neither \"a b\" nor [\"a\", \"b\"]");
      }
      std::string joined = a + b.substr(std::min(prefix_.size(), b.size()));
      auto ia = id_of(a), ib = id_of(b), ij = id_of(joined);
      if (!ia || !ib || !ij) {
        throw TokenizerError(kTokenizerVocabulary,
                             fmt::format("{}: the merge of `{}` and `{}` names `{}`, which is not in the vocabulary",
                                         w.at(i).shown(), a, b,
                                         !ia   ? a
                                         : !ib ? b
                                               : joined));
      }
      merges_.insert_or_assign(pair_key(*ia, *ib),
                               Merge{static_cast<int32_t>(i), *ij});  // the last wins, as in `tokenizers`
    }
  }

  // Each code point's token (with the prefix after the first, the suffix on the last),
  // its bytes' <0xNN> tokens when it has none and the model falls back to bytes, else
  // the unknown token (one for a run of them when fuse_unk).
  std::vector<int32_t> initial_symbols(std::string_view word) const {
    std::vector<int32_t> out;
    std::optional<int32_t> pending_unk;
    for (size_t at = 0; at < word.size();) {
      size_t n = utf8_length_at(word, at);
      std::string s(word.substr(at, n));
      if (at > 0) s = prefix_ + s;
      if (at + n >= word.size()) s += suffix_;
      at += n;
      if (auto id = id_of(s)) {
        if (pending_unk) out.push_back(*pending_unk);
        pending_unk.reset();
        out.push_back(*id);
        continue;
      }
      if (byte_fallback_) {
        std::vector<int32_t> bytes;
        for (unsigned char b : s) {
          auto id = id_of(fmt::format("<0x{:02X}>", b));
          if (!id) break;
          bytes.push_back(*id);
        }
        if (bytes.size() == s.size()) {
          out.insert(out.end(), bytes.begin(), bytes.end());
          continue;
        }
      }
      if (unk_id_) {
        if (pending_unk && !fuse_unk_) out.push_back(*pending_unk);
        pending_unk = unk_id_;
      }
    }
    if (pending_unk) out.push_back(*pending_unk);
    return out;
  }

  // The lowest-ranked pair first, the leftmost of equal ranks, until no pair merges.
  void merge_all(std::vector<int32_t>& ids) const {
    struct Symbol {
      int32_t id;
      int64_t prev, next;
      bool removed = false;
    };
    struct Candidate {
      int32_t rank;
      int64_t pos;
      int32_t id;
      bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::vector<Symbol> s;
    s.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      s.push_back({ids[i], static_cast<int64_t>(i) - 1, i + 1 < ids.size() ? static_cast<int64_t>(i + 1) : -1});
    }
    std::priority_queue<Candidate> queue;
    auto offer = [&](int64_t pos) {
      int64_t next = s[pos].next;
      if (next < 0) return;
      auto it = merges_.find(pair_key(s[pos].id, s[next].id));
      if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
    };
    for (size_t i = 0; i + 1 < s.size(); ++i) offer(static_cast<int64_t>(i));
    while (!queue.empty()) {
      Candidate top = queue.top();
      queue.pop();
      Symbol& left = s[top.pos];
      if (left.removed || left.next < 0) continue;
      Symbol& right = s[left.next];
      auto it = merges_.find(pair_key(left.id, right.id));
      if (it == merges_.end() || it->second.id != top.id) continue;
      left.id = top.id;
      right.removed = true;
      left.next = right.next;
      if (right.next >= 0) s[right.next].prev = top.pos;
      if (left.prev >= 0) offer(left.prev);
      offer(top.pos);
    }
    ids.clear();
    for (const Symbol& sym : s) {
      if (!sym.removed) ids.push_back(sym.id);
    }
  }

  std::optional<int32_t> unk_id_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace

std::unique_ptr<Model> make_model(const Json& o, const Where& w) {
  if (!o.is_object()) malformed(w, "is not a JSON object");
  std::string type = o.contains("type") ? string_at(o, "type", w) : (o.contains("merges") ? "BPE" : "WordPiece");
  if (type == "WordPiece") return std::make_unique<WordPiece>(o, w);
  if (type == "BPE") return std::make_unique<Bpe>(o, w);
  unsupported(w.at("type"),
              fmt::format("is the model `{}`, which this reader does not run (it runs WordPiece and BPE)", type));
}

}  // namespace sx::text
