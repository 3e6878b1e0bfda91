// The texts of serve's diagnostic codes: E-SERVE (the server and its protocol).
// Codes are never reused: a retired code keeps its row and says so.
#include "serve/codes.h"

namespace sx::serve {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-SERVE-020", "an export folder that exists",
     R"(`sexpgpu export` writes a new folder and never replaces one: the folder given to `-o`
(or a file or link of that name) already exists.

    $ sexpgpu export run.sx --checkpoint runs/run -o /tmp/model
    error[E-SERVE-020]: /tmp/model: it exists; export writes a new folder

Give `-o` a name that is free, or remove the old export first. The check is made before
any work and again, atomically, when the finished folder is renamed into place, so a
folder that appears meanwhile is not replaced either.)"},
    {"E-SERVE-021", "an export that cannot be written",
     R"(`sexpgpu export` could not write its folder: its parent cannot be created, the disk
is full, a file cannot be written or flushed, or the finished folder cannot be renamed
into place. The message names the path and the system's reason.

The folder is written under a temporary name beside it (`.NAME.export-...`) and renamed
only when every file in it is complete and flushed to disk, so a failure, or a process
stopped midway, never leaves a half export under the name asked for; the next export to
that name removes what a stopped one left. Free space or choose a folder you can write,
then export again.)"},
    {"E-SERVE-001", "a checkpoint that holds no model",
     R"(`sexpgpu serve` runs the model a checkpoint holds as `model.json`, and this checkpoint
(or directory) has none. A run writes model.json into every checkpoint when its model
runs alone; a run whose model did not (E-INFER-001 as it started) or one written by an
earlier version has checkpoints without it.

`sexpgpu export FILE --checkpoint LOC/step-N -o DIR` compiles the run file and writes
the model beside the checkpoint's weights into DIR; serve DIR then. The message names
the run file the checkpoint records.)"},
    {"E-SERVE-002", "a model.json serve cannot read",
     R"(The model.json of the checkpoint or export directory is not a model this build reads:
not JSON, not the format `sexpgpu-model`, a field missing or of the wrong kind, a graph
that does not verify, or inputs, outputs and parameters that are not the graph's. The
message names the file and what is wrong.

A version newer than this build reads says so: upgrade sexpgpu. Anything else means the
file was damaged or not written by sexpgpu: write it again with `sexpgpu export`.)"},
    {"E-SERVE-003", "weights that do not fit the model",
     R"(A weight model.json lists is missing from params.safetensors (or ema.safetensors), or
is stored with another shape than the model reads. The model and its weights come from
one checkpoint, or one export directory: a file copied in from elsewhere does not fit.
The message names the file and the parameter's path.)"},
    {"E-SERVE-004", "a serve flag that does not fit the model",
     R"(A flag of `sexpgpu serve` asks for what this model does not have:

    --output aux        the model has no output `aux` (the message lists its outputs)
    --output x --output x   one output named twice
    --at                an output without a second axis, or outputs whose second axes differ
    --trained           on an export directory, which holds one set of weights
    --batch 0           a batch is from 1 to 256 calls

`sexpgpu serve --help` lists the flags; docs/serving.md says what each does.)"},
    {"E-SERVE-006", "a socket path serve cannot listen on",
     R"(`--socket PATH` names where the server listens. Refused:

    a socket another server answers on    stop that server, or choose another path
    a path holding a file or a folder     serve replaces only a socket, never a file
    a path over 107 bytes                 the system's limit for a socket's path

A socket a stopped server left behind (nothing answers on it) is replaced without
asking.)"},
    {"E-SERVE-007", "a call of the wrong length",
     R"(An answer, not a process error: a client sent a call frame whose length is not the
length of every input of one record, in the order the handshake lists them. The shapes
are fixed, so every call of a model has one length; the message says it and what each
input takes. The frame is refused before its bytes are read, and the connection is
closed, since the bytes that follow can no longer be told apart.)"},
    {"E-SERVE-008", "a call with a value serve refuses",
     R"(An answer, not a process error: a call's bytes have the right length but a value the
model cannot take: a bool byte other than 0 or 1; served with `--at`, an `at` outside
the outputs' second axis (from 0 to its length minus 1); or an index the model reads
outside its axis, a token id below 0 or at or past the vocabulary's size, which the
message names with the input and its place there:

    error[E-SERVE-008]: gather: index -1 at [0, 3] of input `inputs` is outside its axis, 0 to 255

No id is clamped or wrapped. Only that call gets the error: the other calls of its batch
get their answers, the bits they get alone. The connection stays open for the next
call.)"},
    {"E-SERVE-009", "the device cannot run the model",
     R"(Compiling the model for the device, batching it for `--batch`, or running a batch of
calls failed. At start it is a process error; during a call it is that call's answer
(each call of the batch gets it). The message carries the device's or the graph's
reason. Try `--batch 1`, or another `--device`; a device that cannot run a model the
reference device runs is a bug to report.)"},
    {"E-SERVE-010", "a model file that cannot be read",
     R"(The model.json of the checkpoint or export directory exists but cannot be read:
permission denied, a folder in its place, or a read error. The message names the file
and the system's reason.)"},
    {"E-SERVE-011", "a server that holds its most clients",
     R"(A first frame in place of the handshake, not a process error: the server already
holds as many clients as it serves at once, and closes this connection. The first frame
is then an error answer (the byte 1 and this text) rather than the handshake's JSON.

The most is 65,536 clients, or the process's open-file limit less 64 where that is lower
(`serve` raises its soft limit to the hard one as it starts; `ulimit -Hn` shows it).
Connect again once a client has left, or use fewer connections: one connection makes any
number of calls, one after another.)"},
    {"E-SERVE-012", "a call frame left unfinished",
     R"(An answer, not a process error: a client sent part of a frame (some of its 8-byte
length, or of the call after it) and then nothing more for 10 seconds. The server answers
this error and closes the connection, so that a client that stops mid-frame holds no
place a working client could have. Send each frame whole, and promptly; a connection
may stay idle for any time between frames.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::serve
