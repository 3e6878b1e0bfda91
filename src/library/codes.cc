// The texts of the library's diagnostic codes: E-API (the C API, include/sexpgpu.h).
// The library also answers with serve's codes (E-SERVE, E-CKPT, E-LOAD, E-DEVICE, ...)
// where a failure is one `sexpgpu serve` has too. Codes are never reused: a retired code
// keeps its row and says so.
#include "library/codes.h"

namespace sx::library {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-API-001", "a null or closed model, or a null pointer",
     R"(A function of libsexpgpu (include/sexpgpu.h) was given a model that is NULL, or one
already closed by sexpgpu_close, or NULL where it needs a pointer (the location, the
place for the model, an info to fill, a buffer's data):

    error[E-API-001]: sexpgpu_run: the model is closed (or was never opened)

Pass the model sexpgpu_open gave, before sexpgpu_close. A call already running when
another thread closes the model finishes; calls after it get this error, never a crash.)"},
    {"E-API-002", "a call whose inputs or outputs do not fit the model",
     R"(sexpgpu_run takes one buffer per input and one per output, in the order
sexpgpu_input_info and sexpgpu_output_info list them, each exactly its `byte_size` bytes.
This call gave another number of buffers, or a buffer of another size; the message names
which, with the model's own:

    error[E-API-002]: sexpgpu_run: input 0 (`inputs` [1, 8] i32) takes 32 bytes; its buffer has 16

sexpgpu_input_info and sexpgpu_output_info also refuse an index outside the model's
inputs or outputs with this code. Nothing was run and no output written.)"},
    {"E-API-003", "options this library cannot read",
     R"(sexpgpu_open reads its options by their `size` field, which says which version of
sexpgpu_options the caller was built with: fill the struct with sexpgpu_options_init
before setting its fields. This size is smaller than any version of the struct (the
struct was not initialized), or larger than this library's with a field it does not know
set (a program built with a newer header than the library it runs with: install the
newer library).)"},
    {"E-API-004", "a model with an input or output of more than 8 axes",
     R"(sexpgpu_tensor_info gives each input and output up to 8 axes (SEXPGPU_MAX_RANK), and
this model has one with more, so the library refuses it at sexpgpu_open; the message
names it. `sexpgpu serve` serves such a model: call it over the socket, or reshape that
tensor in the model to 8 axes or fewer.)"},
    {"E-API-005", "a failure the library did not foresee",
     R"(Something failed inside libsexpgpu that has no code of its own: a bug. The message
says what failed. Please report it with the model and the calls that led to it.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::library
