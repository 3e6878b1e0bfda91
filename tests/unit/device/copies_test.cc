// The copies between the host and a device's buffers (device.h): each device's buffers
// take the bytes of a value and give them back unchanged, its events are done when a
// host device returns them, and bytes of the wrong size are refused before any is copied.
#include <gtest/gtest.h>

#include <vector>

#include "device/device.h"

namespace sx::device {
namespace {

TEST(Copies, ABufferGivesBackTheBytesItWasGiven) {
  graph::Tensor value(graph::DType::bf16, {3, 5});
  for (size_t i = 0; i < value.bytes().size(); ++i) value.bytes()[i] = static_cast<uint8_t>(i * 37 + 11);
  for (const std::string& name : available_devices()) {
    auto device = make_device(name);
    Buffer buffer = device->allocate({{3, 5}, graph::DType::bf16});
    Event up = device->upload_into(buffer, value.bytes());
    EXPECT_TRUE(up.done()) << name;
    std::vector<uint8_t> back(buffer.byte_size());
    Event down = device->download_into(buffer, back);
    down.wait();
    EXPECT_TRUE(down.done()) << name;
    EXPECT_EQ(back, std::vector<uint8_t>(value.bytes().begin(), value.bytes().end())) << name;
    EXPECT_EQ(device->download(buffer), value) << name;
    device->synchronize();
  }
}

TEST(Copies, BytesOfAnotherSizeAreRefused) {
  for (const std::string& name : available_devices()) {
    auto device = make_device(name);
    Buffer buffer = device->upload(graph::Tensor::scalar(graph::DType::f32, 2.5));
    std::vector<uint8_t> eight(8, 0xFF);
    try {
      device->upload_into(buffer, eight);
      FAIL() << name << ": no error";
    } catch (const DeviceError& e) {
      EXPECT_STREQ(e.what(), "upload: 8 bytes for a buffer of f32[], which holds 4") << name;
    }
    EXPECT_THROW(device->download_into(buffer, eight), DeviceError) << name;
    EXPECT_EQ(device->download(buffer).value(0), 2.5) << name;
  }
}

}  // namespace
}  // namespace sx::device
