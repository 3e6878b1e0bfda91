// The elementwise formulas, bit for bit: the cpu device computes every primitive of
// the unary and binary families (arithmetic, comparisons, logic, where, cast) exactly
// as the reference kernel does, in every dtype the primitive takes, on the values where
// two spellings of a formula part ways: NaN, infinities, signed zeros, subnormals, each
// dtype's extremes, the edges of exp's range and of float-to-integer conversion. The
// sweep compares floats within a tolerance, which would hide a formula written twice
// and changed in one place; this compares bits (graph/prims/scalar.h is the one place).
// Only a NaN's payload may differ: x86 gives the first operand's NaN, and for a
// commutative add or mul the compiler picks the operand order of a vectorized loop.
#include "formula_cases.h"
#include "util.h"

namespace sx::device::testing {
namespace {

TEST(Formulas, CpuComputesEveryElementwisePrimitiveAsTheReferenceDoesBitForBit) {
  for (const graph::Primitive* prim : elementwise_primitives()) {
    int ran = 0;
    for (DType dtype : graph::kAllDTypes) {
      for (DType to : graph::kAllDTypes) {
        if (prim->name != "cast" && to != graph::kAllDTypes[0]) continue;
        std::optional<FormulaCase> c = make_case(*prim, dtype, to);
        if (!c) continue;
        SCOPED_TRACE(c->label);
        ++ran;
        Tensor expected = run_on("reference", c->graph, c->inputs)[0];
        for (int cores : {1, 0}) {
          Tensor actual = run_on("cpu", c->graph, c->inputs, cores)[0];
          EXPECT_EQ(compare_bits(actual, expected), "") << "on " << (cores ? "1 thread" : "all cores");
        }
      }
    }
    EXPECT_GT(ran, 0) << prim->name << " took no dtype";
  }
}

}  // namespace
}  // namespace sx::device::testing
