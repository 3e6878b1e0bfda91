#!/usr/bin/env python3
"""End-to-end tests of data-parallel runs (docs/distributed.md): `mpirun -np N sexpgpu run`
over loopback gives the bits of one worker, run after run; a run resumes with another
number of workers; a batch the workers cannot split is refused; a guard failing on one
worker stops them all; a worker killed stops the run within 10 s, and its last
checkpoint resumes.

Each case is one CTest test, e2e.distributed_<case>: `distributed_test.py SEXPGPU CASE`.
Without mpirun, or a sexpgpu built without libsexpgpu-mpi.so, a case exits 77 (a skip),
or 1 under CI=true, since scripts/setup installs Open MPI.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import e2e_test
from e2e_test import TRAIN_FILE, checkpoint_bytes, expect, run, train, training_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def replaced(text, *pairs):
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


# e2e_test's tiny language model, its prepare taking the rows it is given (a
# micro-batch's), a counter, and a global batch of 8 rows in 4 micro-batches of 2.
RUN_FILE = replaced(
    TRAIN_FILE,
    (b"(let ((ids (field batch :ids)))\n    (list :inputs (slice ids [0 0] [4 8]) :targets (slice ids [0 1] [4 9]))))",
     b"(let* ((ids (field batch :ids)) (rows (first (shape ids))))\n"
     b"    (list :inputs (slice ids [0 0] [rows 8]) :targets (slice ids [0 1] [rows 9]))))"),
    (b"  (cross-entropy logits", b"  (counter :rows (first (shape logits)))\n  (cross-entropy logits"),
    (b":batch 4 :steps 12", b":batch 8 :micro-batch 2 :steps 6"),
    (b":checkpoint-every 3 :keep 10 :log-every 4", b":checkpoint-every 3 :keep 10 :log-every 3"),
    (b":every 6 :batches 2", b":every 3 :batches 1"))


def mpi_env():
    # Open MPI refuses to run as root without these; set here, for the test alone.
    env = dict(os.environ, NO_COLOR="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Open MPI leaves its own allocations (and those of the plugins it unloads) unfreed at
    # exit; under AddressSanitizer the workers' leak check would report them, not ours. The
    # runs without mpirun keep it.
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return env


def mpirun_args(workers, args):
    return ["mpirun", "--oversubscribe", "-np", str(workers), e2e_test.SEXPGPU, "run", *args]


def require_mpi():
    library = os.path.join(os.path.dirname(e2e_test.SEXPGPU), "libsexpgpu-mpi.so")
    missing = ("mpirun is not on PATH" if not shutil.which("mpirun") else
               f"{library} was not built (no MPI when configured)" if not os.path.exists(library) else None)
    if missing is None:
        return
    setup = os.path.join(ROOT, "scripts", "setup")
    installs = os.path.exists(setup) and "openmpi-bin" in open(setup).read()
    why = f"{missing} (apt-get install openmpi-bin libopenmpi-dev); scripts/setup " + (
        "installs it, so under CI this is a failure" if installs else "does not install it")
    if os.environ.get("CI") == "true" and installs:
        raise e2e_test.Failure(why)
    raise e2e_test.Skip(why)


def run_workers(workers, args, timeout=120):
    require_mpi()
    proc = subprocess.run(mpirun_args(workers, args), capture_output=True, env=mpi_env(),
                          timeout=timeout * e2e_test.TIME_SCALE)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def train_workers(workers, args):
    rc, out, err = run_workers(workers, args)
    expect(rc == 0, f"mpirun -np {workers} sexpgpu run {' '.join(args)}: exit {rc}", out, err)
    return out


def logged(location, drop=("tokens/s", "workers")):
    """metrics.jsonl's lines, without what depends on the number of workers."""
    with open(os.path.join(location, "metrics.jsonl")) as f:
        return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in f]


