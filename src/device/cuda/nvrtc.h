// Kernels compiled at run time by NVRTC, straight to machine code for one GPU (a cubin,
// not PTX left to the driver), and kept on disk: a cubin is looked up by a hash of its
// source, the GPU's architecture and NVRTC's version, under $XDG_CACHE_HOME/sexpgpu/
// kernels (else ~/.cache/sexpgpu/kernels), so that a program's kernels are compiled once
// per machine. The kernels are compiled as elementwise.cu is: -fmad=false, so that they
// give the host's bits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sx::device::cuda {

// "sm_90a" for compute capability 9.0 (the H100's, with its architecture-specific
// instructions), "sm_80" for 8.0.
std::string gpu_architecture(int major, int minor);

// The cubin of `source` for `architecture`; DeviceError E-DEVICE-009 with NVRTC's log
// when it does not compile.
std::vector<uint8_t> compile_cubin(std::string_view source, std::string_view architecture);

// The kernel cache's folder; empty where neither XDG_CACHE_HOME nor HOME is set (then
// nothing is cached).
std::string kernel_cache_dir();

// compile_cubin's result, from the cache when it holds it (its source kept beside it and
// compared, so that a hash collision compiles anew); a compiled cubin is written there.
// `compiled` tells whether this call compiled it.
std::vector<uint8_t> cached_cubin(std::string_view source, std::string_view architecture, bool* compiled = nullptr);

// FNV-1a of `text`, 64 bits: the cache's file names and the kernels' (a collision in the
// cache is caught by the key kept beside each cubin).
uint64_t text_hash(std::string_view text);

// NVRTC's version, "13.0".
std::string nvrtc_version();

}  // namespace sx::device::cuda
