// The texts of io's diagnostic codes: E-LOAD (parameters read from files), E-CKPT
// (checkpoints) and E-LOC (locations and the storage behind them).
// Codes are never reused: a retired code keeps its row and says so.
#include "io/codes.h"

namespace sx::io {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-LOAD-001", "a loaded file changed since it was recorded",
     R"(A file that parameters were loaded from (`:load`, `with-loaded`) is not the file that was
recorded when they were: its size or its SHA-256 differs from the identity kept with the
run (`sexpgpu explain --json` shows identities). Resuming, evaluating or serving from it
would mix weights from two different files.

The message names the file and what differs. Put the original file back, or start the
run again from the new file.)"},
    {"E-LOAD-002", "a file that cannot be read or written",
     R"(A safetensors file, a sharded checkpoint's `.index.json` or one of its shards could not
be opened, read or written: it does not exist, is a directory, or the system refused.

    (defparam w (zeros [8 8]) :load ["weights/model.safetensors" "w"])
    ; error[E-LOAD-002]: weights/model.safetensors: the file does not exist

A relative `:load` path is relative to the experiment file, not to the directory the
command runs in. For a sharded checkpoint the message names the index and the missing
shard: download every shard the index lists, into the index's folder.)"},
    {"E-LOAD-003", "a git-lfs pointer instead of the file",
     R"(The file starts with `version https://git-lfs.github.com/spec/v1`: it is the small text
file git-lfs leaves in a repository in place of a large file it has not downloaded, not
the tensors themselves. A clone of a Hugging Face model repository without git-lfs, or
with `GIT_LFS_SKIP_SMUDGE=1`, looks like this.

    error[E-LOAD-003]: llama/model.safetensors: this is a git-lfs pointer (134 bytes), not
                       the file of 4976698672 bytes it stands for

Fetch the real file in its repository with `git lfs pull` (or only this one with
`git lfs pull --include="model.safetensors"`), or download it directly.)"},
    {"E-LOAD-004", "a safetensors file shorter than its header says",
     R"(A safetensors file starts with 8 bytes giving the length of its JSON header, then the
header, then the tensors' bytes. This file ends before one of them does: it is shorter
than 8 bytes, its header length runs past the end of the file (or is over the format's
limit of 100 MB, which no real header reaches), or a tensor's data ends past the end.

    error[E-LOAD-004]: model.safetensors: tensor `w` says its data ends at byte 4096 but
                       the data section is 4000 bytes; the file is truncated, or its header
                       is wrong

Almost always the file was cut short: a download or copy that stopped early, or a disk
that filled up while it was written. Download or copy it again and compare its size with
the source's. A file that is not safetensors at all (a PyTorch `.bin`, a `.gguf`) also
lands here: convert it to safetensors first.)"},
    {"E-LOAD-005", "a safetensors header that is not in the format",
     R"(The JSON header of a safetensors file is not what the format allows. It must be valid
UTF-8 and valid JSON; an object whose every key is a tensor name, once, mapping to
exactly

    {"dtype": "F32", "shape": [4096, 4096], "data_offsets": [0, 67108864]}

with sizes and offsets non-negative integers; and optionally `"__metadata__"`, an object
whose values are strings. The message names what broke the rule: a tensor named twice,
a field missing or unknown, a shape entry such as `-1` or `2.5`, a metadata value that
is a number.

Files written by the `safetensors` package and by PyTorch, JAX or SexpGPU are always
valid; a header edited by hand or written by another tool is the usual cause. Write the
file again with `safetensors` (`safetensors.torch.save_file`, `safetensors.numpy.save_file`).)"},
    {"E-LOAD-006", "a dtype the safetensors format does not define",
     R"(A tensor's `dtype` is not one of the format's names: BOOL, U8, I8, U16, I16, F16, BF16,
U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2.

    error[E-LOAD-006]: model.safetensors: tensor `w` has the dtype `float32`, which
                       safetensors does not define

The names are upper case (`F32`, not `float32` or `f32`). A newer dtype (packed 4-bit,
for instance) is not read by this version: save the tensor as F32 or BF16.)"},
    {"E-LOAD-007", "a safetensors header that does not describe its bytes",
     R"(The header's `data_offsets` do not match the data section. Each tensor's bytes are
`[begin, end)` of the data section, `end - begin` must be its element count times its
dtype's size, and together the tensors must cover the data section exactly once, from
byte 0 to its end, with no gap and no overlap.

    {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}}
    ; error[E-LOAD-007]: model.safetensors: tensor `w` is F32 [2, 3], which is 24 bytes,
    ;                    but its data_offsets [0, 20] span 20 bytes

Reading such a file would give some tensor another's bytes, so it is refused before any
step runs. The file was written by a faulty tool or edited by hand: write it again with
the `safetensors` package.)"},
    {"E-LOAD-008", "a tensor whose dtype does not load into the parameter",
     R"(`:load` and `with-loaded` start `f32` and `bf16` parameters from F32 and BF16 tensors:
either loads into either (F32 into `bf16` rounds to nearest even; BF16 into `f32` is
exact). Any other stored dtype, or a parameter of another dtype, is refused rather than
converted in silence.

    (defparam w (zeros [8 8]) :load ["model.safetensors" "ids"])
    ; error[E-LOAD-008]: model.safetensors: tensor `ids` is stored as I64, which does not
    ;                    load into f32: only F32 and BF16 tensors load, into f32 or bf16

Check that the tensor name is the one meant. To use an F16 or F64 tensor, convert the
file first, e.g. in Python: `save_file({k: v.float() for k, v in load_file(p).items()}, q)`.)"},
    {"E-LOAD-009", "a sharded checkpoint's index that is not valid",
     R"(A `.index.json` names the shard holding each tensor of a sharded Hugging Face
checkpoint:

    {"metadata": {"total_size": 16060522496},
     "weight_map": {"lm_head.weight": "model-00004-of-00004.safetensors", ...}}

This one is not valid JSON, or is not an object with a `weight_map` of tensor names to
shard file names (strings), or names a shard outside the index's folder (an absolute
path, or a `..` that leads out of the folder, refused so that an index cannot make a
run read other files), or puts a tensor in a shard that does not hold it. The check is
on the name as written, before any link is followed: a shard that is a link inside the
folder (as in a Hugging Face cache, whose snapshots link to `../../blobs/`) is read
wherever the link points.

