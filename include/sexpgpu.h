/* libsexpgpu: a SexpGPU model inside your own program, without a socket (docs/library.md).
 *
 * sexpgpu_open loads the model of a checkpoint (LOC/step-N, or LOC for its newest) or of
 * a folder `sexpgpu export` wrote, onto a device, as `sexpgpu serve` does; sexpgpu_run
 * then runs it on one record's inputs and writes its outputs into your buffers, with the
 * bytes serve's socket answers: each tensor's elements in row-major order, little-endian.
 *
 * Errors: every function that can fail returns NULL on success and an error otherwise,
 * which holds a code (E-SERVE-003, E-API-002, ...: `sexpgpu explain-error CODE` explains
 * each) and a message; free it with sexpgpu_error_free. No function aborts, exits or
 * throws; a null or closed model is an error (E-API-001), not a crash.
 *
 * Threads: one model may be shared by any number of threads, each calling sexpgpu_run
 * (and the info functions) at any time. Calls that arrive while the device runs others
 * wait, and run together, up to options.batch of them, as serve batches its clients'
 * calls; a call's outputs are the same bits whatever runs with it. sexpgpu_close may be
 * called once the other threads are done with the model: a call already running when it
 * closes finishes, a later one is E-API-001.
 *
 * This header is C11 and C++; it names no C++ type. */
#ifndef SEXPGPU_H
#define SEXPGPU_H

#include <stddef.h>
#include <stdint.h>

#define SEXPGPU_VERSION_MAJOR 0
#define SEXPGPU_VERSION_MINOR 1
#define SEXPGPU_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH" of this header; sexpgpu_version() gives the library's. */
#define SEXPGPU_VERSION_TEXT_(n) #n
#define SEXPGPU_VERSION_TEXT(n) SEXPGPU_VERSION_TEXT_(n)
#define SEXPGPU_VERSION                       \
  SEXPGPU_VERSION_TEXT(SEXPGPU_VERSION_MAJOR) \
  "." SEXPGPU_VERSION_TEXT(SEXPGPU_VERSION_MINOR) "." SEXPGPU_VERSION_TEXT(SEXPGPU_VERSION_PATCH)

/* The most axes an input or output has; a model with more is refused at open (E-API-004). */
#define SEXPGPU_MAX_RANK 8

#if defined(__GNUC__)
#define SEXPGPU_API __attribute__((visibility("default")))
#else
#define SEXPGPU_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* An open model; opaque. */
typedef struct sexpgpu_model sexpgpu_model;
/* A failure: a code and a message; opaque. */
typedef struct sexpgpu_error sexpgpu_error;

/* What `sexpgpu serve`'s flags choose, for sexpgpu_open. Fill it with sexpgpu_options_init,
 * then set what you need: `size` says which version of this struct the caller was built
 * with, so fields added later keep their defaults for older callers. */
typedef struct sexpgpu_options {
  size_t size;                /* sizeof(sexpgpu_options), set by sexpgpu_options_init */
  const char* device;         /* "cpu" (the default), "reference" or "cuda" */
  int cpu_cores;              /* the most host cores the cpu device uses; 0 (the default): all */
  int batch;                  /* the most calls run together, 1 (the default) to 256 */
  const char* const* outputs; /* only these outputs, in this order (output_count names); */
  size_t output_count;        /* 0 (the default): every output */
  int at;                     /* nonzero: a last input `at`, i32 [1], and each output only at
                                 that place of its second axis; 0 by default */
  const char* precision;      /* NULL (the default): the model's own; "bf16" */
  int trained;                /* nonzero: a checkpoint's trained weights, not its :ema averages */
} sexpgpu_options;

/* One input or output of a model. Its strings stay valid while the model is open. */
typedef struct sexpgpu_tensor_info {
  const char* name;                /* "inputs", "inputs.0", "at", "output", "logits", ... */
  const char* dtype;               /* "f32", "bf16", "f64", "i32", "i64" or "bool" */
  int rank;                        /* 0 to SEXPGPU_MAX_RANK */
  int64_t shape[SEXPGPU_MAX_RANK]; /* shape[0] .. shape[rank - 1]; the rest 0 */
  size_t byte_size;                /* the bytes of its buffer in sexpgpu_run */
} sexpgpu_tensor_info;

/* A buffer sexpgpu_run writes an output into, and one it reads an input from. */
typedef struct sexpgpu_buffer {
  void* data;
  size_t bytes;
} sexpgpu_buffer;
typedef struct sexpgpu_const_buffer {
  const void* data;
  size_t bytes;
} sexpgpu_const_buffer;

/* The library's version, "MAJOR.MINOR.PATCH"; static storage. */
SEXPGPU_API const char* sexpgpu_version(void);

/* Sets every field of *options to its default, and its size. */
SEXPGPU_API void sexpgpu_options_init(sexpgpu_options* options);

/* Opens the model at `location`: LOC/step-N, a location (its newest complete checkpoint)
 * or a folder `sexpgpu export` wrote; LOC a local folder, file://path, s3://bucket/prefix
 * or o41://team/run (docs/locations.md). `options` may be NULL for the defaults. Compiles
 * the model and puts its weights on the device; on success *model is the open model, on
 * failure NULL. */
SEXPGPU_API sexpgpu_error* sexpgpu_open(const char* location, const sexpgpu_options* options, sexpgpu_model** model);

/* The model's inputs and outputs, as the options left them; -1 for a null or closed model. */
SEXPGPU_API int sexpgpu_input_count(const sexpgpu_model* model);
SEXPGPU_API int sexpgpu_output_count(const sexpgpu_model* model);
/* Input (output) `index`, 0 to the count - 1, in the order sexpgpu_run takes them. */
SEXPGPU_API sexpgpu_error* sexpgpu_input_info(const sexpgpu_model* model, int index, sexpgpu_tensor_info* info);
SEXPGPU_API sexpgpu_error* sexpgpu_output_info(const sexpgpu_model* model, int index, sexpgpu_tensor_info* info);

/* Runs the model on one record: inputs[i] holds input i, exactly its byte_size bytes;
 * outputs[j] receives output j, exactly its byte_size bytes. A count or a size other than
 * the model's is E-API-002, naming which; a bool byte other than 0 or 1, an `at` off the
 * axis, or an index the model reads outside its axis (a token id outside the vocabulary)
 * is E-SERVE-008; a device that fails, E-SERVE-009. On an error no output is written. */
SEXPGPU_API sexpgpu_error* sexpgpu_run(sexpgpu_model* model, const sexpgpu_const_buffer* inputs, size_t input_count,
                                       const sexpgpu_buffer* outputs, size_t output_count);

/* The error's code ("E-API-001") and message; valid until it is freed. */
SEXPGPU_API const char* sexpgpu_error_code(const sexpgpu_error* error);
SEXPGPU_API const char* sexpgpu_error_message(const sexpgpu_error* error);
/* Frees an error; NULL is allowed. */
SEXPGPU_API void sexpgpu_error_free(sexpgpu_error* error);

/* Closes the model and frees what it holds on the device; NULL and a closed model are
 * allowed (nothing happens). */
SEXPGPU_API void sexpgpu_close(sexpgpu_model* model);

#ifdef __cplusplus
}
#endif

#endif /* SEXPGPU_H */
