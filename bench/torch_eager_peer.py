"""The PyTorch peer of bench/runtime: the cost of one eager op, measured on request.

Prints `torch VERSION blas ...` (or `refuse WHY` when PyTorch cannot be imported or runs
no optimized BLAS: see torch_blas.py), then, for
each request line `THREADS SECONDS`, the best time per call in microseconds of
`torch.add(a, b, out=c)` on [4, 4] float32 tensors: PyTorch's per-op overhead, the
peer of running a compiled one-op program.
"""
import sys
import time

try:
    import torch
except ImportError as e:
    print(f"refuse PyTorch is not installed for this Python ({e}); apt-get install python3-torch", flush=True)
    sys.exit(0)
from torch_blas import blas_line  # noqa: E402

blas = blas_line(torch)
if blas.startswith("refuse"):
    print(blas, flush=True)
    sys.exit(0)
print(f"torch {torch.__version__} {blas}", flush=True)

for line in sys.stdin:
    threads, seconds = int(line.split()[0]), float(line.split()[1])
    torch.set_num_threads(threads)
    a, b, c = torch.ones(4, 4), torch.ones(4, 4), torch.empty(4, 4)
    best = float("inf")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        for _ in range(1000):
            torch.add(a, b, out=c)
        best = min(best, (time.perf_counter() - start) / 1000)
    print(f"{best * 1e6:.3f}", flush=True)
