#!/usr/bin/env python3
"""bench/cuda_train's tiny model on the cpu device, as CI can run it: its table's JSON has
our step (a finite loss that falls, the tiny model's tied parameters, llm.c's FLOP count),
PyTorch's row (figures, or why it could not time), and llm.c's constant row; a bad choice
is refused with usage.

  cuda_train_test.py PROGRAM    (build/bench/cuda_train)
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The tiny model (vocabulary 512, width 64, 2 blocks, context 64): its token table serves
# the head too, so no [64 512] head is counted.
TINY_PARAMETERS = 512 * 64 + 64 * 64 + 2 * (4 * 64 + 64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64) \
    + 2 * 64
LLMC_TOKENS_PER_S = 524288 / 0.140 / 8
PEER_PYTHON = os.environ.get("SEXPGPU_TORCH_PYTHON") or "/usr/bin/python3"  # as bench/cuda_train chooses it


def main():
    program = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as where:
        out = Path(where) / "cuda-train.json"
        done = subprocess.run([program, "--device", "cpu", "--model", "tiny", "--batch", "2", "--seconds", "0.5",
                               "--json", str(out)], capture_output=True, text=True, timeout=120)
        print(done.stdout, done.stderr)
        if done.returncode != 0 or not out.exists():
            return print(f"FAIL: exit {done.returncode}, no JSON") or 1
        report = json.loads(out.read_text())
    sides = {side["side"]: side for side in report["sides"]}
    if report["parameters"] != TINY_PARAMETERS:
        failures.append(f"want {TINY_PARAMETERS} parameters (the head tied to the table), got {report['parameters']}")
    if report["rows"] != 2 or report["window"] != 64:
        failures.append(f"want --batch 2 rows of 64 tokens, got {report['rows']} x {report['window']}")
    tokens = report["rows"] * report["window"]
    flops = tokens * (6 * TINY_PARAMETERS + 12 * 2 * 64 * 64)
    if abs(report["flops_per_step"] - flops) > 1e-6 * flops:
        failures.append(f"want llm.c's count, {flops} FLOPs a step, got {report['flops_per_step']}")
    ours = sides.get("SexpGPU", {})
    if not ours.get("ms_per_step") or abs(ours["tokens_per_s"] * ours["ms_per_step"] / 1e3 - tokens) > 1e-6 * tokens:
        failures.append(f"want our step's ms and its tokens/s, got {ours}")
    first, last = (float(x) for x in ours.get("note", "loss nan -> nan").split()[1::2])
    if not last < first:
        failures.append(f"want the loss to fall over the steps, got {ours.get('note')}")
    peer = sides.get("PyTorch")
    # Where the peer's Python has PyTorch, the row has its figures; else it says why not.
    has_torch = subprocess.run([PEER_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
    if not peer or not (peer["ms_per_step"] if has_torch else peer["note"]):
        failures.append(f"want PyTorch's row, {'its figures' if has_torch else 'why it has none'}, got {peer}")
    llmc = sides.get("llm.c", {})
    if abs((llmc.get("tokens_per_s") or 0) - LLMC_TOKENS_PER_S) > 1:
        failures.append(f"want llm.c's {LLMC_TOKENS_PER_S:.0f} tokens/s, got {llmc}")
    if report["peak_tflops"] is not None or any(side["mfu"] for side in sides.values()):
        failures.append("want no peak and no utilization on the cpu")
    bad = subprocess.run([program, "--model", "gpt3"], capture_output=True, text=True)
    if bad.returncode != 2 or "--model is gpt2 or tiny" not in bad.stderr:
        failures.append(f"want --model gpt3 refused with exit 2, got {bad.returncode}: {bad.stderr}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
