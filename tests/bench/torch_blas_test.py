#!/usr/bin/env python3
"""The PyTorch peers of bench/ time PyTorch on an optimized BLAS only (bench/torch_blas.py).

Runs under the Python that has PyTorch (Debian's python3-torch, for /usr/bin/python3):
- as installed by scripts/setup, PyTorch's sgemm_ is OpenBLAS's, and the peer says so;
- with the netlib reference BLAS put first (LD_LIBRARY_PATH), both the train and the
  eager peer print `refuse`, name the library, and time nothing.
Without PyTorch it is a skip (77), or a failure under CI=true, where setup installs it.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"
TORCH_PYTHON = "/usr/bin/python3"
REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"  # Debian's libblas3: the netlib reference BLAS


def run(args, env_extra=None, stdin=""):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([TORCH_PYTHON, *args], input=stdin, capture_output=True, text=True, env=env, timeout=120)


def main():
    if subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIPPED: PyTorch is not installed for {TORCH_PYTHON} (scripts/setup installs python3-torch)")
        return 1 if os.environ.get("CI") == "true" else 77
    failures = []

    line = run(["-c", "import torch, torch_blas; print(torch_blas.blas_line(torch))"], {"PYTHONPATH": str(BENCH)})
    print("installed:", line.stdout.strip() or line.stderr.strip())
    if not line.stdout.startswith("blas openblas (OpenBLAS"):
        failures.append("with the BLAS scripts/setup installs, PyTorch should run OpenBLAS")

    if not os.path.exists(os.path.join(REFERENCE_BLAS, "libblas.so.3")):
        failures.append(f"{REFERENCE_BLAS}/libblas.so.3 (libblas3, a python3-torch dependency) is missing")
    else:
        reference = {"LD_LIBRARY_PATH": REFERENCE_BLAS}
        text = Path(os.environ.get("TMPDIR", "/tmp")) / f"torch-blas-test-{os.getpid()}.txt"
        text.write_bytes(bytes(range(256)) * 8)
        try:
            peers = {
                "train": run([str(BENCH / "torch_train_peer.py"), "--model", "tiny", "--text", str(text)], reference),
                "eager": run([str(BENCH / "torch_eager_peer.py")], reference, stdin="1 0.1\n"),
            }
        finally:
            text.unlink()
        for name, done in peers.items():
            out = done.stdout.strip()
            print(f"{name} peer on the reference BLAS: {out or done.stderr.strip()}")
            if done.returncode != 0 or out.count("\n") != 0 or not out.startswith("refuse PyTorch's sgemm_ is "):
                failures.append(f"the {name} peer should refuse, in one line, to be timed on the reference BLAS")
            elif REFERENCE_BLAS not in out:
                failures.append(f"the {name} peer's refusal should name the library")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
