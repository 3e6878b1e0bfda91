// The texts of bundle's diagnostic codes. Codes are never reused: a retired code keeps its
// row and says so.
#include "bundle/codes.h"

namespace sx::bundle {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-BUNDLE-001", "a bundle whose bundle.json cannot be read",
     R"(A bundle is a folder (or a .tar or .tar.zst archive of one) holding `bundle.json`,
which names its run file and lists every file of the bundle with its size and SHA-256.
The file is missing, is not JSON, or lacks what a bundle records: `run` (the run
file's path in the bundle), and `files`, each entry an object with a relative `path`
inside the bundle, a `size` and a `sha256` of 64 hex digits. The message says which.

Write the bundle again with `sexpgpu bundle FILE.sx -o DIR` rather than editing
bundle.json by hand.)"},
    {"E-BUNDLE-002", "a file the bundle lists is missing",
     R"(Every file bundle.json lists is checked before the bundle runs, and this one is not
in the bundle's folder (or is not a regular file). A bundle is copied whole: copy
the folder again, or write the bundle again with `sexpgpu bundle`. A file whose bytes
changed is E-LOAD-001 instead.)"},
    {"E-BUNDLE-003", "where a bundle or an experiment would be written already exists",
     R"(`sexpgpu bundle FILE.sx -o DIR` and `sexpgpu new BUNDLE DIR` write a new folder (or
archive) and never write into one that exists, so nothing of yours is replaced.
Name another folder, or remove the old one first.

A source that would land where the bundle keeps its own files (`bundle.json`, the
`data/` folder; `bundle/` in an experiment `new` starts) is refused too: rename it.)"},
    {"E-BUNDLE-004", "a bundle or archive that could not be written or unpacked",
     R"(Writing a bundle, an archive or a new experiment failed in the file system (no
space, no permission), or an archive given to `run` or `new` is not a bundle's: not a
.tar or .tar.zst, damaged, or holding an entry that is not a plain file or folder or
whose name leads outside the archive. The message names the file and the reason. A
half-written bundle is removed.)"},
    {"W-BUNDLE-001", "a path the bundle cannot rewrite, because it is computed",
     R"(`sexpgpu bundle` copies the files that `:load`, `with-loaded`, the loaders and
`tokenizer` read, and the model folder of `hf-model`, and rewrites each path to its
copy where the source writes the path as a string literal in the form itself:

    (defparam w (zeros [4 4]) :load ["weights.safetensors" "w"])   ; rewritten
    (with-loaded ("model.safetensors.index.json" hf-name) ...)     ; rewritten
    (jsonl "train.jsonl" :fields [:x :y])                           ; rewritten
    (hf-model "models/minilm")                                      ; rewritten

Any other path is computed: a name bound elsewhere, a call such as `(str dir
"/w.safetensors")`, a function's argument. It is left as written, so the bundle
reads it where the path points when it runs. Write the path as a string in the form
to have it bundled.)"},
    {"W-BUNDLE-002", "a string path that names no file",
     R"(A path written as a string where `:load`, `with-loaded`, a loader or `tokenizer`
reads it names no file, or where `hf-model` reads it names no folder, so there is
nothing to copy: the path is left as written. It is usually a branch the bundled
variant does not take; where the bundle runs, the file must be where the path points.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::bundle
