// The post-processors of tokenizer.json: the special tokens put around one sequence (a
// pair of sequences is not encoded here).
#include <fmt/format.h>

#include "text/components.h"

namespace sx::text {
namespace {

// The ids before and after the sequence.
class Surround final : public PostProcessor {
 public:
  Surround(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  size_t added_count() const override { return before_.size() + after_.size(); }
  std::vector<int32_t> process(std::vector<int32_t> ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
    return ids;
  }

 private:
  std::vector<int32_t> before_, after_;
};

int32_t id_of_pair(const Json& o, std::string_view key, const Where& w) {
  const Json& pair = field(o, key, w);
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_number_integer()) {
    malformed(w.at(key), "is not a token and its id, such as [\"[CLS]\", 101]");
  }
  return pair[1].get<int32_t>();
}

std::unique_ptr<PostProcessor> template_of(const Json& o, const Where& w) {
  const Json& single = array_at(o, "single", w);
  const Json& special = field(o, "special_tokens", w);
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    Where at = w.at("single").at(i);
    const Json& piece = single[i];
    if (piece.is_object() && piece.contains("Sequence")) {
      std::string id = string_at(object_at(piece, "Sequence", at), "id", at.at("Sequence"));
      if (id != "A" || seen_sequence)
        unsupported(at, fmt::format("puts the sequence `{}` in the single template: only one A is run", id));
      seen_sequence = true;
      continue;
    }
    if (!piece.is_object() || !piece.contains("SpecialToken"))
      malformed(at, "is neither a Sequence nor a SpecialToken");
    std::string name = string_at(object_at(piece, "SpecialToken", at), "id", at.at("SpecialToken"));
    const Json& token = object_at(special, name, w.at("special_tokens"));
    const Json& ids = array_at(token, "ids", w.at("special_tokens").at(name));
    for (const Json& id : ids) {
      if (!id.is_number_integer()) malformed(w.at("special_tokens").at(name).at("ids"), "holds what is not an id");
      (seen_sequence ? after : before).push_back(id.get<int32_t>());
    }
  }
  if (!seen_sequence) unsupported(w.at("single"), "has no Sequence A: the text would be left out");
  return std::make_unique<Surround>(std::move(before), std::move(after));
}

class Chain final : public SequenceOf<PostProcessor, std::vector<int32_t>, &PostProcessor::process> {
 public:
  Chain(const Json& o, const Where& w) : SequenceOf(o, "processors", w, make_post_processor) {}
  size_t added_count() const override {
    size_t n = 0;
    for (const auto& s : stages_) n += s->added_count();
    return n;
  }
  std::vector<int32_t> process(std::vector<int32_t> ids) const override { return run(std::move(ids)); }
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& o, const Where& w) {
  if (o.is_null()) return nullptr;
  std::string type = string_at(o, "type", w);
  if (type == "TemplateProcessing") return template_of(o, w);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return std::make_unique<Surround>(std::vector{id_of_pair(o, "cls", w)}, std::vector{id_of_pair(o, "sep", w)});
  }
  if (type == "ByteLevel") return std::make_unique<Surround>(std::vector<int32_t>{}, std::vector<int32_t>{});
  if (type == "Sequence") return std::make_unique<Chain>(o, w);
  unsupported(w.at("type"),
              fmt::format("is the post-processor `{}`, which this reader does not run (it runs "
                          "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel and Sequence)",
                          type));
}

}  // namespace sx::text
