#!/usr/bin/env python3
"""End-to-end tests of `sexpgpu repl`: on a pipe and on a terminal (a pseudo-terminal,
typing as a person does), its models, its memory over thousands of entries, its budget,
history, interruption and quitting.

Each case is one CTest test, e2e.<case>: `repl_test.py SEXPGPU CASE`, with e2e_test.py's
helpers and time scale.
"""

import os
import pty
import select
import signal
import subprocess
import sys
import time

import e2e_test
from e2e_test import TIME_SCALE, expect, expect_error, run, write


def case_repl_pipe(tmp):
    session = b"\n".join([
        b"(defun add (a",
        b"            &key (b 10))",
        b"  (+ a b))",
        b"(add 1)",
        b"(no-such-function 1)",
        b"(add 1 :b 2)",
        b"(list 1",
        b"  2) (add 5)",
    ]) + b"\n"
    rc, out, err, _ = run(["repl"], stdin=session)
    expect(rc == 0, f"sexpgpu repl: exit {rc}, expected 0", out, err)
    expect("error[E-EVAL-001]" in err and "no-such-function" in err, "the unbound name was not reported", out, err)
    values = [line for line in out.splitlines() if line.strip()]
    expect(values[-4:] == ["11", "3", "(1 2)", "15"], f"unexpected values: {values}", out, err)
    expect(not any("error" in v for v in values), "errors went to stdout", out, err)


def case_repl_unfinished(tmp):
    rc, out, err, _ = run(["repl"], stdin=b"(+ 1 2)\n(list 1\n")
    expect(rc == 0 and out.splitlines()[:1] == ["3"], f"sexpgpu repl: exit {rc}", out, err)
    expect("input ended inside a form" in err, "an unfinished form at the end was not reported", out, err)


def case_repl_models(tmp):
    # Redefining a model in the REPL gives the name to the new one; the old one, whose
    # parameters earlier entries read, has no root any more and must not get in the way.
    session = b"\n".join([
        b'(require "sexpgpu/nn")',
        b"(defvar model (linear 2 3))",
        b"(shape (model (ones [1 2])))",
        b"(defvar model (linear 2 4))",
        b"(shape (model (ones [1 2])))",
        b"(let ((m (linear 2 2))) (m (ones [1 2])))",
        b"(shape (model (ones [5 2])))",
    ]) + b"\n"
    rc, out, err, _ = run(["repl"], stdin=session)
    expect(rc == 0, f"sexpgpu repl: exit {rc}, expected 0", out, err)
    shapes = [line for line in out.splitlines() if line.startswith("[")]
    expect(shapes == ["[1 3]", "[1 4]", "[5 4]"], f"unexpected shapes: {shapes}", out, err)
    expect(err.count("error[") == 1 and "error[E-PARAM-009]" in err, "expected one E-PARAM-009, for the let", out, err)
    # Models made again and again: each new parameter's input takes a name that the
    # renaming of the roots' parameters has not given an earlier one.
    session = b'(require "sexpgpu/nn")\n(defvar x (ones [2 16]))\n' + b"(defvar m2 (linear 16 16))\n(sum (m2 x))\n" * 40
    rc, out, err, _ = run(["repl"], stdin=session)
    expect(rc == 0 and "error" not in err, f"sexpgpu repl, a model redefined 40 times: exit {rc}", out, err)
    expect(sum(line.startswith("(tensor") for line in out.splitlines()) == 40, "expected 40 sums", out, err)


