// A device that passes every call to another: a test derives from it to watch, hold or
// fail the few calls it is about.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "device/device.h"

namespace sx::testing {

class ForwardingDevice : public device::Device {
 public:
  explicit ForwardingDevice(device::Device& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::unique_ptr<device::Plan> compile(const graph::Graph& graph) override { return inner_.compile(graph); }
  bool supports(graph::PrimId primitive) const override { return inner_.supports(primitive); }
  device::Buffer allocate(const graph::ValueType& type) override { return inner_.allocate(type); }
  device::Event upload_into(device::Buffer& buffer, std::span<const uint8_t> bytes) override {
    return inner_.upload_into(buffer, bytes);
  }
  device::Event download_into(const device::Buffer& buffer, std::span<uint8_t> bytes) override {
    return inner_.download_into(buffer, bytes);
  }
  void synchronize() override { inner_.synchronize(); }
  device::Buffer upload(graph::Tensor value) override { return inner_.upload(std::move(value)); }

 protected:
  device::Device& inner_;
};

}  // namespace sx::testing
