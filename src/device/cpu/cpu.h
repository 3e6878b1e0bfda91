// The cpu device: the default. Compiles a graph into a plan of prepared
// steps, one per node, run on one OpenMP thread pool shared with oneDNN
// (Debian's oneDNN runs on OpenMP; a second pool would fight it for the
// cores). Matrix products go through oneDNN's matmul, created once per node
// at compile time; the other primitives run as OpenMP loops, a few through
// their reference kernel (see plan.cc for which).
//
// Bits: the same inputs give the same bits on every run and for every
// thread count (each output element is computed by one thread, reductions
// in a fixed order, no atomics), and a row's result does not depend on the
// other rows of its batch.
//
// A plan owns its buffers (allocated at compile time) and runs one call at a
// time: calls from several threads need a plan each.
#pragma once

#include "device/device.h"

namespace sx::device {

class CpuDevice : public Device {
 public:
  explicit CpuDevice(const DeviceOptions& options);
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override;
  int cores() const { return cores_; }

 private:
  int cores_;  // threads of the pool, >= 1
};

}  // namespace sx::device
