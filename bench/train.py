"""bench/train: the training step time of gpt-tiny, gpt-small and gpt-large (bench/gpt.sx)
in SexpGPU and in PyTorch (bench/torch_train_peer.py), on 1 and on 2 threads, in one run,
as ratios.

  /usr/bin/python3 bench/train.py [--program build/sexpgpu] [--openblas DIR]
                                  [--models tiny,small,large] [--threads 1,2] [--quick]
                                  [--rounds N]

SexpGPU: `sexpgpu run` of bench/gpt.sx (copied into a temporary folder beside the text it
trains on) with --cpu-cores N for WARMUP + K steps, a log line a step. A line's steps/s
is the rate of the loop so far (after the compile, data waits included), so it gives the
time from the loop's start to that step; the mean steady-state step is the time between
the warmup's last step and the run's last, over K. The first steps' one-time work (the
optimizer's state filling its pages, say) is left out, as PyTorch's warmup is left out of
its mean.

PyTorch: the same model, the same optimizer, the mean time of a step after a warmup, on
N threads: on 1, one thread for both its pools; on 2, each of its thread settings
(TORCH_SETTINGS: OpenBLAS's and PyTorch's pools in the combinations that do not fight),
the fastest kept, in a process of its own per setting. PyTorch runs the
BLAS its libblas.so.3 is, which scripts/setup makes OpenBLAS (libopenblas0-pthread); on
the netlib reference BLAS, which would flatter SexpGPU, the peer refuses and no ratio is
given (torch_blas.py). --openblas DIR runs PyTorch on the OpenBLAS in DIR (a folder holding
its libblas.so.3, e.g. an unpacked libopenblas0-pthread) through LD_LIBRARY_PATH, where it
is not the system's. OPENBLAS_CORETYPE is dropped from PyTorch's environment (see
torch_train_peer.py).

The two take turns, --rounds N times (3; 1 with --quick): a SexpGPU run, then PyTorch's
settings, and again, so that a host that slows down for a while slows both. A row gives
the median of each side's rounds, the median of the rounds' ratios, and the range of those
ratios, which says how steady the host was.

The load average is printed before and after: a figure measured on a busy machine says so.
The first line names the host (cpuid's model name, the instruction sets it runs, the
kernels the cpu device takes), and a last column gives the floor: the time the step's
matrix products alone would take at the peak of the instruction that multiplies them on
this host, and that time over PyTorch's. build/bench/forward --floors gives both (a
training step's products are its gradient's, which that program traces); where it is
not built the column is "-".
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON = "/usr/bin/python3"
# model: (gpt.sx's variant or knobs, the K steps timed by default and with --quick)
MODELS = {
    "tiny": ([], 300, 10),
    "small": (["--variant", "small"], 10, 3),
    "large": (["--knob", "width=768", "--knob", "depth=12", "--knob", "heads=12", "--knob", "window=128",
               "--knob", "rows=1"], 10, 2),
}


def write_text(path, size=1 << 18):
    """Deterministic text-like bytes: words from a small vocabulary, lines of them."""
    rng = random.Random(1)
    words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(1, 9)))
             for _ in range(2000)]
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + ".\n"
        out.append(line)
        n += len(line)
    with open(path, "w") as f:
        f.write("".join(out)[:size])


WARMUP = 2  # steps of a run left out of its mean


def sexpgpu_ms(program, run_file, choices, steps, cores, where, launcher=(), env=None):
    """The mean ms of a steady-state step: WARMUP + steps steps, logged at each, and the
    loop's time at the last step less its time at the warmup's last, over steps. The
    program runs under `launcher` (mpirun and its options, say), when given."""
    location = tempfile.mkdtemp(dir=where, prefix="loc-")
    total = WARMUP + steps
    command = [*launcher, program, "run", run_file, "--steps", str(total), "--checkpoint-dir", location,
               "--cpu-cores", str(cores), "--knob", "log-every=1"] + choices
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    shutil.rmtree(location)
    # The loop's seconds at each logged step: its steps over the line's steps/s.
    seconds = {int(done): int(done) / float(rate)
               for done, rate in re.findall(r"step (\d+)/\d+ .*?([\d.]+) steps/s", out)}
    if WARMUP not in seconds or total not in seconds:
        raise SystemExit(f"bench/train: the run's log has no line for step {WARMUP} or {total}:\n{out}")
    return 1e3 * (seconds[total] - seconds[WARMUP]) / steps


# PyTorch's thread settings on N threads: (OpenBLAS threads, PyTorch threads,
# OMP_WAIT_POLICY=passive). On 2 cores its two pools (OpenBLAS's and OpenMP's), both
# spinning by default, fight over the cores; each setting is tried and the fastest kept.
TORCH_SETTINGS = {1: [(1, 1, False)], 2: [(2, 2, False), (2, 2, True), (2, 1, False)]}


def torch_ms(model, text, seconds, blas_dir, threads_wanted):
    """The best ms per step over PyTorch's settings on threads_wanted threads, with a
    description, or (None, why)."""
    best = None
    for blas_threads, threads, passive in TORCH_SETTINGS[threads_wanted]:
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
        if passive:
            env["OMP_WAIT_POLICY"] = "passive"
        if blas_dir:
            env["LD_LIBRARY_PATH"] = blas_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        done = subprocess.run([TORCH_PYTHON, os.path.join(HERE, "torch_train_peer.py"), "--model", model,
                               "--text", text, "--threads", str(threads), "--seconds", str(seconds)],
                              env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        lines = done.stdout.strip().splitlines()
        if lines and lines[0].startswith("refuse"):
            return None, lines[0][len("refuse "):]
        header, value = lines[:2]
        ms = float(value.split()[0])
        blas = header.split(" blas ")[1].split()[0]
        if best is None or ms < best[0]:
            best = (ms, f"OpenBLAS {blas_threads}, torch {threads}{', passive' if passive else ''}, {blas}")
    return best


def floors(program, models, threads):
    """The host's line and {(model, threads): floor ms} from bench/forward --floors beside
    `program`, or (a note, {}) where it cannot run."""
    forward = os.path.join(os.path.dirname(os.path.abspath(program)), "bench", "forward")
    if not os.access(forward, os.X_OK):
        return f"host: ? ({forward} is not built: no floors)", {}
    done = subprocess.run([forward, "--floors", "--models", models, "--passes", "gradient", "--threads", threads,
                           "--precision", "f32"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"host: ? (bench/forward --floors failed: {done.stderr.strip()[-200:]})", {}
    lines = done.stdout.splitlines()
    found = {}
    for line in lines[1:]:
        _, model, _, _, count, ms = line.split()
        if ms != "-":
            found[(model, int(count))] = float(ms)
    return lines[0], found


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default=os.path.join(HERE, "..", "build", "sexpgpu"))
    ap.add_argument("--openblas", help="a folder holding OpenBLAS's libblas.so.3, where it is not the system's")
    ap.add_argument("--models", default="tiny,small,large")
    ap.add_argument("--threads", default="1,2", help="the thread counts to time, of 1 and 2")
    ap.add_argument("--quick", action="store_true", help="fewer steps: a smoke test, not a figure")
    ap.add_argument("--rounds", type=int, help="turns of SexpGPU then PyTorch (3; 1 with --quick)")
    args = ap.parse_args()
    rounds = max(1, args.rounds or (1 if args.quick else 3))
    host, floor_of = floors(args.program, args.models, args.threads)
    print(host, flush=True)
    print(f"load average before: {load()}  ({os.cpu_count()} cores)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-train-") as where:
        run_file = os.path.join(where, "gpt.sx")
        shutil.copy(os.path.join(HERE, "gpt.sx"), run_file)
        text = os.path.join(where, "text.txt")
        write_text(text)
        for model in args.models.split(","):
            choices, k, quick_k = MODELS[model]
            for threads in (int(t) for t in args.threads.split(",")):
                mine, theirs, ratios, setting = [], [], [], ""
                for _ in range(rounds):
                    mine.append(sexpgpu_ms(args.program, run_file, choices, quick_k if args.quick else k, threads,
                                           where))
                    ms, setting = torch_ms(model, text, 1.0 if args.quick else 5.0, args.openblas, threads)
                    if ms:
                        theirs.append(ms)
                        ratios.append(mine[-1] / ms)
                ratio = (f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios
                         else "-")
                peer = f"{statistics.median(theirs):.1f}" if theirs else "-"
                floor = floor_of.get((f"gpt-{model}", threads))
                floor_column = "-" if floor is None else (
                    f"{floor:.1f} ({floor / statistics.median(theirs):.2f})" if theirs else f"{floor:.1f}")
                rows.append((f"gpt-{model}", str(threads), f"{statistics.median(mine):.1f}", f"{peer} ({setting})",
                             ratio, floor_column))
                print("  ".join(rows[-1]), flush=True)
    print(f"load average after: {load()}")
    print()
    print("| model | threads | SexpGPU ms/step | PyTorch ms/step | SexpGPU / PyTorch (range) | floor ms (ratio) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