def case_same_bits(tmp):
    """2 workers, their rerun, 4 workers and one worker alone: the same checkpoints bit for
    bit, the same losses, metrics, counters and :eval numbers."""
    require_mpi()
    run_file = training_dir(tmp, text=RUN_FILE)
    alone = os.path.join(tmp, "alone")
    out = train([run_file, "--checkpoint-dir", alone])
    expect("(1 worker, 4 micro-batches of 2)" in out, "the first line names the workers and micro-batches", out)
    for name, workers in [("two", 2), ("two-again", 2), ("four", 4)]:
        location = os.path.join(tmp, name)
        out = train_workers(workers, [run_file, "--checkpoint-dir", location])
        expect(out.count(f": 6 steps of batch 8 ({workers} workers, 4 micro-batches of 2) on cpu") == 1,
               "the first line, printed once", out)
        expect(out.count("\ntrained ") == 1, "one worker reports", out)
        for step in (3, 6):
            expect(checkpoint_bytes(location, step) == checkpoint_bytes(alone, step),
                   f"{workers} workers' step {step} differs from one worker's")
        expect(logged(location) == logged(alone), f"{workers} workers' metrics.jsonl differs",
               json.dumps(logged(location)[:2]), json.dumps(logged(alone)[:2]))
    lines = logged(os.path.join(tmp, "four"), drop=())
    expect(lines[0]["batch"] == 8 and lines[0]["workers"] == 4 and lines[0]["tokens/s"] > 0
           and lines[2]["rows"] == 24 and "val/loss" in lines[2], "metrics.jsonl's line", json.dumps(lines[2]))
    # A checkpoint of several workers is any checkpoint to the other commands.
    rc, out, err, _ = run(["evaluate", run_file, "--checkpoint", os.path.join(tmp, "two")])
    expect(rc == 0 and "val:  loss " in out, "evaluate on a 2-worker checkpoint", out, err)
    print("ok: 1, 2 (twice) and 4 workers, the same bits")


def case_resume(tmp):
    """A run checkpointed by 2 workers resumes alone, and one checkpointed alone resumes on 2
    workers: both reach the unbroken run's bits."""
    require_mpi()
    run_file = training_dir(tmp, text=RUN_FILE)
    unbroken = os.path.join(tmp, "unbroken")
    train([run_file, "--checkpoint-dir", unbroken])
    for first, then in [(2, 1), (1, 2)]:
        location = os.path.join(tmp, f"{first}-then-{then}")
        args = [run_file, "--checkpoint-dir", location]
        if first == 1:
            train(args + ["--steps", "6"])
        else:
            train_workers(first, args)
        # The step-3 checkpoint alone, as a run killed after it would leave it.
        shutil.rmtree(os.path.join(location, "step-00000006"))
        out = train(args) if then == 1 else train_workers(then, args)
        expect(out.startswith("resuming ") and "(step 3 of 6)" in out, "the run resumes at step 3", out)
        expect(checkpoint_bytes(location, 6) == checkpoint_bytes(unbroken, 6), f"{first} then {then} workers differ")
    print("ok: resumed 2 -> 1 and 1 -> 2 workers, the same bits")


def case_refused(tmp):
    """3 workers cannot share 4 micro-batches: refused before the first step, reported once;
    a sexpgpu without its MPI library refused under mpirun; MPI linked by that library alone."""
    require_mpi()
    build = os.path.dirname(e2e_test.SEXPGPU)
    for binary in [e2e_test.SEXPGPU, os.path.join(build, "src", "library", "libsexpgpu.so"),
                   os.path.join(build, "libsexpgpu-mpi.so")]:
        if os.path.exists(binary):
            linked = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
            expect(("libmpi" in linked) == binary.endswith("-mpi.so"), f"{binary}: what it links", linked)
    run_file = training_dir(tmp, text=RUN_FILE)
    location = os.path.join(tmp, "three")
    rc, out, err = run_workers(3, [run_file, "--checkpoint-dir", location])
    expect(rc != 0 and err.count("error[E-RUN-012]") == 1 and "3 workers cannot split a batch of 8 rows" in err,
           "E-RUN-012 from 3 workers", out, err)
    expect(not any(d.startswith("step-") for d in os.listdir(location)) if os.path.isdir(location) else True,
           "no step ran", out, err)
    # Launched by mpirun but without libsexpgpu-mpi.so beside it (or on the loader's path).
    lone = os.path.join(tmp, "bin")
    os.makedirs(lone)
    shutil.copy(e2e_test.SEXPGPU, lone)
    proc = subprocess.run(["mpirun", "-np", "1", os.path.join(lone, "sexpgpu"), "run", run_file],
                          capture_output=True, env=mpi_env(), timeout=60)
    err = proc.stderr.decode(errors="replace")
    expect(proc.returncode != 0 and "error[E-RUN-014]" in err and "libsexpgpu-mpi.so" in err,
           "E-RUN-014 without the MPI library", proc.stdout.decode(), err)
    print("ok: 3 workers refused; no MPI library refused")


