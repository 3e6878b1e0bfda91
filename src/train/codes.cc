// The texts of train's diagnostic codes: E-RUN and W-RUN (the run file and its run), E-INFER (the model alone).
// Codes are never reused: a retired code keeps its row and says so.
#include "train/codes.h"

namespace sx::train {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-RUN-001", "a defrun setting that is unknown or of the wrong kind",
     R"(`defrun` takes keyword settings: :data :eval :batch :micro-batch :steps :seed :optimizer
:schedule :ema :precision :grad-clip :checkpoint-every :keep :log-every. The
message names the key it did not know, or the value it could not take: `:seed` is a
non-negative integer, `:optimizer` an `(adamw ...)` or `(sgd ...)`, `:schedule` a
`(constant)`, `(warmup-cosine ...)` or `(warmup-linear ...)`, `:grad-clip` a positive number
(the largest global norm of the gradients) and `:ema` a decay in [0, 1); `nil` is none
(no clipping, no EMA, the constant schedule).

    (defrun :optimizer :adamw)        ; a keyword, not an optimizer
    (defrun :optimizer (adamw :lr 3e-4) :grad-clip 1.0 :ema 0.999))"},
    {"E-RUN-002", "a second defrun", R"(A run file has one `defrun`. Merge the settings of the two into one.)"},
    {"E-RUN-003", "a --knob the file does not define",
     R"(`--knob NAME=VALUE` sets a knob the file defines with `(defknob NAME default "doc")`.
The file defines no knob of that name, or VALUE is not one value (a number, string,
keyword or vector, as the reader reads it). The help line lists the file's knobs.

Without a file (`eval` without `--file`, `repl` without FILE) there are no knobs, so
any `--knob` is refused rather than ignored.)"},
    {"E-RUN-004", "a --variant the file does not define",
     R"(`--variant NAME` chooses a `(defvariant NAME :knob value ...)` of the file, and the
file has none of that name. The help line lists its variants. Without a file (`eval`
without `--file`, `repl` without FILE) there are no variants, so `--variant` is refused.)"},
    {"E-RUN-005", "a run file without the model or the loss a run needs",
     R"(`sexpgpu run` trains the top-level `model` of the file on the scalar that
`(loss prediction prepared)` gives, so the file must define both:

    (defvar model (mlp 16 64 :out 4))
    (defun loss (prediction prepared) (cross-entropy prediction (getf prepared :targets)))

`prepare` is optional: without it the loader's batch is the prepared plist, and must
hold `:inputs`.)"},
    {"E-RUN-006", "a batch or prepared plist without the field asked for",
     R"(`(field batch :name)` reads a field of the loader's batch; the loader has no field
of that name (the help line lists those it has). And `prepare` must give a plist
holding `:inputs`, what the model is applied to: one tensor, or a list of them.

    (defun prepare (batch)
      (let ((ids (field batch :ids)))
        (list :inputs (slice ids [0 0] [8 64]) :targets (slice ids [0 1] [8 65]))))
)"},
    {"E-RUN-007", "a loss or metric that is not a scalar",
     R"(The loss must be a floating-point scalar tensor: its gradient is what trains the
model. A tensor of another shape is reduced first (`(mean x)`), an integer tensor cast
(`(cast x :f32)`). `(metric :name x)` and `(counter :name n)` log scalars too, each
under a name of its own: not one another metric or counter has, and not `:step`, `:loss`,
`:lr` or (with `:grad-clip`) `:grad-norm`, which every step logs itself.)"},
    {"E-RUN-008", "a run stopped: a non-finite loss, or a guard that failed",
     R"(A run stops at the first step whose loss is NaN or infinite, and where a
`(guard condition "message")` of the model or loss finds its condition false; the error
names the step. The checkpoints written before it are whole, and a run resumes from the
newest. A loss that diverges usually asks for a lower learning rate, a warmup, or
`:grad-clip`.)"},
    {"E-RUN-009", "a defrun without a setting a run needs",
     R"(A run needs `:data` (a loader), `:batch`, `:steps` (or `--steps`) and `:optimizer`:

    (defrun :data (text-windows "input.txt" :window 64) :batch 8 :steps 1000
            :optimizer (adamw :lr 3e-4))

Counts (`:batch`, `:micro-batch`, `:steps`, `:checkpoint-every`, `:keep`, `:log-every`) are whole
numbers above 0.)"},
    {"E-RUN-010", "an optimizer or group option out of range",
     R"(`sgd`, `adamw` and `group` check their options when they are called, as PyTorch's
optimizers do:

    :lr :weight-decay :eps    non-negative numbers
    :momentum                 a number in [0, 1)        (sgd)
    :betas                    [b1 b2], each in [0, 1)   (adamw)
    :groups                   a list of (group ...)
    (group SELECTOR ...)      a selector first: (select :tag :no-decay), (select :path "model.*.b")

    (adamw :lr -3e-4)                              ; a negative learning rate
    (adamw :betas 0.9)                             ; one number, not [0.9 0.999]
    (adamw :groups (list (select :tag :no-decay))) ; a selector, not a group

The message names the option and the value given. Defaults, as PyTorch's: sgd :lr 0.001
:momentum 0 :weight-decay 0; adamw :lr 0.001 :betas [0.9 0.999] :eps 1e-8
:weight-decay 0.01. See docs/optimizers.md.)"},
    {"E-RUN-011", "a learning-rate schedule option out of range",
     R"(`constant`, `warmup-cosine` and `warmup-linear` take `:warmup`, a number of steps (a
non-negative integer), and `warmup-cosine` `:min-lr`, `warmup-linear` `:end-lr`, learning rates
(non-negative numbers).

    (warmup-cosine :warmup 0.1)      ; a fraction, not a number of steps
    (warmup-linear :end-lr -1e-5)

