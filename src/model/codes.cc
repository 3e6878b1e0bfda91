// The texts of model's diagnostic codes: E-PARAM and W-PARAM (models and parameters).
// Codes are never reused: a retired code keeps its row and says so.
#include "model/codes.h"

namespace sx::model {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-PARAM-002", "defparam outside a model",
     R"(`defparam` declares persistent state, and state belongs to a model: it may appear
only while a `defmodel` constructor is running.

    (defparam w (zeros [4]))          ; at the top level: no model to hold it

Move it into a `defmodel` body; calling the constructor creates the parameter.)"},
    {"E-PARAM-003", "an initializer that is not closed",
     R"(A parameter's initializer must be a closed graph of its own: shapes, constants and
random initializers (`normal`, `uniform`, `zeros`, ...), never another tensor value such
as a model input or another parameter.

    (defparam w (normal (shape x)))   ; fine: (shape x) is a shape, a vector of numbers
    (defparam w (* x 2))              ; refused: reads the tensor x

The initializer runs once, before any data exists; compute what it needs from shapes.)"},
    {"E-PARAM-004", "a model body that does not end in a function",
     R"(A `defmodel` body must end in what applying the model calls: a function, a builtin
or another model, usually `(lambda (x) ...)`.

    (defmodel scale (n) (defparam s (ones [n])) s)       ; ends in a tensor

End the body with `(lambda (x) (* x s))`.)"},
    {"E-PARAM-005", "named on something that is not a model or parameter",
     R"(`(named "segment" value)` sets the path segment of a model or of a parameter; any
other value has no path. The segment is a non-empty string without dots.)"},
    {"E-PARAM-006", "an unknown defparam option",
     R"(`defparam` takes the options `:tags`, `:numerics`, `:trainable` and `:load`, each
followed by its value. `:numerics` takes only `:high`; `:tags` a list or vector of names.)"},
    {"E-PARAM-007", "a :trainable or :load of the wrong kind",
     R"(`:trainable` takes `true` or `false`; `:load` takes a vector of two strings, the
safetensors file and the tensor's name in it: `:load ["weights.safetensors" "w"]`.)"},
    {"E-PARAM-008", "a model with two roots",
     R"(Every model bound by itself at the top of the run file is a root, and its
parameters' paths start with that name. A model has one root: the same model bound to
two top-level names, or a sub-model of one root also bound at the top level, would have
two paths for each parameter.

Bind it once; to share weights between two places, use the same model value in both
places inside one root.)"},
    {"E-PARAM-009", "a parameter without a root is read",
     R"(A model built inside a `let`, a function, a list or a library module, and never
bound by itself at the top of the run file, has no root, so its parameters have no path:
they cannot be checkpointed or trained. A graph that reads one is refused.

Bind the model with `defvar` at the top level, or build it inside the `defmodel` that
uses it (a `let` there names it).)"},
    {"E-PARAM-010", "two parameters with one path",
     R"(Two parameters of one root would have the same path, usually two sub-models bound
to the same `let` name in nested scopes, or a `named` segment used twice. Bind them to
different names, or give one another segment with `named`.)"},
    {"E-JSON-001", "a JSON file that is not JSON",
     R"(`read-json` read a file that is not JSON, has a key twice in one object, or nests
objects and arrays more than 64 deep. The message names the file and where the text
stops being JSON. Check that the file is whole (not a git-lfs pointer or an HTML error
page saved under its name).)"},
    {"E-JSON-002", "a JSON file too large to read",
     R"(`read-json` reads files of up to 64 MiB: configurations, indexes and tokenizers.
A larger file is refused before it is read.)"},
    {"E-HF-001", "a Hugging Face model or option that hf-model does not build",
     R"(`hf-model` (sexpgpu/hf) builds the model a config.json describes only when it builds
exactly that model: the families bert, gpt2, llama, mistral and qwen2, and within them
the options docs/pretrained.md lists. Anything else, such as another `model_type`, a
`rope_scaling` type it does not know, an activation other than the family's, or a
sliding window narrower than the sequence, is refused by name rather than approximated.

    (hf-model "t5-small")
    ; error[E-HF-001]: hf-model has no builder for model_type "t5"

Use a supported model, or write the model with sexpgpu/nn and `with-loaded`.)"},
    {"E-HF-002", "a config.json without a field hf-model needs",
     R"(The config.json lacks a field the family's builder reads (such as `hidden_size` or
`num_attention_heads`), or gives it a value of the wrong kind. The message names the
field. A config.json saved by `transformers` (`save_pretrained`) has every field.)"},
    {"E-HF-003", "a Hugging Face export of a model that has no Hugging Face names",
     R"(`sexpgpu export --format hf` writes each parameter under the tensor name it was
loaded from, the config.json beside the file it was loaded from, and the tokenizer.json
the run read its text through. A parameter the graph reads that was not loaded from a
file (a head added for fine-tuning, say), parameters loaded from two different folders,
or a run whose `:tokenize` fields read text through two different tokenizers, leave no
Hugging Face model to write.

Export such a model with the default format, load every parameter with `hf-model`, or
tokenize every field with one tokenizer.)"},
    {"W-PARAM-001", "a model never bound to a name",
     R"(A sub-model was created inside a constructor without a `let` binding or `named`,
so its parameters get the segment `anon.N`. Paths are what selectors match and what
checkpoints store; an `anon.N` changes when the code around it changes. Bind the model
with `let`, or name it.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::model
