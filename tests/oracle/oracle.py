#!/usr/bin/env python3
"""An independent oracle for SexpGPU's devices (`reference` by default, `--device cpu`).

Every case is a SexpGPU expression over random inputs (a fixed seed per group) and
the same computation done here with NumPy. The inputs are written as `(tensor ...)`
literals whose numbers read back exactly (an f32 is written as the decimal of its
exact double value), the cases of a group are evaluated by one `sexpgpu eval` process
(each case a function of a generated file, all called in one `(list ...)`), the
printed values are parsed, and each is compared with NumPy within the tolerance
stated below for its dtype and kind of computation.

    python3 tests/oracle/oracle.py --program build/sexpgpu --group elementwise
    python3 tests/oracle/oracle.py --program build/sexpgpu --group all -v

A case that finds a known bug carries `xfail="..."` naming it: it is reported and does
not fail the group while the bug is there, and FAILS the group the day it passes, so
that the mark is removed and the case guards the fix.

Exit status: 0 all passed, 1 a case failed, 77 skipped (NumPy missing).
"""
import argparse
import os
import re
import sys
import time

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("oracle: SKIPPED: NumPy is not installed for this python3 (%s); "
          "install it (scripts/setup) to run the oracle tests" % sys.executable)
    # CI must run the oracle: there a skip is a failure.
    sys.exit(1 if os.environ.get("CI") == "true" else 77)


from oracle_core import *  # noqa: F401,F403
from oracle_cases import group_elementwise, group_reductions, group_shapes, group_matmul, group_nn, group_grad

GROUPS = {
    "elementwise": group_elementwise,
    "reductions": group_reductions,
    "shapes": group_shapes,
    "matmul": group_matmul,
    "nn": group_nn,
    "grad": group_grad,
}
SEEDS = {name: 20240600 + i for i, name in enumerate(GROUPS)}
BATCH = 400  # cases per process


def perturbed(want, dtype, tol):
    """A wrong expectation: floats off by 1e-3 relative and absolute (or twice the case's
    tolerance, or 4 bf16 ulps, when larger), integers by 1, booleans flipped.
    Non-finite elements stay (NaN and infinities are compared exactly)."""
    w = np.asarray(want)
    if w.dtype == np.bool_:
        return ~w
    if w.dtype.kind in "iu":
        return w + w.dtype.type(1)
    w = w.astype(np.float64)
    delta = 1e-3 * np.abs(w) + 1e-3
    if isinstance(tol, Close):
        delta = np.maximum(delta, 2 * (tol.atol + tol.rtol * np.abs(w)))
    if dtype == "bf16":
        delta = np.maximum(delta, 2.0 ** -6 * np.abs(w))
    return w + delta


def self_test(program, name, device, verbose, only=None):
    """Every case of the group with a perturbed expectation must fail: this checks the
    parser and comparison, so that a pass means what it says."""
    np.seterr(all="ignore")
    rng = np.random.default_rng(SEEDS[name])
    with np.errstate(all="ignore"):
        cases = GROUPS[name](rng)
    if only:
        cases = [c for c in cases if re.search(only, c.name)]
    caught = missed = 0
    for start in range(0, len(cases), BATCH):
        batch = cases[start:start + BATCH]
        results = run_cases(program, batch, device, verbose)
        for c in batch:
            got, error = results[c.name]
            if error:
                continue
            if not any(np.any(np.isfinite(np.asarray(w, np.float64))) for w in c.want):
                continue
            wrong = Case(c.name, c.expr, [perturbed(w, d, t) for w, d, t in zip(c.want, c.dtype, c.tol)], c.dtype, c.tol)
            if check(wrong, got if c.multi else [got]):
                caught += 1
            else:
                missed += 1
                print("SELFTEST %s: %s: a perturbed expectation still passes (tolerance %r)" % (name, c.name, c.tol))
    print("oracle selftest %s: %d perturbed expectations caught, %d missed" % (name, caught, missed))
    return missed


def run_group(program, name, device, verbose, only=None):
    rng = np.random.default_rng(SEEDS[name])
    with np.errstate(all="ignore"):
        cases = GROUPS[name](rng)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit("oracle: duplicate case names in %s: %s" % (name, sorted(dup)))
    if only:
        cases = [c for c in cases if re.search(only, c.name)]
    passed = failed = xfailed = 0
    for start in range(0, len(cases), BATCH):
        batch = cases[start:start + BATCH]
        results = run_cases(program, batch, device, verbose)
        for c in batch:
            got, error = results[c.name]
            msg = error or check(c, got)
            if c.xfail:
                if msg:
                    xfailed += 1
                    print("XFAIL %s: %s (known bug: %s)" % (name, c.name, c.xfail))
                    if verbose:
                        print("  " + msg.replace("\n", "\n  "))
                else:
                    failed += 1
                    print("XPASS %s: %s: passes now; the bug it was marked for (%s) looks fixed: "
                          "remove its xfail mark in tests/oracle/oracle.py" % (name, c.name, c.xfail))
            elif msg:
                failed += 1
                print("FAIL %s: %s\n  expression: %s\n  %s" % (name, c.name, c.expr, msg.replace("\n", "\n  ")))
            else:
                passed += 1
                if verbose:
                    print("ok   %s: %s" % (name, c.name))
    extra = ", %d expected failures (known bugs)" % xfailed if xfailed else ""
    print("oracle %s on %s: %d passed, %d failed%s" % (name, device, passed, failed, extra))
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", required=True, help="the sexpgpu executable")
    ap.add_argument("--group", default="all", choices=["all"] + list(GROUPS))
    ap.add_argument("--device", default="reference", help="the device the cases run on (default reference)")
    ap.add_argument("--only", help="a regular expression: run the cases whose names match")
    ap.add_argument("--self-test", action="store_true",
                    help="check the checker: every case with a perturbed expectation must fail")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not os.access(args.program, os.X_OK):
        raise SystemExit("oracle: %s is not an executable" % args.program)
    groups = list(GROUPS) if args.group == "all" else [args.group]
    t0 = time.time()
    run = self_test if args.self_test else run_group
    failed = sum(run(args.program, g, args.device, args.verbose, args.only) for g in groups)
    if args.verbose:
        print("oracle: %.1f s" % (time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
