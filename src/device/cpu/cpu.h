// The cpu device: the default. Compiles a graph into a plan of prepared
// steps, one per node, run on the process's thread pool (thread_pool.h, which
// states the threads' policy). Matrix products run on our GEMM (gemm.h) with
// the micro-kernels of one instruction set (isa.h); the other primitives run
// as loops split over the pool, a few through their reference kernel
// (fallback_primitives says which).
//
// Bits: the same inputs give the same bits on every run, for every thread
// count and on every x86-64 host (each output element is computed by one
// thread, reductions in a fixed order that no vector width changes, no
// atomics), and a row's result does not depend on the other rows of its
// batch.
//
// A plan owns its buffers (allocated at compile time) and runs one call at a
// time: calls from several threads need a plan each.
#pragma once

#include "device/cpu/isa.h"
#include "device/device.h"

namespace sx::device {

namespace cpu {
struct Schedule;
}  // namespace cpu

class CpuDevice : public HostDevice {
 public:
  explicit CpuDevice(const DeviceOptions& options);
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override;
  // What compile makes a plan of: the graph verified, its composites expanded and
  // lowered for this device's instruction set and cores (cpu/schedule.h).
  cpu::Schedule schedule(const graph::Graph& graph) const;
  // The primitives with a row in the step table (cpu/kernels.h).
  bool supports(graph::PrimId primitive) const override;
  // Whether `node` of `graph` runs by its kernel: a composite only in the forms its
  // kernel takes (cpu::runs_composite); the others run as their decomposition.
  bool runs(const graph::Graph& graph, const graph::Node& node) const override;
  int cores() const { return cores_; }
  cpu::Isa isa() const { return isa_; }

 private:
  int cores_;  // threads of the pool, >= 1
  cpu::Isa isa_;
};

}  // namespace sx::device
