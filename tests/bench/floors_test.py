#!/usr/bin/env python3
"""bench/train.py's first line and floor column, from build/bench/forward --floors: the
host's cpuid line, and for each model and thread count the ms of the step's products at
the multiply's peak (a positive number, or "-" for the scalar kernels, which have none).

  floors_test.py PROGRAM    (build/sexpgpu: bench/forward lies beside it, in bench/)
"""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def main():
    spec = importlib.util.spec_from_file_location("bench_train", ROOT / "bench" / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    failures = []
    host, floor_of = train.floors(sys.argv[1], "tiny", "1,2")
    print(host, floor_of)
    if not host.startswith("host: ") or "kernels: " not in host:
        failures.append(f"want the host line of bench/forward, got {host!r}")
    scalar = host.endswith("kernels: scalar")
    for threads in (1, 2):
        floor = floor_of.get(("gpt-tiny", threads))
        if scalar != (floor is None) or (floor is not None and not 0 < floor < 1000):
            failures.append(f"gpt-tiny on {threads} threads: want a floor in ms (none for scalar), got {floor}")
    _, none = train.floors(str(ROOT / "no-such-build" / "sexpgpu"), "tiny", "1")
    if none:
        failures.append(f"with no bench/forward, want no floors, got {none}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
