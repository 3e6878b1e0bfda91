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

    (defun f (x)
      (+ x 1)          ; one `)` short

The error points at the opener that was never closed. Add the missing `)` or `]`;
an editor that highlights matching brackets finds it fastest.)"},
    {"E-READ-002", "unterminated string",
     R"(A string literal started with `"` and the file ended before the closing `"`.

    (print "hello)

Strings may span lines, so the reader only notices at the end of the file; the
error points at the opening quote. Close the string, or escape a `"` inside it as `\"`.)"},
    {"E-READ-003", "unbalanced closer",
     R"(A `)` or `]` appeared with nothing open, or closed the other kind of bracket.

    (+ 1 2))           ; one `)` too many
    [1 2)              ; a vector closed by `)`

Lists close with `)`, vectors with `]`. Remove the extra closer or fix the pair.)"},
    {"E-READ-004", "bad number",
     R"(A token starts like a number but is not one, or an integer does not fit in 64 bits.

    1.2.3   12abc   99999999999999999999

Integers are 64-bit signed; floats are written `1.5`, `3e-4` or `.5`. A name may not
start with a digit.)"},
    {"E-READ-005", "bad escape in a string",
     R"(A backslash in a string literal is followed by a character that is not an escape.

The escapes are `\n` (newline), `\t` (tab), `\r`, `\0`, `\\`, `\"` and `\u{1F600}`
(a Unicode code point in hexadecimal). Write `\\` for a backslash itself.)"},
    {"E-READ-006", "bad character",
     R"(A character that cannot start or continue any form: a control character, or one
of `{ } \ #` outside a string or comment, or a `:` with no keyword name after it.

Remove it, or put it inside a string.)"},
    {"E-READ-007", "nesting too deep",
     R"(Lists and vectors are nested deeper than the reader allows (1000 levels).

No real program nests this deep; the file is probably generated or corrupted. Build
deep structures with functions instead of writing them out.)"},
    {"E-READ-008", "invalid UTF-8",
     R"(Source files are UTF-8. The byte at the position shown does not begin or continue
a valid UTF-8 sequence.

Convert the file to UTF-8 (`iconv -f latin1 -t utf-8`, for example).)"},
    {"E-READ-009", "source too large",
     R"(The file is larger than 64 MiB, or one of its lines is longer than 1 MiB.

A run file describes an experiment; data belongs in the files its loaders read, not
in the source.)"},
    {"E-READ-010", "cannot read the file",
     R"(The file named could not be read: it does not exist, is a directory, or cannot be
opened. The message names the path as it was resolved.)"},
    {"E-READ-011", "a quote with nothing after it",
     R"(`'`, a backquote, `,` or `,@` must be followed by the form it applies to.

    (list 'a ')       ; the second quote quotes nothing)"},

    {"E-EVAL-001", "unbound name",
     R"(A name was evaluated that is not defined in any enclosing scope, in the file's top
level, or among the builtins.

    (defun area (r) (* pi r r))   ; `pi` is not defined

Define it with `defvar` or `defun`, bind it with `let`, or `require` the module that
defines it. When a similar name exists the help line suggests it.)"},
    {"E-EVAL-002", "not a function",
     R"(The first element of a list being evaluated is not a function.

    (1 2 3)          ; to make a list, write (list 1 2 3) or '(1 2 3)

A list form calls its head. Quote the list if it is data.)"},
    {"E-EVAL-003", "wrong number of arguments",
     R"(A function was called with fewer arguments than it requires, or more than it takes.

    (defun f (x y) (+ x y))
    (f 1)

The note shows where the function is defined; its lambda list says what it takes.)"},
    {"E-EVAL-004", "wrong argument type",
     R"(A builtin received an argument of a type it does not accept.

    (+ 1 "2")

The message names the argument, what was expected and what was given.)"},
    {"E-EVAL-005", "bad lambda list",
     R"(A lambda list (the parameters of `lambda`, `defun` or `defmacro`) is malformed:
a parameter that is not a symbol, a name given twice, `&optional`, `&rest` or `&key`
out of order or repeated, `&rest` without a name, or a default that is not
`(name default)`.

The order is: required names, then `&optional`, then `&rest name`, then `&key`.)"},
    {"E-EVAL-006", "unknown keyword argument",
     R"(A call passed a keyword argument the function does not declare, passed one twice,
or passed a non-keyword where a keyword was expected.

    (defun f (x &key (y 2)) (+ x y))
    (f 1 :z 3)

The help line lists the keywords the function takes.)"},
    {"E-EVAL-007", "missing keyword argument value",
     R"(A keyword argument was given without a value after it.

    (f 1 :y)

Each keyword is followed by its value: `(f 1 :y 5)`.)"},
    {"E-EVAL-008", "recursion too deep",
     R"(Function calls nested deeper than the evaluator allows (10000 calls), usually a
recursion without a base case.

    (defun f (x) (f x))

The notes show the innermost and outermost calls. Check the base case; for long
iterations use `fold`, `map` or `range`, which do not nest.)"},
    {"E-EVAL-009", "integer overflow",
     R"(An integer operation's exact result does not fit in a signed 64-bit integer.
Integers never wrap around silently. Use floats (`1.0`) for values this large.)"},
    {"E-EVAL-010", "error raised by the program",
     R"(The program called `(error "message" values...)`. The message is the program's own;
the span shows the `error` call and the notes the calls that led to it.)"},
    {"E-EVAL-011", "malformed special form",
     R"(A special form (`if`, `let`, `defun`, `cond`, ...) was written with the wrong shape:
too few parts, a binding that is not `(name value)`, a name that is not a symbol.

    (let (x 1) x)        ; bindings are a list of (name value): (let ((x 1)) x)

The message says what the form expects.)"},
    {"E-EVAL-012", "module not found",
     R"(`require` could not find the module or file it names, or a name listed in `:only`
is not defined by the module.

`"sexpgpu/nn"` names a module of the standard library; any other string is a file
path relative to the requiring file, with `.sx` added when it has no extension.)"},
    {"E-EVAL-013", "require cycle",
     R"(Modules require each other in a cycle, so none of them can finish loading first.
The message lists the cycle. Move the shared definitions into a third module.)"},
    {"E-EVAL-014", "division by zero",
     R"(An integer was divided by zero with `/`, `quot`, `rem` or `mod`. Float division by
zero follows IEEE 754 and gives an infinity or NaN instead.)"},
    {"E-EVAL-015", "index out of range",
     R"(An index given to `nth`, `slice` of a list or vector, or a string function is
negative or past the end. The message gives the index and the length.)"},
    {"E-EVAL-016", "reserved name",
     R"(The name belongs to a special form of the language (`if`, `let`, `defmodel`, ...)
and cannot be defined or bound, or the special form is not available in this build.)"},
    {"E-EVAL-017", "evaluation limit reached",
     R"(Evaluation took more steps than the limit set for it (`--max-steps`). The limit
exists so that tools evaluating untrusted files can stop; raise it or remove it.)"},

    {"W-EVAL-001", "a definition shadows a builtin",
     R"(A top-level `defvar`, `defun` or `defmacro` defines a name that is also a builtin.
The file's definition wins inside that file, which is allowed but easy to do by
accident. Rename the definition unless the shadowing is meant.)"},
    {"W-EVAL-002", "a name is defined twice",
     R"(A top-level name is defined a second time in the same file, or a definition
replaces one brought in by `require`. The later definition wins. Remove one, or
rename it.)"},
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
