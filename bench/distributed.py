"""bench/distributed: what data-parallel training costs and what it buys (docs/distributed.md).

  python3 bench/distributed.py [--program build/sexpgpu] [--steps K] [--micro-batches M]
                               [--rounds R]

A GPT over bytes (bench/gpt.sx, width 128, 2 blocks, 64 bytes a row, a global batch of 16
rows) trained for WARMUP + K steps, each run on one core (--cpu-cores 1), as:

  fused            one worker, today's step: one program on the whole batch
  micro x1         one worker, the step split into a gradient and an update program
  micro xM         one worker, M micro-batches a step (the gradients summed in the tree)
  2 workers xM     mpirun -np 2, M micro-batches, each worker half of them

The runs take turns, R rounds (3) of all of them, so that a host that slows down for a
while slows each; a row gives the best and the median over the rounds of the mean ms
of a steady-state step (bench/train.py's measure), and the best over the fused step's
best: on a host other work shares, the best is the least disturbed. The micro-batches' cost is `micro xM` over `fused`. Below, the
gradient's size (4 bytes a trainable parameter) and the bytes each worker sends a step in
the exchange (2 (N-1)/N of the gradient, docs/distributed.md's cost model), with the
time the model predicts for them at 10 and 100 Gbit/s and the speed-up it predicts on 8
and 64 machines for this model.

On a host of 2 cores shared with other work the 2-worker row measures the exchange and
the split more than a speed-up: each worker has one core, and mpirun's workers poll while
they wait. Needs Open MPI's mpirun for the last row (skipped without it).
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train as train_bench  # noqa: E402  (bench/train.py: the step-time measure and the text)

KNOBS = ["--knob", "width=128", "--knob", "depth=2", "--knob", "window=64", "--knob", "rows=16"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run_file(where, micro_rows):
    """bench/gpt.sx whose prepare takes the rows it is given (a micro-batch's), with
    `:micro-batch micro_rows` when given."""
    text = open(os.path.join(HERE, "gpt.sx")).read()
    text = text.replace("(let ((ids (field batch :ids)))", "(let* ((ids (field batch :ids)) (rows (first (shape ids))))")
    if micro_rows:
        text = text.replace(":batch rows", f":batch rows :micro-batch {micro_rows}")
    path = os.path.join(where, f"gpt-{micro_rows or 'fused'}.sx")
    with open(path, "w") as f:
        f.write(text)
    return path


def trainable_floats(program, path, where):
    """The trainable parameters of the run file: the numbers in a checkpoint's params."""
    location = os.path.join(where, "count")
    subprocess.run([program, "run", path, "--steps", "1", "--checkpoint-dir", location, *KNOBS], check=True,
                   capture_output=True)
    with open(os.path.join(location, "step-00000001", "params.safetensors"), "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    shutil.rmtree(location)
    count = 0
    for name, entry in header.items():
        if name != "__metadata__":
            n = 1
            for d in entry["shape"]:
                n *= d
            count += n
    return count


def predicted_speedup(step_ms, gradient_bytes, workers, gbits):
    """The cost model: N workers each compute 1/N of the batch, then send and receive
    2 (N-1)/N of the gradient's bytes at the link's rate."""
    exchange_ms = 2 * (workers - 1) / workers * gradient_bytes * 8 / (gbits * 1e9) * 1e3
    return step_ms / (step_ms / workers + exchange_ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", default=os.path.join(HERE, "..", "build", "sexpgpu"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    program = os.path.abspath(args.program)
    rows = 16
    micro_rows = rows // args.micro_batches
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as where:
        train_bench.write_text(os.path.join(where, "text.txt"))
        files = {"fused": run_file(where, None), "one": run_file(where, rows), "micro": run_file(where, micro_rows)}

        def ms(name, launcher=()):
            return train_bench.sexpgpu_ms(program, files[name], KNOBS, args.steps, 1, where, launcher=launcher,
                                          env=MPI_ENV)

        runs = [("fused", "fused", ()), ("micro x1", "one", ()), (f"micro x{args.micro_batches}", "micro", ())]
        if shutil.which("mpirun"):
            runs.append((f"2 workers x{args.micro_batches}", "micro", ("mpirun", "--oversubscribe", "-np", "2")))
        rounds = [{label: ms(name, launcher) for label, name, launcher in runs} for _ in range(args.rounds)]
        floats = trainable_floats(program, files["fused"], where)
    results = [(label, min(r[label] for r in rounds), statistics.median(r[label] for r in rounds))
               for label, _, _ in runs]
    fused = results[0][1]
    print(f"gpt width 128, 2 blocks, window 64, batch {rows}; {args.steps} steps after {train_bench.WARMUP}, "
          f"{args.rounds} rounds; one core a worker; load {os.getloadavg()[0]:.2f}")
    print("| run | best ms/step | median ms/step | best / fused's best |")
    print("| --- | ---: | ---: | ---: |")
    for name, best, median in results:
        print(f"| {name} | {best:.2f} | {median:.2f} | {best / fused:.3f} |")
    gradient = 4 * floats
    print(f"\ngradient: {floats} f32 = {gradient / 1e6:.2f} MB; each worker sends a step, by workers:")
    print("| workers | sent MB/step | at 10 Gbit/s ms | at 100 Gbit/s ms | speed-up at 10 | at 100 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (2, 8, 64):
        sent = 2 * (n - 1) / n * gradient
        print(f"| {n} | {sent / 1e6:.2f} | {sent * 8 / 10e9 * 1e3:.3f} | {sent * 8 / 100e9 * 1e3:.4f} | "
              f"{predicted_speedup(fused, gradient, n, 10):.1f} | {predicted_speedup(fused, gradient, n, 100):.1f} |")


if __name__ == "__main__":
    sys.exit(main())
