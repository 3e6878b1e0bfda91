#!/usr/bin/env python3
"""The end-to-end checks scripts/gpu-check runs on a GPU with the packed `sexpgpu`:

  gpu_e2e.py SEXPGPU --device cuda --work DIR --json FILE CHECK...

Each CHECK is recorded in FILE (a JSON object: check -> status, message, seconds) as it
starts ("running") and as it ends (passed, failed or skipped, with why), so a check cut
short by its timeout still leaves its name. The checks:

  same_checkpoints  two runs of examples/tiny-lm, a few steps on DEVICE: the same bytes
  row_invariance    its model served with --batch 64: each row's answer alone, among 8
                    calls and among 64, the same bits
  clients           16 clients at once, 4 rounds: each answer the bits of its call alone
  other_device      the checkpoint trained on DEVICE resumes on cpu and serves there, and
                    one trained on cpu resumes on DEVICE
  memcheck, racecheck
                    compute-sanitizer's tool on two training steps (skipped where the
                    machine has no compute-sanitizer)

With --device cpu the same checks run on the cpu device (the sanitizer's skipped), so
their clients, comparisons and records are tested where there is no GPU (CTest gpu.e2e_cpu).
Python's standard library only: the GPU machine has python3 and nothing to install.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STEPS = 4
CHECKS = ("same_checkpoints", "row_invariance", "clients", "other_device", "memcheck", "racecheck")


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


class Checks:
    def __init__(self, sexpgpu, device, work):
        self.sexpgpu, self.device, self.work = sexpgpu, device, work
        # The device checkpoints move to and from: the cpu, also when it is the one under
        # check (the moves then run where there is no GPU).
        self.other = "cpu"

    def run(self, args, timeout=120, prefix=()):
        proc = subprocess.run([*prefix, self.sexpgpu, *args], capture_output=True, timeout=timeout,
                              env=dict(os.environ, NO_COLOR="1"))
        out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
        return proc.returncode, out, err

    def run_file(self):
        """examples/tiny-lm's run file in the work folder, without its :after (80 forward
        calls of growing length, each a program of its own)."""
        path = os.path.join(self.work, "tiny-lm", "run.sx")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            text = open(os.path.join(ROOT, "examples", "tiny-lm", "run.sx")).read()
            text, removed = re.subn(r'\n\s*:after \(lambda \(\) \(print \(sample "The keeper" 80\)\)\)\)', ")", text)
            expect(removed == 1, "examples/tiny-lm/run.sx: its :after line was not found")
            open(path, "w").write(text)
            shutil.copy(os.path.join(ROOT, "examples", "tiny-lm", "text.txt"), os.path.dirname(path))
        return path

    def train(self, location, device, steps=STEPS):
        rc, out, err = self.run(["run", self.run_file(), "--device", device, "--steps", str(steps),
                                 "--checkpoint-dir", location])
        unusable(err)
        expect(rc == 0, f"sexpgpu run --device {device}: exit {rc}\n{out[-1500:]}\n{err[-1500:]}")
        return newest(location)

    def trained(self):
        """A location of tiny-lm trained on the device under check (trained once, shared)."""
        location = os.path.join(self.work, f"trained-{self.device}")
        return newest(location) if glob.glob(os.path.join(location, "step-*")) else self.train(location, self.device)

    # --- the checks --------------------------------------------------------------------

    def same_checkpoints(self):
        first = self.train(os.path.join(self.work, f"trained-{self.device}"), self.device)
        second = self.train(os.path.join(self.work, "second"), self.device)
        names = sorted(os.listdir(first))
        expect(names == sorted(os.listdir(second)), f"the checkpoints hold other files: {names}")
        differ = [n for n in names if file_bytes(os.path.join(first, n)) != file_bytes(os.path.join(second, n))]
        expect(not differ, f"two runs of {STEPS} steps differ in {differ}")
        return f"{STEPS} steps twice: {len(names)} files, the same bytes ({', '.join(names)})"

    def row_invariance(self):
        with Server(self, self.trained(), self.device, 64) as server:
            alone = [server.call(row) for row in range(64)]
            expect(len(set(alone)) == 64, "64 rows should give 64 different answers")
            for together in (8, 64):
                answers = server.at_once(range(together))
                differ = [row for row in range(together) if answers[row] != alone[row]]
                expect(not differ, f"rows {differ} among {together}: not the bits of the row alone")
            calls, runs = server.stop()
        expect(runs < calls, f"{calls} calls ran in {runs} runs: no call ran beside another")
        return f"64 rows alone, among 8 and among 64: the same bits ({calls} calls in {runs} runs)"

    def clients(self):
        with Server(self, self.trained(), self.device, 16) as server:
            alone = [server.call(row) for row in range(16)]
            for round_ in range(4):
                answers = server.at_once(range(16))
                differ = [i for i in range(16) if answers[i] != alone[i]]
                expect(not differ, f"round {round_}: clients {differ} got answers other than their call's alone")
            calls, runs = server.stop()
        return f"16 clients, 4 rounds: each its call's bits ({calls} calls in {runs} runs)"

    def other_device(self):
        here = self.trained()
        with Server(self, here, self.device, 1) as server:
            ours = floats(server.call(0))
        moved = os.path.join(self.work, "moved")
        shutil.rmtree(moved, ignore_errors=True)
        shutil.copytree(os.path.dirname(here), moved)
        resumed = self.train(moved, self.other, STEPS + 2)
        expect(resumed.endswith(f"step-{STEPS + 2:08d}"), f"resumed on {self.other} to {resumed}")
        with Server(self, here, self.other, 1) as server:
            theirs = floats(server.call(0))
        gap = max(abs(a - b) for a, b in zip(ours, theirs))
        scale = max(abs(a) for a in ours)
        expect(len(ours) == len(theirs) and gap <= 1e-3 * scale + 1e-4,
               f"the checkpoint served on {self.other} is {gap} from {self.device}'s answer (largest {scale})")
        back = self.train(os.path.join(self.work, "from-other"), self.other)
        resumed_back = self.train(os.path.dirname(back), self.device, STEPS + 2)
        expect(resumed_back.endswith(f"step-{STEPS + 2:08d}"), f"resumed on {self.device} to {resumed_back}")
        return (f"trained on {self.device}, resumed on {self.other} to step {STEPS + 2} and served there "
                f"(at most {gap:.3g} from {self.device}'s answer); trained on {self.other}, resumed on {self.device}")

    def sanitizer(self, tool):
        if self.device != "cuda":
            raise Skip(f"compute-sanitizer checks the cuda device; this run checks {self.device}")
        found = glob.glob("/usr/local/cuda*/bin/compute-sanitizer") + glob.glob("/opt/nvidia/**/compute-sanitizer",
                                                                                 recursive=True)
        program = shutil.which("compute-sanitizer") or next(iter(sorted(found)), None)
        if program is None:
            raise Skip("this machine has no compute-sanitizer "
                       "(not on PATH, in /usr/local/cuda*/bin nor under /opt/nvidia)")
        location = os.path.join(self.work, tool)
        rc, out, err = self.run(["run", self.run_file(), "--device", "cuda", "--steps", "2", "--checkpoint-dir",
                                 location], timeout=600,
                                prefix=(program, "--tool", tool, "--error-exitcode", "9", "--print-limit", "20"))
        unusable(err)
        said = (out + err)[-3000:]
        # The tool's own lines start with "=========": a GPU it does not support, a machine
        # that does not let it attach.
        refused = re.search(r"^=+ .*(not supported|unable to|permission denied)", said, re.I | re.M)
        if rc not in (0, 9) and refused:
            raise Skip(f"compute-sanitizer --tool {tool} refused: exit {rc}\n{said}")
        expect(rc == 0, f"compute-sanitizer --tool {tool}: exit {rc}\n{said}")
        summary = [line for line in said.splitlines() if "ERROR SUMMARY" in line or "RACECHECK SUMMARY" in line]
        return f"two training steps under {tool}: {'; '.join(summary) or 'no errors'}"

    def memcheck(self):
        return self.sanitizer("memcheck")

    def racecheck(self):
        return self.sanitizer("racecheck")


def unusable(err):
    """A Skip where the device was refused for want of a usable GPU (E-DEVICE-006), with its reason."""
    for line in err.splitlines():
        if "E-DEVICE-006" in line:
            raise Skip(line.strip())


def newest(location):
    steps = sorted(glob.glob(os.path.join(location, "step-*")))
    expect(steps, f"no checkpoint in {location}")
    return steps[-1]


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def floats(answer):
    return struct.unpack(f"<{(len(answer) - 1) // 4}f", answer[1:])


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise Failure(f"the server closed the connection after {len(data)} of {n} bytes")
        data += chunk
    return data


class Connection:
    """One client of docs/serving.md's protocol: 8-byte little-endian lengths, then the bytes."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(60)
        self.s.connect(path)
        self.about = json.loads(self.frame())

    def frame(self):
        (n,) = struct.unpack("<Q", recv_exact(self.s, 8))
        return recv_exact(self.s, n)

    def call(self, body):
        self.s.sendall(struct.pack("<Q", len(body)) + body)
        answer = self.frame()
        expect(answer[:1] == b"\x00", f"an error answer: {answer[:300]!r}")
        return answer

    def close(self):
        self.s.close()