def case_guard(tmp):
    """A guard that fails on worker 1's micro-batches alone (at step 0 they start with a
    space; worker 0's do not) stops both workers with its message, reported once."""
    require_mpi()
    guarded = replaced(RUN_FILE, (b"  (cross-entropy logits",
                                  b'  (guard (> (sum (slice (getf prepared :inputs) [0 0] [1 1])) 32) "no leading space")\n'
                                  b"  (cross-entropy logits"))
    run_file = training_dir(tmp, text=guarded)
    rc, out, err = run_workers(2, [run_file, "--checkpoint-dir", os.path.join(tmp, "guarded")], timeout=60)
    expect(rc != 0 and err.count("error[E-RUN-008]") == 1 and "step 0: guard: no leading space" in err,
           "the guard stops both workers", out, err)
    print("ok: a guard failing on one worker stops both")


def case_killed_worker(tmp):
    """kill -9 of one of 2 workers: the run stops within 10 s, mpirun naming the worker; the
    newest checkpoint is whole and resumes (E-RUN-013 is what the survivors say when they
    see the exchange fail before mpirun ends them)."""
    require_mpi()
    run_file = training_dir(tmp, text=RUN_FILE.replace(b":checkpoint-every 3", b":checkpoint-every 2"))
    location = os.path.join(tmp, "killed")
    # Its messages go to a file, not a pipe no one reads while it runs: a full pipe would
    # stop the workers.
    err_file = open(os.path.join(tmp, "killed.stderr"), "w+b")
    proc = subprocess.Popen(mpirun_args(2, [run_file, "--checkpoint-dir", location, "--steps", "100000"]),
                            stdout=subprocess.DEVNULL, stderr=err_file, env=mpi_env())
    deadline = time.monotonic() + 60 * e2e_test.TIME_SCALE
    # Any checkpoint from the second on: older ones are pruned as the run goes, and a fast
    # run may have pruned step 4 before the next look.
    def second_written():
        steps = [int(d[5:]) for d in (os.listdir(location) if os.path.isdir(location) else [])
                 if re.fullmatch(r"step-\d{8}", d)]
        return bool(steps) and max(steps) >= 4

    while not second_written():
        if proc.poll() is not None or time.monotonic() >= deadline:
            proc.kill()
            proc.wait()
            err_file.seek(0)
            expect(False, f"the run writes its second checkpoint (exit {proc.returncode}; written: "
                   f"{sorted(os.listdir(location)) if os.path.isdir(location) else 'nothing'})", "",
                   err_file.read().decode(errors="replace"))
        time.sleep(0.1)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    expect(len(workers) == 2, f"mpirun's workers: {workers}")
    killed_at = time.monotonic()
    os.kill(int(workers[1]), signal.SIGKILL)
    try:
        proc.wait(timeout=10 * e2e_test.TIME_SCALE)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise e2e_test.Failure("the run still runs 10 s after a worker was killed")
    seconds = time.monotonic() - killed_at
    err_file.seek(0)
    err = err_file.read().decode(errors="replace")
    expect(proc.returncode != 0 and ("rank" in err or "E-RUN-013" in err), "a nonzero exit naming the worker", "", err)
    for pid in workers:
        expect(not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z",
               f"worker {pid} is gone")
    newest = max(int(d[5:]) for d in os.listdir(location) if re.fullmatch(r"step-\d{8}", d))
    out = train([run_file, "--checkpoint-dir", location, "--steps", str(newest + 2)])
    expect(f"(step {newest} of {newest + 2})" in out and "\ntrained " in out, "the newest checkpoint resumes", out)
    print(f"ok: stopped {seconds:.2f}s after kill -9; resumed from step {newest}")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "distributed"))