`warmup-cosine` and `warmup-linear` end at the run's last step, so the run needs its total
steps: a run without `:steps` (or `--steps`) is refused with this code. See
docs/optimizers.md.)"},
    {"E-RUN-012", "a batch the workers cannot split",
     R"(A data-parallel run (docs/distributed.md) cuts each global batch (`:batch` rows) into
micro-batches of `:micro-batch` rows (without it, into the most parts, a power of two up to
8, that divide the batch), and gives each worker the same number of neighbouring
micro-batches, a power of two, so that the gradients add up in one tree whatever the
number of workers. The run is refused before its first step when `:micro-batch` does not
divide `:batch`, or the workers cannot share the micro-batches so:

    ; :batch 8, 8 micro-batches of 1 row
    mpirun -np 3 sexpgpu run run.sx     ; 8 micro-batches do not split among 3 workers
    mpirun -np 2 sexpgpu run run.sx     ; 4 each: runs

Run on a number of workers that leaves each 1, 2, 4, ... micro-batches, or set
`:micro-batch` (and `:batch`) so that it does.)"},
    {"E-RUN-013", "a worker of a data-parallel run is gone",
     R"(The workers of a data-parallel run exchange their gradients at every step. When one
stops (killed, out of memory, its machine gone) the others' exchange fails and they stop
with this code, naming the exchange; mpirun names the worker that stopped first. The
newest complete checkpoint is unharmed: run the same command again to resume from it,
with as many workers as before or another number that splits the batch.)"},
    {"E-RUN-014", "launched by mpirun, but MPI cannot start",
     R"(`sexpgpu run` finds itself launched by mpirun (or srun) from the environment
(OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK) and loads libsexpgpu-mpi.so, from beside the
program or from ../lib, which calls MPI. A sexpgpu built where MPI was not installed has no
such library; install Open MPI (scripts/setup does) and build again. The message names the
library and what the system's loader or MPI_Init said.)"},
    {"W-RUN-001", "an optimizer group no parameter joins",
     R"(A `(group SELECTOR ...)` of the optimizer matched no trainable parameter that an
earlier group had not taken, so its options apply to nothing. Usually a tag or path
misspelled (`:no-decay` against `:nodecay`), parameters that are frozen
(`:trainable false` joins no group), or an earlier group whose selector took them
first: a parameter joins the first group that matches it.

`sexpgpu explain FILE --select '(select :tag :no-decay)'` lists what a selector matches.)"},
    {"E-RUN-020", "a loader's arguments are not valid",
     R"(A loader's constructor was given options it cannot take.

    (text-windows "input.txt")                     ; no :window
    (text-windows "input.txt" :window 0)           ; a window is 1 token or more
    (token-windows "train.bin" :dtype :u8 :window 64)
    (jsonl "train.jsonl" :fields [])               ; no fields

`text-windows` and `token-windows` need `:window N`, a whole number from 1 to 2^30: a
record is N+1 tokens, the N inputs and, one token later, the N targets of a language
model. `token-windows` reads `:dtype` :u16 (the default), :u32 or :i32 tokens. `jsonl`
needs `:fields`, a vector of the keys each line gives, as keywords (or strings), each
once: `:fields [:x :y]`.)"},
    {"E-RUN-021", "a loader's file cannot be read",
     R"(The file a loader names does not exist, is a directory, or cannot be opened or read.
It is checked when the loader is made (so `sexpgpu check` reports it) and again when the
run opens it.

    (defrun :data (text-windows "data/input.txt" :window 64))
    ; error[E-RUN-021]: data/input.txt: the file does not exist

A relative path is relative to the folder of the run file that names it, not to the
directory the command runs in, as `:load`'s is. Loaders read any location: a path,
`file:///absolute/path`, `s3://bucket/key` or `o41://team/...` (see `docs/locations.md`);
an object on S3 is checked when the loader is made and downloaded into the local cache
when the run opens it, and its own errors keep their `E-LOC` codes (`E-LOC-004`: no such
object). Another scheme (`https://`) is refused by name. The message shows the path as it
was looked for.)"},
    {"E-RUN-022", "a text or token file that does not hold the windows asked for",
     R"(`text-windows` reads a file's bytes as tokens, and `token-windows` a file of
little-endian tokens of its `:dtype` (2 bytes each for :u16, 4 for :u32 and :i32). The
file is refused when:

- it is shorter than one record, `:window` + 1 tokens;
- its size is not a whole number of tokens (a u16 file of an odd number of bytes): it
  was cut short, or holds tokens of another size than `:dtype` says;
- a token is not an id from 0 to 2147483647 (a negative i32, or a u32 above that), which
  the message names with its position; the tokens reach the model as i32;
- it became shorter while the run read it.

Check how the file was written (numpy: `ids.astype(np.uint16).tofile("train.bin")` is
`:dtype :u16`), and give a `:window` the file can hold.)"},
    {"E-RUN-023", "a records file whose tensors are not records",
     R"(`records` reads a safetensors file as a table: each tensor is a field (named by the
tensor's name, so `(field batch :ids)` reads tensor `ids`), and each row of the tensors'
shared first axis is one record.

    ids     I32 [10000 128]
    labels  I64 [10000]           ; both 10000 rows: 10000 records

The file is refused when it holds no tensors, when a tensor is a scalar (it has no rows),
when two tensors have different first dimensions, when there are no rows, or when a
tensor's dtype is one no field holds (fields are F32, BF16, F64, I32, I64, BOOL, U8 and
U16; convert F16, I8, I16, U32, U64 and F8 tensors when writing the file). A file that
is not valid safetensors gets the E-LOAD code that says what is wrong with it.)"},
    {"E-RUN-024", "a jsonl line that does not give the fields",
     R"(`jsonl` reads one JSON object a line and takes the keys `:fields` names; each is a
number or an array of numbers of one fixed shape, the same in every line.

    {"x": [1, 2, 3], "y": 0}
    {"x": [4, 5, 6], "y": 1}

The message names the file, the line and the field when a line is not JSON, is not an
object, lacks a field, holds something other than numbers (a string, a boolean, null),
holds a ragged array (rows of different lengths), or a field's shape differs from its
shape in an earlier line; or when the file has no lines. Blank lines are skipped.

A field whose values are all integers is i32 (and refused when one does not fit in i32);
a field with any number written with a fraction or exponent (`1.0`, `3e9`) is f32.)"},
    {"E-INFER-001", "a model that cannot run alone",
     R"(Every checkpoint holds the model alone (model.json): `model` applied to the `:inputs`
that eval-prepare (else prepare) makes from one record, with the prediction's tensors as
its outputs, named by their paths through lists and plists. A prediction holding
anything else (a model, a function), or a model that reads random numbers, cannot run
alone: the run says so as it starts and trains as always, its checkpoints without a
model.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::train