class Terminal:
    """sexpgpu run on a pseudo-terminal, as a person at a terminal runs it."""

    def __init__(self, args, home):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            env = dict(os.environ, HOME=home, TERM="dumb", NO_COLOR="1")
            os.execve(e2e_test.SEXPGPU, [e2e_test.SEXPGPU, *args], env)
        self.seen = b""
        self.pos = 0  # where the next read_until starts looking

    def read_until(self, text, timeout=20):
        """What the program wrote after the previous match, up to the end of `text`."""
        end = time.monotonic() + timeout * TIME_SCALE
        while True:
            at = self.seen.find(text.encode(), self.pos)
            if at >= 0:
                shown, self.pos = self.seen[self.pos:at + len(text)], at + len(text)
                return shown.decode(errors="replace")
            if time.monotonic() > end:
                break
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # the program ended: the terminal is gone
                break
            if not chunk:
                break
            self.seen += chunk
        raise Failure(f"the terminal never showed {text!r}; it showed:\n{self.seen.decode(errors='replace')}")

    def type(self, keys):
        os.write(self.fd, keys.encode())

    def wait(self, timeout=20):
        """The exit status, once the program ends."""
        end = time.monotonic() + timeout * TIME_SCALE
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:
                if select.select([self.fd], [], [], 0.1)[0]:
                    self.seen += os.read(self.fd, 4096)
            except OSError:
                time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        raise Failure(f"the program did not end; the terminal showed:\n{self.seen.decode(errors='replace')}")


def repl_peak_rss(tmp, entries):
    """Runs `entries` forwards of an MLP in one REPL session; returns its last value and the
    peak resident memory of the REPL itself: /proc's VmHWM, read before the REPL ends (its
    rusage would count the test's own memory, which the child had before it ran sexpgpu).
    Each entry is about 1 KiB of text, as a pasted one with a comment is, so a session that
    kept every entry's source would grow by that much an entry."""
    lines = [b'(require "sexpgpu/nn")',
             b"(defmodel tower (width)",
             b"  (let ((a (linear 16 width)) (b (linear width width)) (c (linear width 4)))",
             b"    (lambda (x) (c (relu (b (relu (a x))))))))",
             b"(defvar model (tower 256))",
             b"(defvar x (ones [8 16]))"]
    comment = " ; " + "the forward of the tower on a batch of eight rows, scaled " * 16
    lines += [f"(sum (model (* x {i % 7}.0))){comment}".encode() for i in range(entries)]
    answered = '"all entries answered"\n'
    lines.append(answered.encode().rstrip())
    out_path, err_path = os.path.join(tmp, "repl.out"), os.path.join(tmp, "repl.err")
    with open(out_path, "wb") as out_file, open(err_path, "wb") as err_file:
        proc = subprocess.Popen([e2e_test.SEXPGPU, "repl"], stdin=subprocess.PIPE, stdout=out_file, stderr=err_file,
                                env=dict(os.environ, NO_COLOR="1"))
        try:
            proc.stdin.write(b"\n".join(lines) + b"\n")
            proc.stdin.flush()
            end = time.monotonic() + 120 * TIME_SCALE
            while proc.poll() is None and time.monotonic() < end and not read_text(out_path).endswith(answered):
                time.sleep(0.05)
            expect(read_text(out_path).endswith(answered),
                   f"sexpgpu repl did not answer every entry (exit {proc.poll()})", read_text(out_path)[-2000:],
                   read_text(err_path))
            with open(f"/proc/{proc.pid}/status", encoding="utf-8") as status:
                peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
            proc.stdin.close()
            rc = proc.wait(timeout=60 * TIME_SCALE)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out, err = read_text(out_path), read_text(err_path)
    expect(rc == 0 and not err, f"sexpgpu repl: exit {rc}", out[-2000:], err)
    return out.splitlines()[-2], peak


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def case_repl_memory(tmp):
    """A long REPL session does not grow with its history: the trace drops what no value
    reaches any more, and an entry's source lives only while something points into it."""
    if not os.path.exists("/proc/self/status"):
        raise Skip("no /proc to read the REPL's peak memory from")
    peaks = {}
    for entries in (500, 5000):
        last, peaks[entries] = repl_peak_rss(tmp, entries)
        expect(last.startswith("(tensor "), f"the last value: {last}")
    growth = peaks[5000] - peaks[500]
    print(f"peak {peaks[500] / 2**20:.1f} MiB after 500 entries, {peaks[5000] / 2**20:.1f} MiB after 5000: "
          f"{growth / 4500:.0f} bytes an entry")
    # The sanitizers keep freed memory in quarantine: no measure there.
    if TIME_SCALE == 1:
        expect(growth < 2 * 2**20, f"the REPL grew by {growth / 2**20:.1f} MiB from 500 entries to 5000")


