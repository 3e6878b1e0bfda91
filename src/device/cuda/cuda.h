// The cuda device's factory, which device.cc calls for `--device cuda`. A build with
// the CUDA toolkit defines it in cuda_device.cc; one without, in not_built.cc.
#pragma once

#include <memory>

#include "device/device.h"

namespace sx::device {

// The cuda device on the first GPU the CUDA runtime finds. Throws DeviceError:
// E-DEVICE-005 in a build without the CUDA toolkit, E-DEVICE-006 (with the runtime's
// reason) where no GPU answers or none runs this build's kernels.
std::unique_ptr<Device> make_cuda_device();

}  // namespace sx::device
