// The texts of text's diagnostic codes: E-TOKEN (tokenizers read from tokenizer.json).
// Codes are never reused: a retired code keeps its row and says so.
#include "text/tokenizer.h"

namespace sx::text {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-TOKEN-001", "a file that is not a tokenizer.json",
     R"(`(tokenizer PATH)` reads the `tokenizer.json` a Hugging Face model ships (the file
the `tokenizers` package writes with `save`). This file is not JSON (cut short, or
another kind of file), or a field the tokenizer needs is missing or of the wrong type.
The message names the field, such as `model.vocab` or `added_tokens[3].id`.

    (tokenizer "model/tokenizer_config.json")   ; the configuration, not the tokenizer
    (tokenizer "model/tokenizer.json")

A model that ships only `vocab.txt`, `merges.txt` or `tokenizer.model` has no
tokenizer.json: load it once with `transformers`' fast tokenizer and `save_pretrained`
it to write one.)"},
    {"E-TOKEN-002", "a part of a tokenizer this reader does not run",
     R"(The tokenizer.json names a normalizer, pre-tokenizer, model, post-processor or decoder
this reader does not run, or sets an option that would change what one does (BPE
dropout, a Unigram or WordLevel model, a sentencepiece `Precompiled` normalizer, a
regex ICU cannot compile). Rather than tokenize differently from the `tokenizers`
package, it refuses the file and names the part:

    error[E-TOKEN-002]: tokenizer.json: `normalizer.type` is the normalizer `Precompiled`,
    which this reader does not run

docs/tokenizers.md lists what is run. Tokenize such text outside and read the ids with
`jsonl`.)"},
    {"E-TOKEN-003", "a tokenizer that names tokens its vocabulary lacks",
     R"(The model's unknown token, or a BPE merge (the two tokens it joins, or the token they
make), is not in `model.vocab`. The file is inconsistent (edited by hand, or cut): use
the tokenizer.json the model ships.)"},
    {"E-TOKEN-004", "text to encode that is not UTF-8",
     R"(`encode`, and a loader's `:tokenize`, read text as UTF-8. The message gives the offset
of the first byte that begins no character. Write the data as UTF-8.)"},
    {"E-TOKEN-005", "an id that is no token",
     R"(`(decode tk ids)` was given an id that is neither in the model's vocabulary nor an
added token: negative, or past the vocabulary. The message gives the range. Ids from
another tokenizer's vocabulary, or a model's output taken as ids without argmax, give
this.)"},
    {"E-TOKEN-006", "a length too short for the special tokens",
     R"(A `:length` (or the tokenizer.json's truncation `max_length`) is smaller than the
number of special tokens the post-processor puts around the text (BERT adds [CLS] and
[SEP], two), so no text would fit. Give a longer length.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::text
