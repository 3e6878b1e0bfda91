#!/usr/bin/env python3
"""bench/torch_train_peer.py --rounds, as bench/forward drives it: after its first line it
times one round for each line of standard input (a number of seconds), answers each with
the figures of that round (mean ms, best ms, steps, MiB), and exits when its input ends.
Without PyTorch it is a skip (77), or a failure under CI=true, where setup installs it.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TORCH_PYTHON = "/usr/bin/python3"


def main():
    if subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIPPED: PyTorch is not installed for {TORCH_PYTHON} (scripts/setup installs python3-torch)")
        return 1 if os.environ.get("CI") == "true" else 77
    text = Path(os.environ.get("TMPDIR", "/tmp")) / f"torch-peer-rounds-{os.getpid()}.txt"
    text.write_bytes(bytes(range(256)) * 8)
    failures = []
    try:
        for mode in ("forward", "gradient"):
            done = subprocess.run(
                [TORCH_PYTHON, str(ROOT / "bench" / "torch_train_peer.py"), "--model", "tiny", "--text", str(text),
                 "--mode", mode, "--rounds"],
                input="0.05\n0.02\n0.05\n", capture_output=True, text=True, timeout=120)
            lines = done.stdout.splitlines()
            print(f"{mode}: exit {done.returncode}, {lines}")
            if done.returncode != 0:
                failures.append(f"{mode}: the peer should exit 0 when its input ends: {done.stderr[-500:]}")
                continue
            if len(lines) != 4 or not lines[0].startswith("torch "):
                failures.append(f"{mode}: want the torch line and one line a round (3), got {len(lines)} lines")
                continue
            for line in lines[1:]:
                mean, best, steps, mib = (float(x) for x in line.split())
                if not (0 < best <= mean and steps >= 3 and mib >= 0):
                    failures.append(f"{mode}: a round's figures should be mean >= best > 0, 3 steps or more: {line}")
    finally:
        text.unlink()
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
