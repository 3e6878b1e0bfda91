// The texts of lang's diagnostic codes: E-READ (reading), E-EVAL and W-EVAL (evaluating), E-SHAPE (shapes and dtypes a
// builtin refuses). Codes are never reused: a retired code keeps its row and says so.
#include "lang/codes.h"

namespace sx::lang {
namespace {

constexpr graph::CodeInfo kCodes[] = {
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

The note shows the lambda list, and for a function of the program where it is defined
(a builtin's lambda list is its signature too; `(doc NAME)` shows it). Required
parameters must all be given, `&optional` ones may be, `&rest` takes any number more,
and `&key` parameters are given as `:name value` pairs. Pass what the parameters say, or
change the definition.)"},
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
help line lists the keywords the function takes; builtins are checked by their lambda
lists the same way, `(zeros [2] :dtyp :f32)` as `(linear 1 :bais false)`.)"},
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
    {"E-EVAL-020", "interrupted",
     R"(Ctrl-C was pressed in the REPL while an input was evaluating. The evaluation stops
at its next step and the REPL returns to its prompt; the session is intact: what the
input defined before it stopped stays defined, and the history keeps every input.

    sx> (defun spin (n) (if (= n 0) 0 (spin (- n 1))))
    sx> (spin 100000000)          ; Ctrl-C: error[E-EVAL-020]: interrupted
    sx>

A graph running on the cpu or reference device stops too, between two of its
operations, before it writes anything; one operation (a large matmul, say) runs to its
end first. Ctrl-C at the prompt clears the line being typed. Outside the REPL (`eval`, `run`, `check`) Ctrl-C ends the program, as usual.)"},
    {"E-EVAL-021", "a require outside the folders it may read",
     R"(A run file's requires stay under its folder: a relative path is resolved from the
file that requires it, and the file it names must lie under the folder of the run file
(the file given to the command; with none, for an expression given to `eval` or typed
in a REPL started without one, the current directory). A library module's stay under
its library folder. An absolute path, or one whose `..` leads out, is refused before
the file is looked at, so a file you were given cannot read (and show in its errors)
files elsewhere on the machine:

    ;; exp/run.sx
    (require "layers/blocks")        ; exp/layers/blocks.sx: fine
    (require "../shared/blocks")     ; outside exp/: refused
    (require "/home/me/blocks")      ; outside exp/: refused

The rule reads the path as written: links inside the folder are followed, wherever they
lead, so a layout you linked together keeps working. To allow more, name the folder:
`--allow-require FOLDER` (repeatable), or `SEXPGPU_ALLOW_REQUIRE=FOLDER:FOLDER`.)"},
    {"E-SHAPE-001", "shapes or dtypes that do not fit",
     R"(A tensor operation was given operands whose shapes, dtypes or attributes it
cannot take: a matrix product whose inner dimensions differ, shapes that do not
broadcast, an axis past the tensor's rank, a reshape to another number of elements.
Or a size too large: a tensor of 2^63 elements or bytes or more, or a size an
operation computes (a padded or joined length) past 2^63 - 1.

    (matmul (ones [2 3]) (ones [4 5]))   ; 3 and 4 differ
    (pad (ones [2]) [9223372036854775807] [0])   ; 2 + 2^63 - 1 elements

The message begins with the function called (`matmul`, or `+` for the graph's `add`)
and names the shapes it was given; the span points at the form that built it. Print
`(shape x)` of the operands to find which one is not what you meant.)"},
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

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::lang
