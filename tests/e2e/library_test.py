#!/usr/bin/env python3
"""End-to-end tests of libsexpgpu (docs/library.md): the library and the program installed
by `cmake --install` into a prefix of their own, a C program built against that prefix
with nothing but pkg-config, and its bits against those `sexpgpu serve` answers on its
socket for the same inputs; the Python client's Model over the build's library, against
its Client over serve's socket.

Each case is one CTest test, e2e.library_<case>: `library_test.py SEXPGPU CASE`. The build
tree is SEXPGPU's folder; $SEXPGPU_CMAKE is the cmake that configured it.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
import serve_test  # noqa: E402
from e2e_test import Failure, Skip, expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("SEXPGPU_SOURCE_DIR", os.path.join(HERE, "..", ".."))
STRICT_C = "-std=c11 -Wall -Wextra -Werror -pedantic"


def sh(command, env, what):
    """Runs a shell command line; its stdout, or a failure naming `what`."""
    proc = subprocess.run(command, shell=True, env=env, capture_output=True, text=True,
                          timeout=300 * e2e_test.TIME_SCALE)
    expect(proc.returncode == 0, f"{what}: `{command}` exited {proc.returncode}", proc.stdout, proc.stderr)
    return proc.stdout


def install(tmp):
    """`cmake --install BUILD --prefix P`: P, and the environment that finds what it holds."""
    cmake = os.environ.get("SEXPGPU_CMAKE") or shutil.which("cmake")
    if not cmake:
        raise Skip("no cmake to install with")
    for tool in ("cc", "pkg-config", "make"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} on PATH")
    prefix = os.path.join(tmp, "prefix")
    build = os.path.dirname(e2e_test.SEXPGPU)
    sh(f"{cmake} --install {build} --prefix {prefix}", dict(os.environ), "installing")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"),
               LD_LIBRARY_PATH=os.path.join(prefix, "lib"), NO_COLOR="1")
    return prefix, env


def check_installed_tree(prefix, env):
    for path in ("include/sexpgpu.h", "lib/libsexpgpu.a", "lib/pkgconfig/sexpgpu.pc", "bin/sexpgpu",
                 "share/sexpgpu/lib/sexpgpu/nn.sx"):
        expect(os.path.isfile(os.path.join(prefix, path)), f"{path} is not installed")
    shared = os.path.join(prefix, "lib", "libsexpgpu.so")
    expect(os.path.realpath(shared).startswith(shared + ".0."), f"libsexpgpu.so -> {os.path.realpath(shared)}")
    dynamic = sh(f"readelf -d {shared}", env, "reading the shared library")
    expect("Library soname: [libsexpgpu.so.0]" in dynamic, "the soname is libsexpgpu.so.0", dynamic)
    exported = sh(f"nm -D --defined-only {shared}", env, "listing the exported symbols").split()
    names = sorted(word for word in exported if word.startswith(("sexpgpu", "_Z")))
    expect(names and all(name.startswith("sexpgpu_") for name in names), f"exports: {names}")
    needed = [line for line in dynamic.splitlines() if "NEEDED" in line]
    expect(not any("mpi" in line or "edit" in line for line in needed), "needs no MPI and no libedit", dynamic)
    # The installed program reads the standard library under the prefix, not the source tree's.
    with open(os.path.join(prefix, "share", "sexpgpu", "lib", "sexpgpu", "nn.sx"), "a") as f:
        f.write("\n(defun installed-library-marker () :installed)\n")
    out = sh(f"{prefix}/bin/sexpgpu eval '(require \"sexpgpu/nn\") (installed-library-marker)'", env,
             "the installed program's standard library")
    expect(out.strip() == ":installed", f"the installed program read another standard library: {out}")
    print(f"ok: {prefix} holds the header, both libraries, sexpgpu.pc and the program")


def served(prefix, location, body, tmp):
    """The answer body of `sexpgpu serve` (the installed one) to one call."""
    e2e_test.SEXPGPU = os.path.join(prefix, "bin", "sexpgpu")
    server = serve_test.Server(location, os.path.join(tmp, "s.sock"))
    try:
        client = serve_test.Client(server.sock)
        answer = client.call(body)
        client.close()
    finally:
        server.stop()
    expect(answer[0] == 0, f"serve answered an error: {answer[1:]!r}")
    return answer[1:]


def case_install(tmp):
    """A C program outside the build, compiled with `cc prog.c $(pkg-config --cflags --libs
    sexpgpu)` against the installed prefix (and once statically), opens a checkpoint and an
    export, lists their inputs and outputs, runs a call and gets serve's bits; a wrong input
    count, a closed model and a missing location are each a coded error. The example's
    Makefile builds with pkg-config alone."""
    prefix, env = install(tmp)
    check_installed_tree(prefix, env)
    program = os.path.join(tmp, "library_program")
    sh(f"cc {STRICT_C} {HERE}/library_program.c -o {program} $(pkg-config --cflags --libs sexpgpu)", env,
       "compiling against the prefix")
    static_libs = sh("pkg-config --static --libs sexpgpu", env, "pkg-config --static").replace(
        "-lsexpgpu", "-l:libsexpgpu.a")
    sh(f"cc {STRICT_C} {HERE}/library_program.c -o {program}-static $(pkg-config --cflags sexpgpu) {static_libs}",
       env, "linking the static library")

    # A run and an export of it, by the installed program.
    e2e_test.SEXPGPU = os.path.join(prefix, "bin", "sexpgpu")
    run_file = e2e_test.training_dir(tmp)
    location = os.path.join(tmp, "run")
    e2e_test.train([run_file, "--checkpoint-dir", location, "--steps", "3"])
    exported = os.path.join(tmp, "export")
    rc, out, err, _ = e2e_test.run(["export", run_file, "--checkpoint", location, "-o", exported])
    expect(rc == 0, "sexpgpu export", out, err)

    inputs = e2e_test.write(tmp, "inputs.bin", serve_test.ids(5))
    missing = os.path.join(tmp, "nowhere")
    for operand in (exported, location, os.path.join(location, "step-00000003")):
        expected = served(prefix, operand, serve_test.ids(5), tmp)
        for binary in (program, program + "-static"):
            outputs = os.path.join(tmp, "outputs.bin")
            out = sh(f"{binary} {operand} {inputs} {outputs} {missing}", env, f"{binary} on {operand}")
            lines = out.splitlines()
            version = lines[0].split()
            expect(len(version) == 3 and version[1] == version[2], "the library's version is its header's", out)
            expect(lines[1:] == ["input inputs i32 [1, 8] 32", "output output f32 [1, 8, 256] 8192",
                                 "count E-API-002", "closed E-API-001", "missing E-CKPT-003"], f"{binary} printed",
                   out)
            with open(outputs, "rb") as f:
                expect(f.read() == expected, f"{binary} on {operand}: other bits than serve's")
        print(f"ok: {operand}: serve's bits, through the shared and the static library")

    # The example, built by its own Makefile.
    example = os.path.join(tmp, "example")
    shutil.copytree(os.path.join(ROOT, "examples", "library"), example)
    sh(f"make -C {example}", env, "making the example")
    outputs = os.path.join(tmp, "example-outputs.bin")
    out = sh(f"{example}/run_model {exported} {inputs} {outputs}", env, "the example")
    expect("inputs  inputs [1, 8] i32" in out and "outputs output [1, 8, 256] f32" in out, "the example's listing",
           out)
    with open(outputs, "rb") as f:
        expect(f.read() == served(prefix, exported, serve_test.ids(5), tmp), "the example: other bits than serve's")
    print("ok: the example's Makefile, and its bits")


def case_python_model(tmp):
    """clients/python's Model over the build's libsexpgpu ($SEXPGPU_LIBRARY): the inputs and
    outputs, the bits and the error words of a Client of `sexpgpu serve` with the same flags;
    eight threads on one Model; a missing location and a closed model are ModelErrors with
    their codes."""
    try:
        import numpy as np
    except ImportError:
        raise Skip("numpy is not installed; the client needs it")
    library = os.path.join(os.path.dirname(e2e_test.SEXPGPU), "src", "library", "libsexpgpu.so")
    os.environ["SEXPGPU_LIBRARY"] = library
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    import sexpgpu_client as sx
    import threading

    location = serve_test.trained(tmp)
    sock = os.path.join(tmp, "s.sock")
    server = serve_test.Server(location, sock, "--at", "--batch", "4")
    try:
        with sx.Client(sock, timeout=60 * e2e_test.TIME_SCALE) as client, sx.Model(location, at=True,
                                                                                  batch=4) as model:
            expect(model.inputs == client.inputs and model.outputs == client.outputs,
                   f"{model.inputs} {model.outputs} against {client.inputs} {client.outputs}")
            windows = [np.array([[(seed * 31 + k * 7) % 256 for k in range(8)]], np.int32) for seed in range(8)]
            expected = [client.call(w, np.array([k % 8], np.int32))["output"] for k, w in enumerate(windows)]
            for k, w in enumerate(windows):
                got = model.call(inputs=w, at=np.array([k % 8], np.int32))["output"]
                expect(got.dtype == np.float32 and got.tobytes() == expected[k].tobytes(), f"call {k}: other bits")
            wrong = []

            def calls(k):
                for i in range(20):
                    got = model.call(windows[k], np.array([k % 8], np.int32))["output"]
                    if got.tobytes() != expected[k].tobytes():
                        wrong.append(k)

            threads = [threading.Thread(target=calls, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            expect(not wrong, f"threads got other bits: {wrong}")
            expect(sx.greedy(model, [5, 8]) == sx.greedy(client, [5, 8]), "greedy: other tokens")
            try:
                client.call(windows[0], np.array([9], np.int32))
                raise Failure("serve answered an `at` off the window")
            except sx.ServeError as e:
                served_words = e.message
            try:
                model.call(windows[0], np.array([9], np.int32))
                raise Failure("the library answered an `at` off the window")
            except sx.ModelError as e:
                expect(e.code == "E-SERVE-008" and e.message == served_words, f"{e.message} / {served_words}")
            try:
                model.call(windows[0][:, :4], np.array([1], np.int32))
                raise Failure("a window of 4 was taken")
            except ValueError:
                pass
        for missing, code in ((os.path.join(tmp, "nowhere"), "E-CKPT-003"),):
            try:
                sx.Model(missing)
                raise Failure(f"{missing} opened")
            except sx.ModelError as e:
                expect(e.code == code, f"{missing}: {e.message}")
        closed = sx.Model(location)
        closed.close()
        try:
            closed.call(windows[0])
            raise Failure("a closed model answered")
        except sx.ModelError as e:
            expect(e.code == "E-API-001", f"closed: {e.message}")
    finally:
        server.stop()
    # A library that is not there: an OSError naming where it was looked for.
    probe = subprocess.run([sys.executable, "-c", "import sexpgpu_client as sx; sx.load_library()"],
                           env=dict(os.environ, SEXPGPU_LIBRARY=os.path.join(tmp, "none.so"),
                                    PYTHONPATH=os.path.join(ROOT, "clients", "python")),
                           capture_output=True, text=True)
    expect(probe.returncode != 0 and "SEXPGPU_LIBRARY=" in probe.stderr, "a missing library", probe.stdout,
           probe.stderr)
    print("ok: the Python Model gives serve's bits and words")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "library"))
