#!/usr/bin/env python3
"""End-to-end tests of `sexpgpu serve` (docs/serving.md, and the specification's page
"Running a trained model"): a run trained by `sexpgpu run`, served, and talked to over
its socket from Python.

Each case is one CTest test, e2e.serve_<case>: `serve_test.py SEXPGPU CASE`. Each case is
named after the lines of the page it covers. Time limits scale by $SEXPGPU_E2E_TIME_SCALE.
"""

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (its helpers: run, expect, Failure, TRAIN_FILE, training_dir)
from e2e_test import Failure, Skip, expect  # noqa: E402

TIME_SCALE = e2e_test.TIME_SCALE
ROOT = os.environ.get("SEXPGPU_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SEED_PAGE = os.path.join(ROOT, "..", "shared", "seeds", "000_1f6bcd0bc5bcc012.txt")
PAGE_SOCKET = "/tmp/my-model.sock"  # the path the page's client program names


def trained(tmp, steps=3):
    """A location holding checkpoints of the e2e tiny model (inputs [1, 8] i32, output [1, 8, 256])."""
    run_file = e2e_test.training_dir(tmp)
    location = os.path.join(tmp, "run")
    e2e_test.train([run_file, "--checkpoint-dir", location, "--steps", str(steps)])
    return location


class Server:
    """`sexpgpu serve` in the background; stop() signals it and returns (exit code, stdout, stderr)."""

    def __init__(self, operand, sock, *flags):
        self.sock = sock
        env = dict(os.environ, NO_COLOR="1")
        # Unbuffered, so that reading the first line takes nothing more from the pipe than
        # that line: communicate() reads the rest from the pipe itself.
        self.proc = subprocess.Popen([e2e_test.SEXPGPU, "serve", operand, "--socket", sock, *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0)
        # The banner is flushed once the socket listens: its first line says the server is up.
        self.first_line = self.proc.stdout.readline().decode()
        if not self.first_line.startswith("serving "):
            out, err = self.proc.communicate(timeout=30 * TIME_SCALE)
            raise Failure(f"sexpgpu serve did not start: exit {self.proc.returncode}\n"
                          f"{self.first_line}{out.decode()}\n{err.decode()}")

    def stop(self, signum=signal.SIGINT):
        self.proc.send_signal(signum)
        out, err = self.proc.communicate(timeout=30 * TIME_SCALE)
        return self.proc.returncode, self.first_line + out.decode(), err.decode()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(30 * TIME_SCALE)
        self.s.connect(path)
        self.about = json.loads(self.frame())

    def frame(self):
        header = recv_exact(self.s, 8)
        if header is None:
            return None
        (n,) = struct.unpack("<Q", header)
        return recv_exact(self.s, n)

    def send(self, body):
        self.s.sendall(struct.pack("<Q", len(body)) + body)

    def call(self, body):
        self.send(body)
        return self.frame()

    def closed(self):
        """Whether the server closed the connection (end of input or a reset)."""
        try:
            return self.s.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


def ids(seed, window=8):
    return struct.pack(f"<{window}i", *[(seed * 31 + k * 7) % 256 for k in range(window)])


def at(place):
    return struct.pack("<i", place)


def floats(answer):
    return struct.unpack(f"<{(len(answer) - 1) // 4}f", answer[1:])


def expect_refused(args, code, exit_code=1, mentions=()):
    rc, out, err, _ = e2e_test.run(args)
    expect(rc == exit_code, f"sexpgpu {' '.join(args)}: exit {rc}, expected {exit_code}", out, err)
    if code:
        expect(f"error[{code}]" in err, f"sexpgpu {' '.join(args)}: expected error[{code}]", out, err)
    for text in mentions:
        expect(text in err, f"sexpgpu {' '.join(args)}: the error should mention {text!r}", out, err)
    print(f"ok: {' '.join(args)[-60:]} -> {code or 'exit ' + str(exit_code)}")


# --- The page's "serve" block: the banner, the stop line, the exit codes -------------------


def case_serve_banner_and_stop_line(tmp):
    """`serving LOC/step-N on SOCK, up to N a call`, the inputs and outputs lines; SIGTERM,
    SIGINT (Ctrl-C) or SIGHUP stops it: the socket removed, the calls and runs printed, exit
    128 + n; the calls already received are answered."""
    location = trained(tmp)
    sock = os.path.join(tmp, "tiny.sock")
    for signum, name in [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")]:
        server = Server(location, sock, "--batch", "4")
        try:
            client = Client(sock)
            for seed in range(3):
                answer = client.call(ids(seed))
                expect(answer[0] == 0 and len(answer) == 1 + 8 * 256 * 4, "an answer of the output's bytes")
            # Calls received before the signal are answered: five sent at once, then the signal.
            client.s.sendall(b"".join(struct.pack("<Q", 32) + ids(seed) for seed in range(5)))
            time.sleep(0.2 * TIME_SCALE)
            rc, out, err = server.stop(signum)
            answers = [client.frame() for _ in range(5)]
            expect(all(a is not None and a[0] == 0 for a in answers), "the calls sent before the signal are answered",
                   out, err)
            expect(client.closed(), "the connection ends after the stop", out, err)
        finally:
            server.kill()
        expected = (f"serving {location}/step-00000003 on {sock}, up to 4 a call\n"
                    "  inputs  inputs [1, 8] i32\n"
                    "  outputs output [1, 8, 256] f32\n")
        expect(out.startswith(expected), f"the banner, expected:\n{expected}", out, err)
        last = out.splitlines()[-1]
        expect(last.startswith(f"sexpgpu serve: stopped by {name}, 8 calls in ") and last.endswith(" runs"),
               "the stop line", out, err)
        expect(rc == 128 + signum, f"exit {rc}, expected {128 + signum}", out, err)
        expect(not os.path.exists(sock), "the socket is removed", out, err)
        print(f"ok: {name} -> exit {rc}: {last}")


# --- The protocol ---------------------------------------------------------------------------


def case_serve_protocol(tmp):
    """"On connecting, the client reads one frame"; "Each call is one frame"; "Its answer is one
    frame starting with a status byte"; "A call frame of another length ... is answered with an
    error, and the connection closed"; a frame length larger than any call is refused before it
    is read; a client that leaves mid-frame costs the server nothing."""
    location = trained(tmp)
    sock = os.path.join(tmp, "s.sock")
    server = Server(location, sock)
    try:
        client = Client(sock)
        about = client.about
        expect(about["checkpoint"] == f"{location}/step-00000003" and about["step"] == 3
               and about["precision"] == "f32" and about["slug"] and about["protocol"] == 1,
               f"the handshake: {about}")
        expect(about["inputs"] == [{"name": "inputs", "shape": [1, 8], "dtype": "i32"}]
               and about["outputs"] == [{"name": "output", "shape": [1, 8, 256], "dtype": "f32"}],
               f"the handshake's inputs and outputs: {about}")
        first = client.call(ids(1))
        expect(first[0] == 0 and len(first) == 1 + 8 * 256 * 4, "status 0, then the output")
        expect(client.call(ids(1)) == first, "the same call, the same bits")
        expect(client.call(ids(2)) != first, "another call, another answer")
        # Wrong length: an error naming the length, then the connection is closed.
        answer = client.call(b"\x01\x02\x03")
        expect(answer[0] == 1 and b"E-SERVE-007" in answer and b"a call is 32 bytes" in answer,
               f"the wrong-length answer: {answer!r}")
        expect(client.closed(), "the connection closes after a call of the wrong length")
        # A length larger than any call: answered at once, nothing more sent.
        client = Client(sock)
        client.s.sendall(struct.pack("<Q", 1 << 60))
        answer = client.frame()
        expect(answer is not None and answer[0] == 1 and b"E-SERVE-007" in answer, f"oversize: {answer!r}")
        expect(client.closed(), "the connection closes after an oversize length")
        # Clients that leave mid-frame, in the header and in the body, and one that never reads.
        steady = Client(sock)
        for i in range(30):
            c = Client(sock)
            c.s.sendall((struct.pack("<Q", 32) + ids(i))[: 3 if i % 2 else 20])
            c.close()
        socket.socket(socket.AF_UNIX).connect(sock)
        expect(steady.call(ids(1)) == first, "a client still served after others left mid-frame")
        rc, out, err = server.stop(signal.SIGTERM)
        expect(rc == 143 and "4 calls in 4 runs" in out, "the stop line counts the calls run", out, err)
        expect(not err.strip(), "nothing on stderr", out, err)
    finally:
        server.kill()
    print("ok: the protocol")


# --- Batching -------------------------------------------------------------------------------


def case_serve_batching_same_bits(tmp):
    """"Calls that arrive while the device is busy run together as one batch ... A call's outputs
    are the same bits whatever it runs with": 16 clients sending different inputs at once, each
    answer the bits of its call alone, on the cpu and the reference devices."""
    location = trained(tmp)
    for device in ["cpu", "reference"]:
        sock = os.path.join(tmp, f"{device}.sock")
        server = Server(location, sock, "--batch", "16", "--device", device, "--at")
        try:
            alone = []
            c = Client(sock)
            for i in range(16):
                alone.append(c.call(ids(i) + at(i % 8)))
            c.close()
            expect(len(set(alone)) == 16 and all(a[0] == 0 for a in alone), "16 different answers")
            clients = [Client(sock) for _ in range(16)]
            answers = [[None] * 16 for _ in range(4)]
            barrier = threading.Barrier(16)

            def client_loop(i):
                for r in range(4):
                    barrier.wait()
                    answers[r][i] = clients[i].call(ids(i) + at(i % 8))

            threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for r in range(4):
                for i in range(16):
                    expect(answers[r][i] == alone[i], f"{device}: round {r}, client {i}: not the bits of its call alone")
            rc, out, err = server.stop()
            last = out.splitlines()[-1]
            runs = int(last.split(" in ")[1].split()[0])
            expect("80 calls in" in last and runs <= 80, "the stop line", out, err)
            print(f"ok: {device}: 16 clients, the same bits: {last}")
        finally:
            server.kill()


# --- The flags that shape the model ---------------------------------------------------------


def case_serve_output_and_at(tmp):
    """"--output NAME: only this output"; "--at: a last input `at`, an i32 of shape [1], and
    each output only at that place of its second axis ... an `at` outside it is an error"."""
    location = trained(tmp)
    sock = os.path.join(tmp, "s.sock")
    whole = Server(location, sock, "--output", "output")
    try:
        c = Client(sock)
        expect([o["name"] for o in c.about["outputs"]] == ["output"], "--output output")
        full = floats(c.call(ids(4)))
    finally:
        whole.stop()
    server = Server(location, sock, "--at")
    try:
        c = Client(sock)
        expect(c.about["inputs"][-1] == {"name": "at", "shape": [1], "dtype": "i32"}, f"`at`: {c.about}")
        expect(c.about["outputs"] == [{"name": "output", "shape": [1, 1, 256], "dtype": "f32"}], f"{c.about}")
        for place in [0, 3, 7]:
            row = floats(c.call(ids(4) + at(place)))
            expect(row == full[place * 256:(place + 1) * 256], f"--at {place} is row {place} of the whole output")
        for place in [8, -1]:
            answer = c.call(ids(4) + at(place))
            expect(answer[0] == 1 and b"E-SERVE-008" in answer and b"0 to 7" in answer, f"at {place}: {answer!r}")
        expect(c.call(ids(4) + at(1))[0] == 0, "the connection stays open after an `at` off the axis")
        rc, out, err = server.stop()
        expect("  inputs  at [1] i32\n  outputs output [1, 1, 256] f32\n" in out, "the banner with --at", out, err)
    finally:
        server.kill()
    # "--precision bf16: run the model under the bf16 policy": close to f32, not the same.
    server = Server(location, sock, "--precision", "bf16")
    try:
        c = Client(sock)
        expect(c.about["precision"] == "bf16" and c.about["outputs"][0]["dtype"] == "f32", f"bf16: {c.about}")
        half = floats(c.call(ids(4)))
        gap = max(abs(a - b) for a, b in zip(half, full))
        expect(0 < gap < 0.05 * max(abs(a) for a in full), f"bf16 products differ from f32 by {gap}")
        server.stop()
    finally:
        server.kill()
    expect_refused(["serve", location, "--socket", sock, "--output", "logits"], "E-SERVE-004",
                   mentions=["no output `logits`", "`output`"])
    print("ok: --output and --at")


# --- The socket path ------------------------------------------------------------------------


def case_serve_socket_paths(tmp):
    """"A socket a stopped process left behind is replaced; one another process still serves is
    refused, and so is a path that holds anything but a socket"."""
    location = trained(tmp)
    sock = os.path.join(tmp, "s.sock")
    first = Server(location, sock)
    try:
        expect_refused(["serve", location, "--socket", sock], "E-SERVE-006", mentions=["another server answers"])
        first.proc.kill()  # leaves its socket behind
        first.proc.communicate()
        expect(os.path.exists(sock), "a killed server leaves its socket")
        second = Server(location, sock)
        expect(Client(sock).call(ids(1))[0] == 0, "the stale socket was replaced")
        second.stop()
    finally:
        first.kill()
    path = os.path.join(tmp, "file")
    with open(path, "w") as f:
        f.write("mine")
    expect_refused(["serve", location, "--socket", path], "E-SERVE-006", mentions=["other than a socket"])
    expect(open(path).read() == "mine", "the file is left as it was")
    expect_refused(["serve", location, "--socket", tmp], "E-SERVE-006")
    print("ok: socket paths")


# --- What serve refuses ---------------------------------------------------------------------


def case_serve_refusals(tmp):
    """The operand: "a checkpoint, <location>/step-<n> or a location for its newest one ... or a
    directory export wrote"; "--trained: a checkpoint's model only"; "--precision bf16"."""
    location = trained(tmp, steps=6)
    sock = os.path.join(tmp, "s.sock")
    server = Server(os.path.join(location, "step-00000003"), sock, "--trained")
    try:
        expect(Client(sock).about["step"] == 3, "LOC/step-N serves that checkpoint")
    finally:
        server.stop()
    # An export directory: model.json and params.safetensors at its top.
    export = os.path.join(tmp, "tiny-model")
    os.mkdir(export)
    for name in ["model.json", "params.safetensors"]:
        shutil.copy(os.path.join(location, "step-00000006", name), export)
    server = Server(export, sock)
    try:
        expect(Client(sock).about["checkpoint"] == "step-00000006", "an export directory names its checkpoint")
        rc, out, err = server.stop()
        expect(out.startswith(f"serving {export} on {sock}, up to 1 a call\n"), "the banner of an export", out, err)
    finally:
        server.kill()
    expect_refused(["serve", export, "--socket", sock, "--trained"], "E-SERVE-004", mentions=["export directory"])
    expect_refused(["serve", location, "--socket", sock, "--precision", "f16"], None, exit_code=2)
    expect_refused(["serve", location], None, exit_code=2)
    expect_refused(["serve", location, "--socket", sock, "--batch", "0"], None, exit_code=2)
    expect_refused(["serve", os.path.join(tmp, "nothing"), "--socket", sock], "E-CKPT-003")
    expect_refused(["serve", location, "--socket", sock, "--device", "metal"], "E-DEVICE-001")
    # A checkpoint written without model.json: its manifest names none.
    os.remove(os.path.join(location, "step-00000006", "model.json"))
    manifest_path = os.path.join(location, "step-00000006", "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["files"] = [entry for entry in manifest["files"] if entry["name"] != "model.json"]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    expect_refused(["serve", location, "--socket", sock], "E-SERVE-001",
                   mentions=["holds no model", "sexpgpu export run.sx --checkpoint"])
    with open(os.path.join(export, "params.safetensors"), "r+b") as f:
        f.truncate(100)
    expect_refused(["serve", export, "--socket", sock], "E-LOAD-004", mentions=["params.safetensors"])
    with open(os.path.join(export, "model.json"), "w") as f:
        f.write("{")
    expect_refused(["serve", export, "--socket", sock], "E-SERVE-002", mentions=["model.json: not JSON"])
    expect(not os.path.exists(sock), "no socket is left by a refused start")


def case_serve_frozen_load(tmp):
    """"A frozen :load parameter, which a checkpoint names instead of holding, is read from the
    file its run read ... and refused with E-LOAD-001 when that file has changed"; export
    writes it into params.safetensors, so the export serves the same bits."""
    run_file = e2e_test.frozen_load_dir(tmp)
    location = os.path.join(tmp, "run")
    e2e_test.train([run_file, "--checkpoint-dir", location, "--steps", "3"])
    sock = os.path.join(tmp, "s.sock")
    server = Server(location, sock)
    try:
        answer = Client(sock).call(ids(1))
        expect(answer[0] == 0, f"the checkpoint answers: {answer[:200]!r}")
    finally:
        server.stop()
    export = os.path.join(tmp, "exported")
    rc, out, err, _ = e2e_test.run(["export", run_file, "--checkpoint", location, "-o", export])
    expect(rc == 0, "export", out, err)
    names = e2e_test.safetensors_names(os.path.join(export, "params.safetensors"))
    expect("model.positions" in names, f"the export holds the frozen weight: {names}")
    server = Server(export, sock)
    try:
        expect(Client(sock).call(ids(1)) == answer, "the export answers the checkpoint's bits")
    finally:
        server.stop()
    pos = os.path.join(tmp, "pos.safetensors")
    e2e_test.write_safetensors(pos, {"pos": ([8, 16], [0.5] * 128)})
    expect_refused(["serve", location, "--socket", sock], "E-LOAD-001", mentions=[pos])
    expect_refused(["export", run_file, "--checkpoint", location, "-o", os.path.join(tmp, "again")], "E-LOAD-001",
                   mentions=[pos])
    expect(not os.path.exists(os.path.join(tmp, "again")), "a refused export writes nothing")
    server = Server(export, sock)
    try:
        expect(Client(sock).call(ids(1)) == answer, "the export holds its weights, whatever the file became")
    finally:
        server.stop()


# --- The page's own client ------------------------------------------------------------------


def page_client():
    """The Python block after "## A client" on the seed page, as it is written there."""
    if not os.path.isfile(SEED_PAGE):
        raise Skip(f"the seed page is not at {os.path.normpath(SEED_PAGE)} (a checkout without ../shared/seeds)")
    with open(SEED_PAGE, encoding="utf-8") as f:
        page = f.read()
    section = page.split("## A client", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def case_serve_page_client(tmp):
    """"A greedy sampling loop in Python, over a model that takes one i32 window and returns its
    logits, served with --at": the page's program, unchanged, prints the tokens."""
    program = page_client()
    try:
        import numpy  # noqa: F401  (the page's client needs it)
    except ImportError:
        raise Skip("numpy is not installed; the page's client needs it")
    location = trained(tmp)
    if os.path.exists(PAGE_SOCKET):
        try:
            socket.socket(socket.AF_UNIX).connect(PAGE_SOCKET)
            raise Skip(f"another server answers on {PAGE_SOCKET}, the path the page's client names")
        except (ConnectionRefusedError, FileNotFoundError):
            pass
    client = os.path.join(tmp, "client.py")
    with open(client, "w") as f:
        f.write(program)
    server = Server(location, PAGE_SOCKET, "--at", "--batch", "8")
    try:
        done = subprocess.run([sys.executable, client], capture_output=True, timeout=60 * TIME_SCALE)
        out = done.stdout.decode()
        expect(done.returncode == 0, f"the page's client: exit {done.returncode}", out, done.stderr.decode())
        tokens = json.loads(out)
        expect(len(tokens) == 8 and tokens[:2] == [5, 8] and all(0 <= t < 256 for t in tokens),
               f"a token list of the window's length: {out}")
        # The same tokens from the model alone: greedy, each the argmax at the last place.
        c = Client(PAGE_SOCKET)
        made = [5, 8]
        while len(made) < 8:
            window = made + [0] * (8 - len(made))
            row = floats(c.call(struct.pack("<8i", *window) + at(len(made) - 1)))
            made.append(max(range(256), key=lambda k: row[k]))
        expect(made == tokens, f"the page's client printed {tokens}, the model gives {made}")
        rc, out, err = server.stop()
        expect(rc == 130, "SIGINT", out, err)
    finally:
        server.kill()
    print(f"ok: the page's client printed {tokens}")


def case_serve_docs_client(tmp):
    """docs/serving.md's own client, as it is written there, on a model served with --at."""
    with open(os.path.join(ROOT, "docs", "serving.md"), encoding="utf-8") as f:
        program = f.read().split("## A client in a few lines", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    try:
        import numpy  # noqa: F401  (the example needs it)
    except ImportError:
        raise Skip("numpy is not installed; the example needs it")
    sock = "/tmp/tiny.sock"  # the path the example names
    location = trained(tmp)
    client = os.path.join(tmp, "client.py")
    with open(client, "w") as f:
        f.write(program)
    server = Server(location, sock, "--at")
    try:
        done = subprocess.run([sys.executable, client], capture_output=True, timeout=60 * TIME_SCALE)
        out = done.stdout.decode()
        expect(done.returncode == 0 and 0 <= int(out) < 256, f"the example: exit {done.returncode}", out,
               done.stderr.decode())
    finally:
        server.stop()
    print(f"ok: the example printed {out.strip()}")


def case_serve_python_client(tmp):
    """clients/python against the real server: "Clients connect side by side"; a call's
    outputs by name; the server's error text raised; greedy and sampled loops over --at."""
    try:
        import numpy as np
    except ImportError:
        raise Skip("numpy is not installed; the client needs it")
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    import sexpgpu_client as sx

    location = trained(tmp)
    sock = os.path.join(tmp, "s.sock")
    server = Server(location, sock, "--at", "--batch", "4")
    try:
        with sx.Client(sock, timeout=60 * TIME_SCALE) as a, sx.Client(sock, timeout=60 * TIME_SCALE) as b:
            expect([i.name for i in a.inputs] == ["inputs", "at"], f"inputs: {a.about}")
            window = np.arange(8, dtype=np.int32).reshape(1, 8)
            row = a.call(window, np.array([3], np.int32))["output"]
            expect(row.shape == (1, 1, 256) and row.dtype == np.float32, f"output {row.shape} {row.dtype}")
            same = b.call(inputs=window, at=np.array([3], np.int32))["output"]
            expect(np.array_equal(row, same), "two clients, one call: the same bits")
            try:
                a.call(window, np.array([9], np.int32))
                raise Failure("an `at` off the window was answered")
            except sx.ServeError as e:
                expect("E-SERVE-008" in str(e), f"the server's text: {e}")
            tokens = sx.greedy(a, [5, 8])
            expect(len(tokens) == 8 and tokens[:2] == [5, 8], f"greedy: {tokens}")
            drawn = [sx.sample(b, [5, 8], temperature=0.8, seed=1) for _ in range(2)]
            expect(drawn[0] == drawn[1] and len(drawn[0]) == 8, f"one seed, one sample: {drawn}")
    finally:
        server.stop()
    print(f"ok: the Python client made {tokens}")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "serve"))