Download the index again with its shards; an index written by hand must follow the form
above, with every shard a file name beside the index.)"},
    {"E-LOAD-010", "an s3:// or o41:// location where a local file is read",
     R"(A storage location, `s3://bucket/key` or `o41://team/run/file`, was given where only a
local file is read. `:load`, `with-loaded`, `--checkpoint-dir`, `--checkpoint` and the
operands of `serve` and `export` take every kind of location (docs/locations.md);
others read local files only.

Copy the file next to the experiment and name it by its local path, or by
`file:///absolute/path`.)"},
    {"E-LOAD-011", "a tensor the file does not hold",
     R"(A parameter loads a tensor by a name its file (or sharded checkpoint) does not hold.
The message names the parameter's path and the tensor. With `with-loaded`, the name
came from the name function: print its result for that path to see what it built.

    python3 -c 'from safetensors import safe_open; print(list(safe_open("f.safetensors", "np").keys()))'

lists the names a file holds.)"},
    {"E-LOAD-012", "a tensor of another shape than the parameter",
     R"(A loaded tensor must have exactly the shape the parameter's initializer states.

    (defparam q (zeros [4096 4096]) :load ["model.safetensors" "q_proj.weight"])

Hugging Face checkpoints keep PyTorch's `[out in]` layout for linear layers: declare the
parameter `[out in]` and multiply by its transpose, `(matmul x (transpose q [1 0]))`.)"},
    {"E-LOAD-013", "a location SexpGPU does not read",
     R"(A `:load` or `with-loaded` names a location whose scheme (the part before `://`)
SexpGPU does not read, or a `file://` location that names no absolute path here.

    :load ["https://host/w.safetensors" "w"]       ; no https:// reading: download it
    :load ["file://w.safetensors" "w"]             ; `w.safetensors` is read as a host
    :load ["file:///data/w.safetensors" "w"]       ; the absolute path /data/w.safetensors

A location is a local path (relative to the file that names it, or absolute),
`file:///absolute/path` (or `file://localhost/absolute/path`, `%20` and the like
decoded), or a storage location, `s3://bucket/key` or `o41://team/run`
(docs/locations.md). The scheme is read first, so a location is never mistaken for a
relative path; the message shows it as written.)"},
    {"E-CKPT-001", "a checkpoint that cannot be written",
     R"(A checkpoint, or a file kept beside the checkpoints (metrics.jsonl, the loss curve),
could not be written: the location cannot be created, the disk is full, a file cannot be
written or flushed, or the finished checkpoint cannot be renamed into place. The message
names the path and the system's reason.

    error[E-CKPT-001]: runs/a/step-00000020/params.safetensors: cannot write it: No space
                       left on device

A checkpoint is written into a temporary folder (`LOC/.step-00000020.tmp-...`) and
renamed to `LOC/step-00000020` only when every file in it is complete and flushed to
disk, so a failure never leaves a half checkpoint under a checkpoint's name: the newest
complete checkpoint stays the one a resumed run starts from. Free space or choose a
location you can write (`--checkpoint-dir`), then run again.)"},
    {"E-CKPT-002", "a checkpoint location that cannot be read",
     R"(The checkpoint location (`--checkpoint-dir`, or the LOC given to a command) exists but
cannot be listed: it is a file rather than a folder, or permission is denied; or a file
kept beside the checkpoints (metrics.jsonl) cannot be read. A location that does not
exist yet is no error: a run creates it, and it holds no checkpoints.)"},
    {"E-CKPT-003", "no complete checkpoint at the location",
     R"(A command that reads a checkpoint was given a location that holds none. `LOC` means
its newest complete checkpoint, a folder `LOC/step-NNNNNNNN`; `LOC/step-00000020` names
one. Folders of another name, and the temporary folders of a checkpoint being written
(`.step-00000020.tmp-...`, left by a run that stopped while writing it), are never taken
for checkpoints.

Check the path (`ls LOC`); a run writes its first checkpoint after `:checkpoint-every`
steps, and always at its last step.)"},
    {"E-CKPT-004", "a checkpoint location SexpGPU does not write",
     R"(Checkpoint locations are local folders (a path, or `file:///absolute/path`) and
storage locations, `s3://bucket/prefix` and `o41://team/run` (docs/locations.md). Any
other scheme (`https://`) is refused by its name.

Write the checkpoints to a local folder or an S3 bucket and copy them where they are kept.)"},
    {"E-CKPT-005", "a checkpoint location that holds another run",
     R"(`sexpgpu run` resumes from the newest checkpoint of its location, and that location
holds the checkpoints of another run file (or variant): their slugs differ. Name
another `--checkpoint-dir`, or pass `--fresh` to start over in a location of its own
(the given one with `-2`, `-3`, ... after it).)"},
    {"E-CKPT-006", "a checkpoint that does not fit the run file",
     R"(The newest checkpoint of the location does not fit the run: a parameter trainable
in one and frozen in the other, or a file that is not what a checkpoint holds. A resumed
run reads every tensor its checkpoint's tables name (each parameter in
params.safetensors, each optimizer tensor in optimizer.safetensors, each average in
ema.safetensors) and every counter of state.json: one missing, or of another shape or
dtype, is refused by name, and so is a checkpoint without state.json or experiment.json,
or with one that is not JSON. Resume with the file as it was, or pass `--fresh` to start
over.

