// Which primitives each device runs by their reference kernels instead of its
// own: named, so that a slow path is a decision someone wrote down.
#include <gtest/gtest.h>

#include "device/device.h"
#include "graph/primitive.h"

namespace sx::device {
namespace {

TEST(Fallbacks, EachDeviceNamesThePrimitivesItRunsByReferenceKernels) {
  EXPECT_EQ(make_device("reference")->fallback_primitives(), std::vector<std::string>{});
  EXPECT_EQ(make_device("cpu")->fallback_primitives(), std::vector<std::string>{});
}

TEST(Fallbacks, AreAllPrimitives) {
  for (const std::string& device : available_devices()) {
    for (const std::string& name : make_device(device)->fallback_primitives()) {
      EXPECT_NE(graph::find_primitive(name), nullptr) << device << " names " << name;
    }
  }
}

}  // namespace
}  // namespace sx::device
