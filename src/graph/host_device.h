// SX_HOST_DEVICE marks a function that the cuda device's kernels (device/cuda) call as
// well as the host's code: `__host__ __device__` where nvcc compiles it, nothing for
// the host compiler. Only the formulas that give the host's bits on a GPU carry it.
#pragma once

#if defined(__CUDACC__)
#define SX_HOST_DEVICE __host__ __device__
#else
#define SX_HOST_DEVICE
#endif
