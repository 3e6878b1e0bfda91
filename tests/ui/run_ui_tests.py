#!/usr/bin/env python3
"""UI tests: every diagnostic the user can see, as golden files (the rustc tests/ui habit).

A case is a `.sx` file directly inside a family folder, `tests/ui/<family>/<name>.sx`.
Beside it, `<name>.stderr` holds the exact expected standard error and `<name>.stdout`
the exact expected standard output; a missing file means that stream must be empty.
Files in subfolders (`tests/ui/eval/modules/...`) are helpers that cases require; they
are never cases themselves.

The first lines of a case may be directives, written as comments:

    ;; run: eval --file {file} '(main)'     the arguments after the program; default `check {file}`
    ;; exit: 2                              the expected exit status
    ;; env: SEXPGPU_CPU_CORES=0             a variable set for the program (repeatable)

`{file}` is the case's base name: the program runs in the case's folder, so the paths in
diagnostics are short and stable. `{tmp}` is an empty temporary folder of the case's own,
removed after it (where a `run` writes its checkpoints). The default exit status is 1
when the expected standard error has a line starting with `error[`, else 0. Directives
are read from the leading comment lines only. Absolute paths in the output are
normalized: the temporary folder becomes `$TMP`, the case's folder `$DIR`, the
repository root `$ROOT`. Colour is off (NO_COLOR=1).

Usage:

    run_ui_tests.py --program build/sexpgpu                  run every case
    run_ui_tests.py --program build/sexpgpu tests/ui/read    a family, or single .sx files
    run_ui_tests.py --program build/sexpgpu --bless [...]    rewrite .stderr/.stdout from the real output
    run_ui_tests.py --program build/sexpgpu --coverage       every code raised in src/ is in `explain-error
                                                             --list`; each listed code has an explanation and
                                                             a case whose .stderr shows `[CODE]` (or an e2e
                                                             or unit test that names it)

Exit status: 0 when everything passed, 1 otherwise. Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

UI_DIR = Path(__file__).resolve().parent
ROOT = UI_DIR.parent.parent
TIMEOUT_S = 60
DIRECTIVE = re.compile(rb"^;;\s*(run|exit|env):\s*(.*?)\s*$")


class Case:
    def __init__(self, path):
        self.path = path.resolve()
        self.name = f"{self.path.parent.name}/{self.path.stem}"
        self.stderr_file = self.path.with_suffix(".stderr")
        self.stdout_file = self.path.with_suffix(".stdout")
        self.run = "check {file}"
        self.exit = None
        self.env = {}
        # Bytes, not text: some cases hold invalid UTF-8 on purpose.
        for line in self.path.read_bytes().splitlines():
            if not line.startswith(b";"):
                break
            match = DIRECTIVE.match(line)
            if not match:
                continue
            key, value = match.group(1).decode(), match.group(2).decode("utf-8", "replace")
            if key == "run":
                self.run = value
            elif key == "env":
                name, _, setting = value.partition("=")
                self.env[name] = setting
            else:
                self.exit = int(value)

    def expected(self, file):
        return file.read_bytes() if file.exists() else b""

    def expected_exit(self):
        if self.exit is not None:
            return self.exit
        lines = self.expected(self.stderr_file).splitlines()
        return 1 if any(line.startswith(b"error[") for line in lines) else 0

    def command(self, program, tmp="{tmp}"):
        args = [arg.replace("{file}", self.path.name).replace("{tmp}", tmp) for arg in shlex.split(self.run)]
        return [str(program)] + args


def normalize(output, case_dir, tmp):
    # Longest first: the case's folder lies inside the repository.
    for path, name in ((tmp, b"$TMP"), (str(case_dir), b"$DIR"), (str(ROOT), b"$ROOT")):
        output = output.replace(os.fsencode(path), name)
    return output


def run_case(case, program):
    env = dict(os.environ, NO_COLOR="1", **case.env)
    with tempfile.TemporaryDirectory(prefix="sexpgpu-ui-") as tmp:
        try:
            done = subprocess.run(case.command(program, tmp), cwd=case.path.parent, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None
        return (done.returncode, normalize(done.stdout, case.path.parent, tmp),
                normalize(done.stderr, case.path.parent, tmp))


def show_diff(label, expected, actual):
    a = expected.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    b = actual.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    diff = difflib.unified_diff(a, b, f"expected {label}", f"actual {label}")
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
    sys.stdout.write(text)


def write_or_remove(file, content):
    if content:
        file.write_bytes(content)
    elif file.exists():
        file.unlink()


def check_case(case, program, bless):
    """Returns a list of problems; empty when the case passed (or was blessed)."""
    result = run_case(case, program)
    if result is None:
        return [f"timed out after {TIMEOUT_S}s: {shlex.join(case.command(program))}"]
    code, stdout, stderr = result
    if code < 0:
        return [f"crashed with signal {-code}: {shlex.join(case.command(program))}"]
    if bless:
        write_or_remove(case.stderr_file, stderr)
        write_or_remove(case.stdout_file, stdout)
        if code != case.expected_exit():
            return [f"exited {code}, but the default for this output is {case.expected_exit()}: "
                    f"add `;; exit: {code}` to the case if that is right"]
        return []
    problems = []
    for label, file, actual in (("stderr", case.stderr_file, stderr), ("stdout", case.stdout_file, stdout)):
        expected = case.expected(file)
        if expected != actual:
            problems.append(f"{label} differs from {file.name}:")
            show_diff(label, expected, actual)
    if code != case.expected_exit():
        problems.append(f"exit status {code}, expected {case.expected_exit()}")
    return problems


def find_cases(paths):
    cases = []
    for given in paths or [UI_DIR]:
        given = Path(given).resolve()
        if given.is_file():
            cases.append(given)
        elif given == UI_DIR:
            cases += sorted(UI_DIR.glob("*/*.sx"))
        else:
            cases += sorted(given.glob("*.sx"))
    return [Case(path) for path in cases]


def coverage(program):
    problems = []
    listing = subprocess.run([str(program), "explain-error", "--list"], capture_output=True, text=True, check=True)
    codes = [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]
    if not codes:
        problems.append("`explain-error --list` lists no codes")
    shown = b"".join(path.read_bytes() for path in UI_DIR.glob("*/*.stderr"))
    # Every code the sources can raise is listed (so it has an explanation):
    # a code raised but never written down would reach users unexplained.
    raised = set()
    for path in (ROOT / "src").rglob("*"):
        if path.suffix in (".cc", ".h"):
            raised.update(re.findall(r'"([EW]-[A-Z]+-[0-9]{3})"', path.read_text(errors="replace")))
    for code in sorted(raised - set(codes)):
        problems.append(f"{code}: raised in src/ but not in `explain-error --list` (the codes.cc of the part that raises it)")
    # Or a Python test anywhere under tests/ (e2e, hf, ...) or a unit test names it.
    e2e = b"".join(path.read_bytes() for path in (ROOT / "tests").rglob("*.py") if UI_DIR not in path.parents)
    e2e += b"".join(path.read_bytes() for path in (ROOT / "tests" / "unit").rglob("*_test.cc"))
    for code in codes:
        if f"[{code}]".encode() not in shown and code.encode() not in e2e:
            problems.append(f"{code}: no UI case shows `[{code}]` in its .stderr, and no e2e or unit test names it")
        explained = subprocess.run([str(program), "explain-error", code], capture_output=True, text=True)
        body = explained.stdout.split("\n", 1)[1].strip() if "\n" in explained.stdout else ""
        if explained.returncode != 0 or not body:
            problems.append(f"{code}: `explain-error {code}` gives no explanation")
    # Expectations whose case is gone would rot unnoticed.
    for path in sorted(UI_DIR.glob("*/*.std*")):
        if not path.with_suffix(".sx").exists():
            problems.append(f"{path.relative_to(UI_DIR)} has no case beside it")
    for problem in problems:
        print(problem)
    print(f"{len(codes)} codes; {len(problems)} problem(s)")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True, help="the sexpgpu program")
    parser.add_argument("--bless", action="store_true", help="rewrite the expectations from the real output")
    parser.add_argument("--coverage", action="store_true", help="check that every diagnostic code has a case")
    parser.add_argument("cases", nargs="*", help=".sx files or family folders (default: all)")
    args = parser.parse_args()
    program = Path(args.program).resolve()
    if args.coverage:
        return coverage(program)
    cases = find_cases(args.cases)
    failed = 0
    for case in cases:
        problems = check_case(case, program, args.bless)
        if problems:
            failed += 1
            print(f"FAIL {case.name}")
            for problem in problems:
                print(f"  {problem}")
        elif len(cases) > 1:
            print(f"{'blessed' if args.bless else 'ok'} {case.name}")
    print(f"{len(cases) - failed} passed, {failed} failed" + (" (blessed)" if args.bless else ""))
    if failed and not args.bless:
        print(f"to accept the new output: {Path(sys.argv[0]).name} --program {args.program} --bless [cases]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
