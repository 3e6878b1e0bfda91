// The texts of device's diagnostic codes: E-DEVICE (devices).
// Codes are never reused: a retired code keeps its row and says so.
#include "device/codes.h"

namespace sx::device {
namespace {

constexpr graph::CodeInfo kCodes[] = {
    {"E-DEVICE-001", "device not available",
     R"(The device named by `--device` or SEXPGPU_DEVICE cannot be made: `metal`, which the
manual names but SexpGPU does not have, or a name that is not a device. SexpGPU never
falls back to another device in silence.

    --device metal       SexpGPU has no metal device
    --device gpu         not a device

Use `cpu` (every core of the host) or `reference` (one thread, the plainest loops).
`cuda` has codes of its own: E-DEVICE-005 to E-DEVICE-009.)"},
    {"E-DEVICE-002", "not enough memory (retired: now E-MEM-001)",
     R"(Retired. A graph whose buffers did not fit in the machine's memory was reported with
this code; since the memory limit (`--max-memory`, SEXPGPU_MAX_MEMORY) every request
over it, and every allocation the machine refuses, is E-MEM-001.)"},
    {"E-DEVICE-003", "a core count that is not a positive whole number",
     R"(`--cpu-cores` (or the SEXPGPU_CPU_CORES variable, read when the flag is absent) says
how many host cores the `cpu` device may use. It is a positive whole number written in
decimal digits alone, at most 2147483647:

    --cpu-cores 4        at most four
    --cpu-cores 1000     all cores, on a host with fewer than 1000
    (no flag)            all cores

A count above the host's cores means all of them. 0, a count above 2147483647, a
sign, a fraction, spaces or an empty value are refused, naming the flag or the
variable and the value, rather than read as some other number.)"},
    {"E-DEVICE-004", "an index outside its axis",
     R"(A tensor's index, known only when the graph runs, is not a place of the axis it
reads: an id of `index` or `embedding` (`gather`, and `scatter-add`, its gradient)
below 0 or at or past the axis's length, or a target of `cross-entropy` that is not a
class (`one-hot` with `:checked true`). No index is clamped to the axis or wrapped
around it: the run stops at the first one outside. The message names the index, where
it is in its tensor (its row first), and the axis's places; the span points at the form
that read it:

    (index (ones [256 8]) (tensor [3 -1]))             ; ids run from 0 to 255
    (cross-entropy (zeros [2 3]) (+ (tensor [0 1]) 2))  ; targets run from 0 to 2

In `sexpgpu run` the run stops at that step, as a failed guard stops it, and names the
step and the batch's field the index came from; the checkpoints written before it are
whole. Check the data where it is made: a vocabulary that does not cover the tokens,
or a label off by one. A served model answers such a call with status 1 (E-SERVE-008)
and goes on.)"},
    {"E-DEVICE-005", "the cuda device is not in this build",
     R"(`--device cuda` (or SEXPGPU_DEVICE=cuda) names the cuda device, and this build has
none: CMake found no CUDA toolkit of version 13.0 or newer when it configured it, or
was told not to use one (-DSEXPGPU_CUDA=OFF).

Rebuild with the toolkit: install it, or run `scripts/setup --cuda`, which puts NVIDIA's
CUDA 13.0 toolkit into .venv, then `scripts/build` (docs/devices.md says how). Until
then, use --device cpu.)"},
    {"E-DEVICE-006", "no usable GPU",
     R"(This build has the cuda device, but it cannot run here. The message gives the CUDA
runtime's reason:

    no GPU answered: CUDA driver version is insufficient for CUDA runtime version
        the NVIDIA driver is missing (no libcuda.so.1), or older than CUDA 13.0 needs
    no GPU answered: no CUDA-capable device is detected
        the driver sees no GPU (or CUDA_VISIBLE_DEVICES hides them all)
    GPU 0 (...) runs none of this build's kernels
        the kernels are built for compute capability 8.x and 9.0 (A100, H100 and their
        kin); other GPUs are not supported yet

Install or update the driver (`nvidia-smi` should list the GPU), or use --device cpu.)"},
    {"E-DEVICE-007", "a primitive the cuda device has no kernel for",
     R"(The cuda device runs a graph only where it has a kernel for every primitive in it,
in the dtype the graph gives it; it never runs a step on the host in silence. The
message names each primitive it lacks, with its dtype:

    the cuda device has no kernel for gather (bf16), iota (bf16)

docs/devices.md lists the primitives it runs. Use --device cpu for this program.)"},
    {"E-DEVICE-008", "the GPU failed",
     R"(A call to the CUDA runtime failed while the cuda device worked: the message gives
the call and the runtime's reason. "the GPU is out of memory" says how many bytes were
asked for and how many the device's buffers hold: use a smaller batch or model, or free
the GPU of other programs (`nvidia-smi` lists them). Other reasons are the driver's: a
GPU that fell off the bus or a kernel that faulted leaves the process unable to use the
GPU again; run the program again, and report it if it repeats.)"},
    {"E-DEVICE-009", "a generated kernel did not compile",
     R"(The cuda device writes CUDA C for the graph's fused elementwise chains and compiles
it with NVRTC, the CUDA toolkit's run-time compiler. The message gives NVRTC's log. A
generated kernel that does not compile is a defect of SexpGPU: report it with the log.
An NVRTC that fails to start (its library missing or of another CUDA release than the
build's) gives its own reason: reinstall the toolkit the program was built with.)"},
};

}  // namespace

std::span<const graph::CodeInfo> codes() { return kCodes; }

}  // namespace sx::device