class Server:
    """`sexpgpu serve` of a checkpoint on a socket in the work folder, for a `with` block."""

    def __init__(self, checks, checkpoint, device, batch):
        self.sock = os.path.join(checks.work, f"{device}-{batch}.sock")
        self.proc = subprocess.Popen([checks.sexpgpu, "serve", checkpoint, "--socket", self.sock, "--device", device,
                                      "--batch", str(batch)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, NO_COLOR="1"), bufsize=0)
        self.first_line = self.proc.stdout.readline().decode()
        if not self.first_line.startswith("serving "):
            out, err = self.proc.communicate(timeout=60)
            unusable(err.decode())
            raise Failure(f"sexpgpu serve --device {device} did not start: exit {self.proc.returncode}\n"
                          f"{self.first_line}{out.decode()[-1500:]}\n{err.decode()[-1500:]}")
        client = Connection(self.sock)
        self.inputs = client.about["inputs"]
        client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def body(self, row):
        """Row `row`'s call: each i32 input's elements, a different byte sequence per row."""
        parts = []
        for spec in self.inputs:
            expect(spec["dtype"] == "i32", f"the served model takes {spec}: the checks send i32 inputs only")
            count = 1
            for n in spec["shape"]:
                count *= n
            parts.append(struct.pack(f"<{count}i", *[(row * 31 + k * 7) % 256 for k in range(count)]))
        return b"".join(parts)

    def call(self, row):
        client = Connection(self.sock)
        try:
            return client.call(self.body(row))
        finally:
            client.close()

    def at_once(self, rows):
        """Each row's answer, the calls sent together by one client each, after a barrier."""
        rows = list(rows)
        clients = [Connection(self.sock) for _ in rows]
        answers, errors = [None] * len(rows), []
        barrier = threading.Barrier(len(rows))

        def send(i):
            try:
                barrier.wait()
                answers[i] = clients[i].call(self.body(rows[i]))
            except Exception as e:  # noqa: BLE001  (reported below, with the others)
                errors.append(f"client {i}: {e}")

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(rows))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in clients:
            c.close()
        expect(not errors, "; ".join(errors[:4]))
        return answers

    def stop(self):
        """(calls, runs) from the stop line."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        last = (self.first_line + out.decode()).splitlines()[-1]
        m = re.search(r"(\d+) calls in .*?(\d+) runs", last)
        expect(m, f"no stop line: {last!r}\n{err.decode()[-1000:]}")
        return int(m.group(1)), int(m.group(2))


def record(path, check, entry):
    """Sets `check`'s entry in the JSON file at `path`, replacing the file at once."""
    try:
        with open(path) as f:
            results = json.load(f)
    except (OSError, ValueError):
        results = {}
    results[check] = entry
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sexpgpu")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--work", help="a folder for the runs, checkpoints and sockets (default: a temporary one)")
    parser.add_argument("--json", required=True, help="the file the checks are recorded in")
    parser.add_argument("checks", nargs="+", choices=CHECKS, metavar="CHECK")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or temporary
        os.makedirs(work, exist_ok=True)
        failed = run_checks(Checks(os.path.abspath(args.sexpgpu), args.device, work), args)
    sys.exit(1 if failed else 0)


def run_checks(checks, args):
    """Runs and records each check; whether one failed."""
    failed = False
    for name in args.checks:
        check = getattr(checks, name)
        start = time.monotonic()
        record(args.json, name, {"status": "running", "device": args.device})
        try:
            entry = {"status": "passed", "message": check()}
        except Skip as e:
            entry = {"status": "skipped", "message": str(e)}
        except (Failure, OSError, subprocess.SubprocessError, ValueError) as e:
            said = str(e) if isinstance(e, Failure) else f"{type(e).__name__}: {e}"
            entry = {"status": "failed", "message": said}
            failed = True
        entry.update(device=args.device, seconds=round(time.monotonic() - start, 1))
        record(args.json, name, entry)
        print(f"{name}: {entry['status']}: {entry['message']}", flush=True)
    with open(args.json) as f:
        recorded = json.load(f)
    unrecorded = [name for name in args.checks if recorded.get(name, {}).get("status") in (None, "running")]
    if unrecorded:
        print(f"{args.json} lacks the results of {unrecorded}", flush=True)
    return failed or bool(unrecorded)


if __name__ == "__main__":
    main()
