"""The numpy peer of bench/cpu_matmul: times numpy's matmul (OpenBLAS) on request.

Speaks over stdin/stdout, one line each way, so the benchmark can interleave its own
timings with numpy's in one run. The first line written says which BLAS numpy runs, as
`blas NAME VERSION KERNEL`, or `refuse WHY` when it is not an optimized one (a reference
BLAS would flatter us). Then for each request line `M K N THREADS SECONDS` it answers the
best GFLOP/s of float32 `a @ b` over that many seconds, on that many threads.
"""
import os
import sys
import time

# Set on some hosts to dodge old OpenBLAS bugs; they slow a current one. Dropped here,
# before numpy loads OpenBLAS, for this process alone.
for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(name, None)

import numpy as np

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:
    print("refuse threadpoolctl is not installed, so the BLAS numpy runs cannot be checked "
          "(pip install threadpoolctl)", flush=True)
    sys.exit(0)

blas = [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]
if not blas or blas[0].get("internal_api") not in ("openblas", "mkl", "blis"):
    found = blas[0].get("internal_api", "?") if blas else "none"
    print(f"refuse numpy runs no optimized BLAS (found: {found}); install an OpenBLAS build", flush=True)
    sys.exit(0)
lib = blas[0]
print(f"blas {lib['internal_api']} {lib.get('version')} {lib.get('architecture')}", flush=True)

for line in sys.stdin:
    m, k, n, threads, seconds = line.split()
    m, k, n, threads, seconds = int(m), int(k), int(n), int(threads), float(seconds)
    rng = np.random.default_rng(42)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out = np.empty((m, n), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        np.matmul(a, b, out=out)
        best = float("inf")
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.perf_counter()
            np.matmul(a, b, out=out)
            best = min(best, time.perf_counter() - start)
    # OpenBLAS's threads spin for about 0.1 s after their last call before they sleep:
    # answered at once, they would take the cores of the benchmark's next timing.
    if threads > 1:
        time.sleep(0.3)
    print(f"{2.0 * m * k * n / best / 1e9:.3f}", flush=True)
