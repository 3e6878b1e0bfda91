/* The C API used from C: this file is compiled as C11 with -Wall -Wextra -Werror
 * -pedantic (CMakeLists.txt), so the header stays C-clean, and run by the tests. */
#include "from_c.h"

#include <sexpgpu.h>
#include <stdio.h>
#include <string.h>

static const char* code_of(sexpgpu_error* error) {
  static char code[32];
  snprintf(code, sizeof code, "%s", sexpgpu_error_code(error));
  sexpgpu_error_free(error);
  return code;
}

const char* run_once_from_c(const char* location, int batch, const void* input, size_t input_bytes, void* output,
                            size_t output_bytes) {
  sexpgpu_options options;
  sexpgpu_model* model = NULL;
  sexpgpu_tensor_info in, out;
  sexpgpu_error* error;
  sexpgpu_const_buffer inputs[1];
  sexpgpu_buffer outputs[1];

  sexpgpu_options_init(&options);
  options.batch = batch;
  error = sexpgpu_open(location, &options, &model);
  if (error) return code_of(error);
  if (sexpgpu_input_count(model) != 1 || sexpgpu_output_count(model) != 1) {
    sexpgpu_close(model);
    return "counts";
  }
  error = sexpgpu_input_info(model, 0, &in);
  if (!error) error = sexpgpu_output_info(model, 0, &out);
  if (error) {
    sexpgpu_close(model);
    return code_of(error);
  }
  if (in.byte_size != input_bytes || out.byte_size != output_bytes || strlen(in.dtype) == 0) {
    sexpgpu_close(model);
    return "sizes";
  }
  inputs[0].data = input;
  inputs[0].bytes = input_bytes;
  outputs[0].data = output;
  outputs[0].bytes = output_bytes;
  error = sexpgpu_run(model, inputs, 1, outputs, 1);
  sexpgpu_close(model);
  return error ? code_of(error) : "";
}