def case_repl_tty(tmp):
    # A newcomer's first minute: the banner, a value, TAB completion of their own name and
    # of a builtin, (doc ...), then (quit). Each step waits for what it should show (what
    # is typed is echoed, and the prompt is drawn again after a completion).
    term = Terminal(["repl"], tmp)
    banner = term.read_until("sx> ")
    expect("(help)" in banner and "(quit)" in banner, f"the banner should say how to get help and quit: {banner!r}")
    term.type("(+ 1 2)\r")
    term.read_until("\n3\r\n")
    term.type('(defun my-square (x) "Squares x." (* x x))\r')
    term.read_until("\nmy-square\r\n")
    term.type("(my-squ\t")
    term.read_until("my-square")
    term.type("4)\r")
    shown = term.read_until("\n16\r\n")
    expect("error" not in shown, f"TAB did not complete my-square: {shown!r}")
    term.type("(enumer\t[5 6])\r")
    term.read_until("[[0 5] [1 6]]")
    term.type("(doc my-square)\r")
    shown = term.read_until("Squares x.")
    expect("(my-square x)" in shown, f"(doc my-square): {shown!r}")
    term.type("(doc map)\r")
    shown = term.read_until("Example:")
    expect("(map f seq &rest seqs)" in shown, f"(doc map): {shown!r}")
    term.read_until("sx> ")
    term.type("(quit)\r")
    status = term.wait()
    expect(status == 0, f"(quit): exit {status}", term.seen.decode(errors="replace"))
    expect(os.path.exists(os.path.join(tmp, ".sexpgpu_history")), "the history was not written to $HOME")
    print("ok: repl on a terminal")


def case_repl_budget_and_history(tmp):
    """--max-steps bounds each REPL input, not the session: after an input spends it, the
    next one runs. The history file holds each input as soon as it is entered, so a
    session that is killed loses none of it."""
    session = b"\n".join([
        b"(defun down (n) (if (= n 0) 0 (down (- n 1))))",
        b"(down 100000)",
        b"(+ 1 2)",
        b"(down 50)",
    ]) + b"\n"
    rc, out, err, _ = run(["repl", "--max-steps", "2000"], stdin=session)
    expect(rc == 0 and "error[E-EVAL-017]" in err, f"the spent input: exit {rc}", out, err)
    values = [line for line in out.splitlines() if line.strip()]
    expect(values[-2:] == ["3", "0"], f"the inputs after it run: {values}", out, err)
    term = Terminal(["repl"], tmp)
    term.read_until("sx> ")
    term.type("(+ 40 2)\r")
    term.read_until("\n42\r\n")
    term.read_until("sx> ")
    os.kill(term.pid, signal.SIGKILL)
    os.waitpid(term.pid, 0)
    with open(os.path.join(tmp, ".sexpgpu_history"), encoding="utf-8", errors="replace") as f:
        history = f.read().replace("\\040", " ")  # libedit writes a space as \040
    expect("(+ 40 2)" in history, f"the history after a kill: {history!r}")
    print("ok: a budget per input, history as it goes")


