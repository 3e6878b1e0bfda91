// Every diagnostic code of the language core, with its long explanation.
// Codes are never reused: a retired code keeps its row and says so.
#include "lang/codes.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace sx::lang {
namespace {

constexpr CodeInfo kCodes[] = {
    {"E-READ-001", "unterminated list or vector",
     R"(A `(` or `[` was opened and the file ended before its closer.

    (defun area (w h)
      (* w h)          ; one `)` short: the `defun` is never closed

The error points at the innermost opener still open when the file ended. That is
where the reader gave up, not always where the `)` is missing: a `)` left out early
is only noticed at the end of the file. Add the missing `)` or `]`; an editor that
highlights matching brackets finds the right place fastest.)"},
    {"E-READ-002", "unterminated string",
     R"(A string started with `"` and the file ended before its closing `"`.

    (print "hello)
    (print "world")

Strings may span lines, so the reader only notices at the end of the file. Above, the
first string runs from `"hello` to the `"` before `world`, and the error points at the
last `"` of the file, which opened a string that never closes. When the error points
somewhere unexpected, look above it for a string that runs across lines by mistake.

Close the string; write a `"` inside a string as `\"`.)"},
    {"E-READ-003", "unbalanced closer",
     R"(A `)` or `]` appeared with nothing open, or closed the other kind of bracket.

    (+ 1 2))           ; one `)` too many
    [1 2)              ; a vector closed by `)`

Lists close with `)`, vectors with `]`; when the kinds differ the message says where
the opener is. Remove the extra closer or make the pair match.)"},
    {"E-READ-004", "bad number",
     R"(A token starts like a number but is not one, or does not fit.

    1.2.3   12abc   2nd-layer   99999999999999999999   1e400

A token that starts with a digit (or a sign or `.` followed by a digit) is read as a
number, so a name may not start with a digit: write `layer-2` instead of `2nd-layer`.
Integers are signed 64-bit, from -9223372036854775808 to 9223372036854775807; write
larger values as floats (`1e20`). Floats are doubles, written `1.5`, `-0.5`, `.5`,
`3e-4` or `1E10`; the infinities and NaN are `+inf.0`, `-inf.0` and `+nan.0`.)"},
    {"E-READ-005", "bad escape in a string",
     R"(A backslash in a string is followed by a character that is not an escape.

    (print "C:\temp\data")    ; `\t` is a tab, and `\d` is no escape at all

The escapes are `\n` (newline), `\t` (tab), `\r` (carriage return), `\0`, `\\` (one
backslash), `\"` (a double quote) and `\u{1F600}` (a Unicode code point, 1 to 6
hexadecimal digits inside braces, up to 10FFFF; the surrogates D800 to DFFF are no
characters, so a character past FFFF is one escape, not a UTF-16 pair). Write `\\` for
a backslash itself: "C:\\temp\\data".)"},
    {"E-READ-006", "bad character",
     R"(A character that cannot start or continue any form: a control character, one of
`{ } \ #` outside a string or comment, or a `:` that does not begin a keyword.

    (defvar config {:lr 0.1})    ; no `{ }` maps: use a plist, (list :lr 0.1)
    (list #t #f)                 ; the booleans are `true` and `false`
    (list : 1)                   ; a keyword needs a name: `:dtype`

Remove the character, or put it inside a string or a comment.)"},
    {"E-READ-007", "nesting too deep",
     R"(Lists and vectors are nested deeper than the reader allows (1000 levels).

No program written by hand nests this deep; the file is probably generated or
damaged. Build deep structures with functions at run time instead of writing
them out.)"},
    {"E-READ-008", "invalid UTF-8",
     R"(Source files are UTF-8. The byte at the position shown does not begin or continue
a valid UTF-8 sequence; the message gives its value and byte offset.

This usually means the file was saved in another encoding: `café` in Latin-1 is the
byte 0xE9 where UTF-8 has two. Convert the file, for example with
`iconv -f latin1 -t utf-8 old.sx > new.sx`, or retype the character.)"},
    {"E-READ-009", "source too large",
     R"(The file is larger than 64 MiB, or one of its lines is longer than 1 MiB.

A run file describes an experiment; numbers in bulk (weights, data sets, token lists)
belong in the files its loaders read, not in the source. Move the data into a file
and load it.)"},
    {"E-READ-010", "cannot read the file",
     R"(The file named could not be read: it does not exist, is a directory, or cannot be
opened. The message names the path as it was given and the reason.

    sexpgpu check does-not-exist.sx

A path on the command line is relative to the current directory. Check the spelling
and the directory you are in.)"},
    {"E-READ-011", "a quote with nothing after it",
     R"(`'`, a backquote, `,` or `,@` must be followed by the form it applies to.

    (list 'a ')       ; the second quote quotes nothing

Put the form right after the quote (`'b`), or remove the quote.)"},

    {"E-EVAL-001", "unbound name",
     R"(A name was evaluated that is not defined in any enclosing scope, at the top level
of the file, or among the builtins.

    (defun weight (mass) (* mass gravity))   ; `gravity` is not defined

Define it with `defvar` or `defun`, bind it with `let` or as a parameter, or `require`
the module that defines it. Names are defined in order: a top-level form sees only what
the forms before it defined (a function body sees what exists when it is called). When
a similar name exists the help line suggests it; check for a typo first. When a module
of the standard library defines the name, the help line says which to require:

    (mean x)   ; help: the standard library defines `mean`: (require "sexpgpu/ops"))"},
    {"E-EVAL-002", "not a function",
     R"(The first element of a list being evaluated is not a function.

    (1 2 3)              ; a list whose head is the number 1
    (defvar act "relu")
    (act 1.0)            ; `act` holds a string, not a function

A list form calls its head. If the list is data, quote it, '(1 2 3), or build it,
(list 1 2 3). If the head is a name, check what it is bound to: a function has to be
defined with `defun` or made with `lambda`.)"},
    {"E-EVAL-003", "wrong number of arguments",
     R"(A function or macro was called with fewer arguments than it requires, or more than
it takes.

    (defun add (x y) (+ x y))
    (add 1)              ; `add` takes 2 arguments, given 1
    (sqrt 4 9)           ; `sqrt` takes 1 argument, given 2

For a function of the program, the note shows where it is defined and its lambda list:
required parameters must all be given, `&optional` ones may be, `&rest` takes any
number more, and `&key` parameters are given as `:name value` pairs. Pass what the
parameters say, or change the definition.)"},
    {"E-EVAL-004", "wrong argument type",
     R"(A builtin received an argument of a type it does not accept.

    (+ 1 "2")            ; argument 2 of `+` must be a number, not a string

The message names the function, the argument's position, what was expected and the
value given; the caret points at the argument. Convert the value first, or find where
the wrong value came from: the notes list the calls that led here.)"},
    {"E-EVAL-005", "bad lambda list",
     R"(A lambda list (the parameters of `lambda`, `defun` or `defmacro`) is malformed:
a parameter that is not a name, a name given twice, `&optional`, `&rest` or `&key`
out of order or repeated, `&rest` without a name, an unknown `&` marker, or a default
that is not `(name default)`.

    (defun f (x y x) x)                    ; `x` twice
    (defun f (x &key (y 1) &optional z) x) ; &optional after &key
    (defun f ((x 1)) x)                    ; a required parameter has no default

The order is: required names, then `&optional` names or `(name default)`, then
`&rest name`, then `&key` names or `(name default)`.)"},
    {"E-EVAL-006", "unknown keyword argument",
     R"(A call passed a keyword argument the function does not declare, passed one twice,
or passed something else where a keyword was expected.

    (defun linear (x &key (bias true)) (list x bias))
    (linear 1 :bais false)     ; misspelled keyword
    (linear 1 false)           ; a value where a keyword belongs
    (linear 1 :bias 1 :bias 2) ; given twice

After the positional arguments, a function with `&key` takes `:name value` pairs. The
help line lists the keywords the function takes.)"},
    {"E-EVAL-007", "missing keyword argument value",
     R"(A keyword argument was given without a value after it.

    (linear 1 :bias)

Each keyword is followed by its value: `(linear 1 :bias false)`.)"},
    {"E-EVAL-008", "recursion too deep",
     R"(Function calls nested deeper than the evaluator allows (10000 calls), usually a
recursion that never reaches its base case.

    (defun countdown (n) (countdown (- n 1)))   ; no base case

The notes show the innermost and the outermost calls. Check the base case, and that
each call moves towards it: (if (= n 0) 0 (countdown (- n 1))). For long iterations
use `fold`, `map` or `range`, which do not nest.)"},
    {"E-EVAL-009", "integer overflow",
     R"(An integer operation's exact result does not fit in a signed 64-bit integer.

    (* 4294967296 4294967296)    ; 2^64

Integers never wrap around silently. Use floats (`4294967296.0`) for values this large,
or check the computation that produced them.)"},
    {"E-EVAL-010", "error raised by the program",
     R"(The program called `(error "message" values...)`: the message is the program's own,
followed by the values printed.

    (when (<= lr 0) (error "the learning rate must be positive, got" lr))

The caret shows the `error` call and the notes the calls that led to it. Read the
message: it says what the program's author expected.)"},
    {"E-EVAL-011", "malformed special form",
     R"(A special form (`if`, `let`, `defun`, `cond`, `require`, ...) was written with the
wrong shape: too few or too many parts, a binding that is not `(name value)`, a name
that is not a symbol, a `,` outside a backquote.

    (let (x 1) x)        ; bindings are a list of (name value): (let ((x 1)) x)
    (if test)            ; `if` needs a test and a then-branch
    (list ,x)            ; `,` only means something inside a backquote

The help line shows the shape the form expects.)"},
    {"E-EVAL-012", "module not found",
     R"(`require` could not find the module or file it names, or a name listed in `:only`
is not defined by the module.

    (require "modules/mathh")                  ; no file modules/mathh.sx
    (require "sexpgpu/nn" :only (linerar))     ; nn defines no `linerar`

`"sexpgpu/nn"` names a module of the standard library (lib/sexpgpu/nn.sx); any other
string is a path relative to the file that requires it, with `.sx` added when it has
no extension. Check the spelling and where the file is.)"},
    {"E-EVAL-013", "require cycle",
     R"(Modules require each other in a cycle, so none of them can finish loading first.

    ; a.sx                   ; b.sx
    (require "b")            (require "a")

The message lists the cycle. Move what the modules share into a third module that
both require and that requires neither.)"},
    {"E-EVAL-014", "division by zero",
     R"(An integer was divided by zero with `/`, `quot`, `rem` or `mod`.

    (/ 10 0)

Check the divisor before dividing. Float division by zero follows IEEE 754 and gives an
infinity or NaN instead of an error: (/ 1.0 0) is +inf.0.)"},
    {"E-EVAL-015", "index out of range",
     R"(An index given to `nth`, `slice` or a string function is negative or past the end.

    (nth 3 (list 784 128 10))    ; indices run from 0 to 2

Indices start at 0, so the last element of a sequence of length n is at n - 1. The
message gives the index and the length.)"},
    {"E-EVAL-016", "reserved name",
     R"(The name belongs to a special form of the language (`if`, `let`, `defmodel`, ...):
it cannot be defined or bound, and it is not a value. Some special forms are reserved
for parts of SexpGPU not available in this build.

    (defun if (x) x)     ; `if` cannot be redefined
    (defvar f if)        ; `if` is not a value

Choose another name. To pass a special form's behaviour around, wrap it in a lambda.)"},
    {"E-EVAL-017", "evaluation limit reached",
     R"(Evaluation took more steps than the limit set for it (`--max-steps N`).

    sexpgpu check --max-steps 100 run.sx

The limit exists so that tools evaluating untrusted files can stop a file that loops.
If the work is meant, raise the limit or remove it; otherwise look for the loop in the
calls the notes show.)"},
    {"E-EVAL-018", "a require would replace a name",
     R"(`require` imports a module's names, and never replaces one the file already has: a
name brought in by an earlier `require`, or defined in the file before it, bound to
something else.

    (require "sexpgpu/nn")
    (require "modules/norms")      ; also defines `layer-norm`: which one would
    (layer-norm 4)                 ; this call mean?

One name means one thing in a file, so the later `require` is refused before it
imports anything, naming both modules. Require only one of them, or list what you use
of one with `:only`, leaving the name out:

    (require "sexpgpu/nn")
    (require "modules/norms" :only (group-norm))

Requiring one module twice, or the same definition through two modules (a module
that re-exports another's names), replaces nothing and is fine. A `defun` or `defvar`
after a `require` may replace an imported name on purpose: that is only a warning,
W-EVAL-002.)"},

    {"E-EVAL-019", "a bool tensor used as a truth value",
     R"(`if`, `when`, `unless`, `cond`, `and` and `or` decide on a value while the file is
evaluated, once; a tensor's elements are only known when it runs, and a graph has no
branch. So a comparison of tensors is never true or false (any other tensor is a value
like any other, and true: `(if weight ...)` asks whether an argument was given):

    (if (< x 0) (- x) x)        ; error[E-EVAL-019]
    (where (< x 0) (- x) x)     ; elementwise: the graph computes both and chooses

To branch on a value you have (a scalar in `eval` or the REPL), read it first:
`(if (< (item x) 0) ...)`.)"},
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
    {"W-PARAM-001", "a model never bound to a name",
     R"(A sub-model was created inside a constructor without a `let` binding or `named`,
so its parameters get the segment `anon.N`. Paths are what selectors match and what
checkpoints store; an `anon.N` changes when the code around it changes. Bind the model
with `let`, or name it.)"},
    {"E-RUN-001", "a defrun setting that is unknown or of the wrong kind",
     R"(`defrun` takes keyword settings: :data :eval :batch :steps :seed :optimizer
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
under a name of its own.)"},
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

Counts (`:batch`, `:steps`, `:checkpoint-every`, `:keep`, `:log-every`) are whole
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
directory the command runs in, as `:load`'s is. Loaders read local files (a path, or
`file:///absolute/path`); an `s3://` or other location is refused by name: copy the data
beside the run file. The message shows the path as it was looked for.)"},
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

    {"E-INFER-001", "a model that cannot run alone",
     R"(Every checkpoint holds the model alone (model.json): `model` applied to the `:inputs`
that eval-prepare (else prepare) makes from one record, with the prediction's tensors as
its outputs, named by their paths through lists and plists. A prediction holding
anything else (a model, a function), or a model that reads random numbers, cannot run
alone: the run says so as it starts and trains as always, its checkpoints without a
model.)"},
    {"E-CKPT-005", "a checkpoint location that holds another run",
     R"(`sexpgpu run` resumes from the newest checkpoint of its location, and that location
holds the checkpoints of another run file (or variant): their slugs differ. Name
another `--checkpoint-dir`, or pass `--fresh` to start over in a location of its own
(the given one with `-2`, `-3`, ... after it).)"},
    {"E-CKPT-006", "a checkpoint that does not fit the run file",
     R"(The newest checkpoint of the location does not fit the run: a parameter trainable
in one and frozen in the other, a tensor of another shape, or a file that is not what
a checkpoint holds. Resume with the file as it was, or pass `--fresh` to start over.

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
URL and the server's own error code; it never shows a secret.)"},
    {"E-LOC-004", "no such object or bucket on the storage server",
     R"(The S3-compatible server answered 404: the bucket, or the key in it, does not exist.
Check the URL, and `AWS_ENDPOINT_URL` (which server is asked).)"},
    {"E-LOC-005", "the storage server cannot be reached",
     R"(Connecting to the S3-compatible server failed, timed out or broke off, or the server
kept answering 5xx (or 429, slow down). Each request is tried five times with doubling
waits before this error. Check `AWS_ENDPOINT_URL` and that the server runs; a run that
stopped on this error resumes from its newest complete checkpoint when started again.)"},
    {"E-LOC-006", "an answer of the storage server that cannot be used",
     R"(The S3-compatible server answered something SexpGPU cannot use: an unexpected status
(400, 409, ...), an object shorter than the bytes asked of it (truncated while read), or
a malformed listing. The message names the URL and what the server said.)"},

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
model cannot take: a bool byte other than 0 or 1, or, served with `--at`, an `at`
outside the outputs' second axis (from 0 to its length minus 1). The connection stays
open for the next call.)"},
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

    {"E-SHAPE-001", "shapes or dtypes that do not fit",
     R"(A tensor operation was given operands whose shapes, dtypes or attributes it
cannot take: a matrix product whose inner dimensions differ, shapes that do not
broadcast, an axis past the tensor's rank, a reshape to another number of elements.

    (matmul (ones [2 3]) (ones [4 5]))   ; 3 and 4 differ

The message begins with the function called (`matmul`, or `+` for the graph's `add`)
and names the shapes it was given; the span points at the form that built it. Print
`(shape x)` of the operands to find which one is not what you meant.)"},

    {"E-DEVICE-001", "device not available",
     R"(The device named by `--device` or SEXPGPU_DEVICE cannot be made in this build or on
this machine: `cuda` in a build without the CUDA toolkit, `metal` anywhere but macOS,
or a name that is not a device. SexpGPU never falls back to another device in silence.

Use one the message lists (`reference` always exists), or rebuild with what the
device needs.)"},
    {"E-DEVICE-002", "not enough memory (retired: now E-MEM-001)",
     R"(Retired. A graph whose buffers did not fit in the machine's memory was reported with
this code; since the memory limit (`--max-memory`, SEXPGPU_MAX_MEMORY) every request
over it, and every allocation the machine refuses, is E-MEM-001.)"},
    {"E-DEVICE-003", "a core count that is not a whole number",
     R"(`--cpu-cores` (or the SEXPGPU_CPU_CORES variable, read when the flag is absent) says
how many host cores the `cpu` device may use. It is a whole number written in decimal
digits alone:

    --cpu-cores 0        all cores (the default)
    --cpu-cores 4        at most four
    --cpu-cores 1000     all cores, on a host with fewer than 1000

A count above the host's cores, however large, means all of them. A sign, a
fraction, spaces or an empty value are refused, naming the flag or the variable and
the value, rather than read as some other number.)"},

    {"E-MEM-001", "a request over the memory limit",
     R"(A form asked for more memory than the memory limit allows, and was refused before
anything was allocated. The message names the request (a tensor's shape and dtype, a
list's items, a string, the buffers of a program the device compiled), the bytes it
needs and the limit; the span points at the form that asked.

    (zeros [1000000 1000000])       ; a 4 TB tensor
    (range 100000000)               ; a list of a hundred million items

The limit is `--max-memory SIZE` (8G, 512M, 64K, or bytes), else the SEXPGPU_MAX_MEMORY
variable, else 3/4 of the machine's memory (or of its cgroup's limit, when that is
lower). It bounds each request, not the sum of everything alive at once. Ask for less,
or raise the limit when the machine has the memory.

The same code reports an allocation the machine refused although the limit allowed
it ("ran out of memory"): lower the limit to what the machine can give, so that a
request too large is refused by name. docs/limits.md lists every limit.)"},

    {"W-EVAL-001", "a definition shadows a builtin",
     R"(A top-level `defvar`, `defun` or `defmacro` defines a name that is also a builtin.

    (defun list (x) x)   ; every `(list ...)` in this file now calls this

The file's definition wins inside that file, which is allowed but easy to do by
accident. Rename the definition unless replacing the builtin is meant.)"},
    {"W-EVAL-002", "a name is defined twice",
     R"(A top-level name is defined a second time in the same file, or a definition
replaces one brought in by `require`.

    (defvar lr 0.1)
    (defvar lr 0.01)     ; replaces the first

The later definition wins from there on. Remove one, or rename it. The other way
round, a `require` that would replace a name the file already has, is an error:
E-EVAL-018.)"},
};

bool same_code(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::span<const CodeInfo> all_codes() { return kCodes; }

const CodeInfo* find_code(std::string_view code) {
  for (const auto& info : kCodes) {
    if (same_code(info.code, code)) return &info;
  }
  return nullptr;
}

}  // namespace sx::lang
