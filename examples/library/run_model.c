/* run_model: a SexpGPU model run inside this program, through libsexpgpu (docs/library.md).
 *
 *   run_model LOCATION [INPUTS [OUTPUTS]]
 *
 * Opens the model at LOCATION (a checkpoint LOC/step-N, a location for its newest, or a
 * folder `sexpgpu export` wrote), prints its inputs and outputs, and runs it once: on the
 * bytes of the file INPUTS, every input in order as `sexpgpu serve`'s call frame holds
 * them, or on zeros without it. The outputs' bytes go to the file OUTPUTS, in order, as
 * serve's answer holds them after its status byte; without it, the first values of each
 * f32 output are printed. An error is printed with its code, and the exit status is 1. */
#include <sexpgpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the error and frees it; returns 1, the exit status. */
static int fail(sexpgpu_error *error) {
  fprintf(stderr, "error[%s]: %s\n", sexpgpu_error_code(error), sexpgpu_error_message(error));
  sexpgpu_error_free(error);
  return 1;
}

static void print_info(const char *label, const sexpgpu_tensor_info *info) {
  int axis;
  printf("  %-7s %s [", label, info->name);
  for (axis = 0; axis < info->rank; ++axis) printf("%s%lld", axis ? ", " : "", (long long)info->shape[axis]);
  printf("] %s\n", info->dtype);
}

/* The model's inputs (or outputs) as buffers of their sizes, zeroed; NULL when memory runs out. */
static unsigned char *buffers_for(sexpgpu_model *model, int count, int inputs, sexpgpu_tensor_info *infos,
                                  size_t *total) {
  int i;
  *total = 0;
  for (i = 0; i < count; ++i) {
    sexpgpu_error *error = inputs ? sexpgpu_input_info(model, i, &infos[i]) : sexpgpu_output_info(model, i, &infos[i]);
    if (error) {
      fail(error);
      return NULL;
    }
    print_info(inputs ? "inputs" : "outputs", &infos[i]);
    *total += infos[i].byte_size;
  }
  return calloc(*total + 1, 1);
}

static int run(sexpgpu_model *model, const char *inputs_path, const char *outputs_path) {
  int in_count = sexpgpu_input_count(model), out_count = sexpgpu_output_count(model), i, status = 1;
  sexpgpu_tensor_info *in_infos = calloc((size_t)in_count + 1, sizeof *in_infos);
  sexpgpu_tensor_info *out_infos = calloc((size_t)out_count + 1, sizeof *out_infos);
  sexpgpu_const_buffer *ins = calloc((size_t)in_count + 1, sizeof *ins);
  sexpgpu_buffer *outs = calloc((size_t)out_count + 1, sizeof *outs);
  size_t in_bytes = 0, out_bytes = 0, offset;
  unsigned char *in_data = NULL, *out_data = NULL;
  sexpgpu_error *error;
  FILE *file;

  if (!in_infos || !out_infos || !ins || !outs) goto done;
  if (!(in_data = buffers_for(model, in_count, 1, in_infos, &in_bytes))) goto done;
  if (!(out_data = buffers_for(model, out_count, 0, out_infos, &out_bytes))) goto done;
  if (inputs_path) {
    if (!(file = fopen(inputs_path, "rb"))) {
      perror(inputs_path);
      goto done;
    }
    if (fread(in_data, 1, in_bytes + 1, file) != in_bytes) {
      fprintf(stderr, "%s: not the %zu bytes of the model's inputs\n", inputs_path, in_bytes);
      fclose(file);
      goto done;
    }
    fclose(file);
  }
  /* One buffer per input and per output, each exactly its byte_size. */
  for (i = 0, offset = 0; i < in_count; offset += in_infos[i++].byte_size) {
    ins[i].data = in_data + offset;
    ins[i].bytes = in_infos[i].byte_size;
  }
  for (i = 0, offset = 0; i < out_count; offset += out_infos[i++].byte_size) {
    outs[i].data = out_data + offset;
    outs[i].bytes = out_infos[i].byte_size;
  }
  if ((error = sexpgpu_run(model, ins, (size_t)in_count, outs, (size_t)out_count))) {
    status = fail(error);
    goto done;
  }
  if (outputs_path) {
    if (!(file = fopen(outputs_path, "wb")) || fwrite(out_data, 1, out_bytes, file) != out_bytes) {
      perror(outputs_path);
      if (file) fclose(file);
      goto done;
    }
    fclose(file);
  } else {
    for (i = 0; i < out_count; ++i) {
      size_t k, shown = out_infos[i].byte_size / sizeof(float) < 4 ? out_infos[i].byte_size / sizeof(float) : 4;
      if (strcmp(out_infos[i].dtype, "f32") != 0) continue;
      printf("%s:", out_infos[i].name);
      for (k = 0; k < shown; ++k) printf(" %g", (double)((const float *)outs[i].data)[k]);
      printf(" ...\n");
    }
  }
  status = 0;
done:
  free(in_infos);
  free(out_infos);
  free(ins);
  free(outs);
  free(in_data);
  free(out_data);
  return status;
}

int main(int argc, char **argv) {
  sexpgpu_options options;
  sexpgpu_model *model;
  sexpgpu_error *error;
  int status;

  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s LOCATION [INPUTS [OUTPUTS]]   (libsexpgpu %s)\n", argv[0], sexpgpu_version());
    return 2;
  }
  sexpgpu_options_init(&options);
  options.device = getenv("SEXPGPU_DEVICE"); /* NULL: the cpu */
  if ((error = sexpgpu_open(argv[1], &options, &model))) return fail(error);
  printf("running %s\n", argv[1]);
  status = run(model, argc > 2 ? argv[2] : NULL, argc > 3 ? argv[3] : NULL);
  sexpgpu_close(model);
  return status;
}
