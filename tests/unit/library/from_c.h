// The C program of from_c.c, called from the tests.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Opens the model at `location` with `batch`, checks that it takes one input of `input_bytes`
// and gives one output of `output_bytes`, runs it on `input` into `output`, and closes
// it. Returns "" when all went well, else the code of the first error (static storage).
const char* run_once_from_c(const char* location, int batch, const void* input, size_t input_bytes, void* output,
                            size_t output_bytes);

#ifdef __cplusplus
}
#endif
