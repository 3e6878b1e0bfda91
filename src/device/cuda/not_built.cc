// The cuda device's factory in a build without the CUDA toolkit: a refusal saying so.
#include "device/cuda/cuda.h"

namespace sx::device {

std::unique_ptr<Device> make_cuda_device() {
  throw DeviceError(
      "the cuda device is not in this build: it was built without the CUDA toolkit; rebuild with one "
      "(docs/devices.md), or use --device cpu",
      "E-DEVICE-005");
}

}  // namespace sx::device