`sexpgpu evaluate` and `sexpgpu export` refuse a checkpoint the same way when the file's
parameters are not the checkpoint's: one that either lacks, or one of another shape or
dtype. The file may have been edited since the run, but not in what it declares; the
checkpoint's experiment.json holds the text its run compiled.)"},
    {"E-CKPT-007", "a checkpoint on storage whose files are not what its marker says",
     R"(A checkpoint at a storage location (`s3://`, `o41://`) is complete when its completion
marker, `step-NNNNNNNN.complete`, is there: written after every file, it names each
file with its size and ETag. Reading the checkpoint found a file missing, of another
size or of another ETag than the marker says (the file was replaced or removed after
the checkpoint was written, or the marker was copied without its files), or a marker
that is not one. The checkpoint is not used.

Remove the marker (the checkpoint is then no longer listed), or write the checkpoint
again; `LOC` alone means the newest complete one.)"},
    {"E-CKPT-008", "a checkpoint file whose bytes are not those written",
     R"(Every checkpoint holds manifest.json, written after its other files, which names each
file with its size and its XXH3-64 checksum, computed as the file was written. Every
command that reads a checkpoint (a resumed `run`, `evaluate`, `export`, `serve`, `eval`
and `repl` with `--checkpoint`) checks each file it reads against it, and refuses a
file that is missing, of another size or of another checksum: the disk, a copy or an
edit damaged it, and its weights or counters would be wrong in silence.

    error[E-CKPT-008]: runs/a/step-00000020/params.safetensors: its bytes are not those
                       written (checksum 5d0f..., written as 8f3a...); the checkpoint
                       is damaged, and is not read

A manifest.json that is not one is refused the same way. Use an older checkpoint of the
location (`LOC/step-N`), or remove the damaged one so that `LOC` means the newest whole
one; a run resumes from it.)"},
    {"W-CKPT-001", "a checkpoint that records no checksums",
     R"(The checkpoint has no manifest.json: an earlier version of SexpGPU wrote it, before
checkpoints recorded their files' checksums (E-CKPT-008). It is read as it is, so a
damaged file in it goes unnoticed; everything else is checked as for any checkpoint (a
missing tensor or counter is still E-CKPT-006). A run resumed from it writes its next
checkpoints with checksums.)"},
    {"E-LOC-001", "an s3:// or o41:// location not in its form",
     R"(A storage location is `s3://bucket/key` (the bucket 3 to 63 lower-case letters,
digits, `.` and `-`) or `o41://team/run`, optionally followed by `/file`. A key may not
hold an empty segment (`//`) or a `.` or `..` segment, so that it names one place
however it is joined. See docs/locations.md.)"},
    {"E-LOC-002", "an o41:// location without SEXPGPU_O41_ROOT",
     R"(`o41://team/run` is the path `team/run` under the root that the environment variable
`SEXPGPU_O41_ROOT` names: a local folder (`/srv/o41`, `file:///srv/o41`) or an S3 URL
(`s3://bucket/prefix`). The variable is not set, or names neither.

    export SEXPGPU_O41_ROOT=s3://my-bucket/o41)"},
    {"E-LOC-003", "the storage server refused access",
     R"(The S3-compatible server answered 403 (access denied, a wrong key, a signature it
does not accept), or no credentials are set. Credentials come from the standard
variables `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, for temporary ones,
`AWS_SESSION_TOKEN`; the region signed for from `AWS_REGION`. The message names the
URL, the HTTP status and the server's own error code and message (`SignatureDoesNotMatch`:
a wrong secret; `InvalidAccessKeyId`: a key the server does not know; `AccessDenied`: the
policy refuses); it never shows a secret.)"},
    {"E-LOC-004", "no such object or bucket on the storage server",
     R"(The S3-compatible server answered 404: the bucket, or the key in it, does not exist
(`NoSuchBucket`, `NoSuchKey`: the message names the server's code). Check the URL, and
`AWS_ENDPOINT_URL` (which server is asked).)"},
    {"E-LOC-005", "the storage server cannot be reached",
     R"(Connecting to the S3-compatible server failed, timed out or broke off, or the server
kept answering 5xx (or 429, slow down). Each request is tried five times with doubling
waits before this error. Check `AWS_ENDPOINT_URL` and that the server runs; a run that
stopped on this error resumes from its newest complete checkpoint when started again.)"},
    {"E-LOC-006", "an answer of the storage server that cannot be used",
     R"(The S3-compatible server answered something SexpGPU cannot use: an unexpected status
(400, 409, ...), an object shorter than the bytes asked of it (truncated while read), or
a malformed listing. The message names the URL and what the server said.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::io
