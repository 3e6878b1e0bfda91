/* The program of library_test.py, built outside the project's build against an installed
 * prefix, with `cc library_program.c $(pkg-config --cflags --libs sexpgpu)` alone:
 *
 *   library_program LOCATION INPUTS OUTPUTS MISSING
 *
 * lists LOCATION's inputs and outputs ("input NAME DTYPE SHAPE BYTES"), runs it once on
 * the bytes of the file INPUTS (every input in order), writes every output's bytes in
 * order to OUTPUTS, then prints the code of each error it provokes: a call with an input
 * too many ("count E-..."), a call on the closed model ("closed E-..."), and opening the
 * location MISSING ("missing E-..."). An unexpected failure exits 1. */
#include <sexpgpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOST 16

static int failed(sexpgpu_error* error, const char* doing) {
  fprintf(stderr, "%s: error[%s]: %s\n", doing, sexpgpu_error_code(error), sexpgpu_error_message(error));
  sexpgpu_error_free(error);
  return 1;
}

static void print_code(const char* label, sexpgpu_error* error) {
  printf("%s %s\n", label, error ? sexpgpu_error_code(error) : "none");
  sexpgpu_error_free(error);
}

static void print_info(const char* side, const sexpgpu_tensor_info* info) {
  int axis;
  printf("%s %s %s [", side, info->name, info->dtype);
  for (axis = 0; axis < info->rank; ++axis) printf("%s%lld", axis ? ", " : "", (long long)info->shape[axis]);
  printf("] %zu\n", info->byte_size);
}

int main(int argc, char** argv) {
  static unsigned char in_data[1 << 20], out_data[1 << 22];
  sexpgpu_const_buffer ins[MOST + 1];
  sexpgpu_buffer outs[MOST];
  sexpgpu_tensor_info info;
  sexpgpu_model *model, *missing;
  sexpgpu_error* error;
  size_t in_bytes = 0, out_bytes = 0;
  int i, in_count, out_count;
  FILE* file;

  if (argc != 5) {
    fprintf(stderr, "usage: %s LOCATION INPUTS OUTPUTS MISSING\n", argv[0]);
    return 2;
  }
  printf("version %s %s\n", sexpgpu_version(), SEXPGPU_VERSION);
  if ((error = sexpgpu_open(argv[1], NULL, &model))) return failed(error, "open");
  in_count = sexpgpu_input_count(model);
  out_count = sexpgpu_output_count(model);
  if (in_count > MOST || out_count > MOST) return 1;
  for (i = 0; i < in_count; ++i) {
    if ((error = sexpgpu_input_info(model, i, &info))) return failed(error, "input_info");
    print_info("input", &info);
    ins[i].data = in_data + in_bytes;
    ins[i].bytes = info.byte_size;
    in_bytes += info.byte_size;
  }
  for (i = 0; i < out_count; ++i) {
    if ((error = sexpgpu_output_info(model, i, &info))) return failed(error, "output_info");
    print_info("output", &info);
    outs[i].data = out_data + out_bytes;
    outs[i].bytes = info.byte_size;
    out_bytes += info.byte_size;
  }
  if (in_bytes > sizeof in_data || out_bytes > sizeof out_data) return 1;
  if (!(file = fopen(argv[2], "rb")) || fread(in_data, 1, in_bytes, file) != in_bytes) return 1;
  fclose(file);

  if ((error = sexpgpu_run(model, ins, (size_t)in_count, outs, (size_t)out_count))) return failed(error, "run");
  if (!(file = fopen(argv[3], "wb")) || fwrite(out_data, 1, out_bytes, file) != out_bytes) return 1;
  fclose(file);

  ins[in_count] = ins[0];
  print_code("count", sexpgpu_run(model, ins, (size_t)in_count + 1, outs, (size_t)out_count));
  sexpgpu_close(model);
  print_code("closed", sexpgpu_run(model, ins, (size_t)in_count, outs, (size_t)out_count));
  print_code("missing", sexpgpu_open(argv[4], NULL, &missing));
  return 0;
}