def case_repl_interrupt(tmp):
    """Ctrl-C at the prompt drops what was typed and stays in the REPL; during an
    evaluation it stops it with E-EVAL-020 and returns to the prompt, the session and its
    history intact. Outside the REPL, Ctrl-C still ends the program."""
    fib = "(defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))"
    term = Terminal(["repl", "--cpu-cores", "1"], tmp)  # one core: steps stay short on a busy machine
    term.read_until("sx> ")
    # Each input is typed at a prompt: typed earlier, the terminal would echo it before
    # the prompt, and the echo would be taken for the REPL's.
    term.type(f"(defvar kept 42) {fib}\r")
    term.read_until("\nfib\r\nsx> ")
    term.type("(list 1\r")
    term.read_until("...  ")
    term.type("\x03")
    term.read_until("sx> ")
    term.type("(+ 2 3)\r")
    shown = term.read_until("sx> ")
    expect("\n5\r\n" in shown, f"Ctrl-C at the prompt should drop the unfinished (list 1: {shown!r}")
    term.type("(fib 40)\r")
    term.read_until("(fib 40)\r\n")
    time.sleep(0.5)
    start = time.monotonic()
    term.type("\x03")
    shown = term.read_until("sx> ")
    expect("error[E-EVAL-020]: interrupted" in shown, f"Ctrl-C during (fib 40): {shown!r}")
    expect(time.monotonic() - start < 5 * TIME_SCALE, "the interruption took more than 5 s")
    term.type("(list kept (fib 10))\r")
    term.read_until("\n(42 55)\r\nsx> ")
    # A graph of 400 matmuls (10 s or more on the cpu device) stops between two of them.
    term.type("(defun chain (x n) (if (= n 0) x (chain (matmul x x) (- n 1))))\r")
    term.read_until("\nchain\r\nsx> ")
    term.type("(sum (chain (ones [800 800]) 400))\r")
    term.read_until("400))\r\n")
    time.sleep(1.5 * TIME_SCALE)  # traced by then: the device runs it
    start = time.monotonic()
    term.type("\x03")
    shown = term.read_until("sx> ")
    expect("error[E-EVAL-020]: interrupted while the cpu device ran the value" in shown,
           f"Ctrl-C during a device run: {shown!r}")
    expect(time.monotonic() - start < 5 * TIME_SCALE, "the device run took more than 5 s to stop")
    term.type("(+ kept 1)\r")
    term.read_until("\n43\r\nsx> ")
    term.type("(quit)\r")
    status = term.wait()
    expect(status == 0, f"(quit) after Ctrl-C: exit {status}", term.seen.decode(errors="replace"))
    with open(os.path.join(tmp, ".sexpgpu_history"), encoding="utf-8", errors="replace") as f:
        history = f.read().replace("\\040", " ")
    expect("(fib 40)" in history and "(list 1" not in history, f"the history after Ctrl-C: {history!r}")

    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.Popen([e2e_test.SEXPGPU, "eval", f"{fib} (fib 40)"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    status = proc.wait(timeout=10 * TIME_SCALE)
    expect(status == -signal.SIGINT, f"sexpgpu eval after Ctrl-C: exit {status}, expected the signal's")
    print("ok: Ctrl-C in the REPL, and in eval")


def case_repl_quit(tmp):
    # (quit) and (exit) end the REPL at once, on a pipe too; (exit N) gives status N.
    rc, out, err, _ = run(["repl"], stdin=b"(+ 1 2)\n(exit 3)\n(+ 4 5)\n")
    expect(rc == 3 and out.split() == ["3"] and not err, f"(exit 3): exit {rc}", out, err)
    rc, out, err, _ = run(["repl"], stdin=b"(quit)\n(+ 4 5)\n")
    expect(rc == 0 and not out.strip() and not err, f"(quit): exit {rc}", out, err)
    rc, out, err, _ = run(["repl"], stdin=b"(exit 256)\n")
    expect(rc == 0 and "error[E-EVAL-004]" in err, f"(exit 256) should be refused: exit {rc}", out, err)
    rc, out, err, _ = run(["repl"], stdin=b"(doc quit)\n")
    expect(rc == 0 and "(quit &optional status)" in out, f"(doc quit): exit {rc}", out, err)
    # Only what is typed can quit: a file, even the REPL's own, cannot.
    expect_error(["repl", write(tmp, "quits.sx", b"(quit)\n")], "E-EVAL-001", mentions=["quit"])
    expect_error(["eval", "(exit)"], "E-EVAL-001")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "repl"))
