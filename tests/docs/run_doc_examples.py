#!/usr/bin/env python3
"""Runs the examples of the user's manual (docs/*.md), so the manual cannot drift from the language.

Which blocks run:

- A fenced block whose info string is exactly `lisp` is run: its whole text is given to
  `sexpgpu eval` in a fresh process (working directory: a new empty folder).
- If its last non-blank line is `;; => VALUE`, the last line the program prints must be
  VALUE exactly (lines printed before it, by `print`, are not compared).
- If its last non-blank line is `;; error[CODE]`, the program must exit with status 1 and
  print a diagnostic with that code; anything else is an error.
- Otherwise the block must evaluate without error and without any warning.
- A block marked `lisp norun` (or any other info string) is never run: use it for
  fragments, whole files and examples that need other files.

Usage: run_doc_examples.py --program build/sexpgpu [docs/language.md ...]
(default: every docs/*.md). Exit status 0 when every example passed, 1 otherwise.
Python 3 standard library only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
FENCE = re.compile(r"^```(.*)$")
EXPECT_VALUE = re.compile(r"^;;\s*=>\s?(.*)$")
EXPECT_ERROR = re.compile(r"^;;\s*error\[([A-Z]+-[A-Z]+-\d+)\]\s*$")
TIMEOUT_S = 60


def blocks(path):
    """Yields (line number, info string, text) for each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, info, body = i + 1, match.group(1).strip(), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        yield start, info, "\n".join(body) + "\n"


def check_block(program, text):
    """Returns a problem, or None when the block behaved as it says."""
    last = [line for line in text.splitlines() if line.strip()][-1].strip()
    value, error = EXPECT_VALUE.match(last), EXPECT_ERROR.match(last)
    with tempfile.TemporaryDirectory() as cwd:
        try:
            done = subprocess.run([str(program), "eval", text], cwd=cwd, capture_output=True, text=True,
                                  env=dict(os.environ, NO_COLOR="1"), timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"timed out after {TIMEOUT_S}s"
    out, err = done.stdout, done.stderr
    if error:
        code = error.group(1)
        if done.returncode != 1 or f"error[{code}]" not in err:
            return f"expected error[{code}], got exit {done.returncode}:\n{err}{out}"
        return None
    if done.returncode != 0 or err:
        return f"exit {done.returncode}:\n{err}"
    if value:
        printed = out.splitlines()[-1] if out.splitlines() else ""
        if printed != value.group(1):
            return f"expected the value {value.group(1)}\n  but it printed {printed}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("pages", nargs="*", type=Path)
    args = parser.parse_args()
    program = Path(args.program).resolve()
    pages = args.pages or sorted((ROOT / "docs").glob("*.md"))
    ran = failed = 0
    for page in pages:
        for line, info, text in blocks(page):
            if info != "lisp":
                continue
            ran += 1
            problem = check_block(program, text)
            if problem:
                failed += 1
                print(f"FAIL {page.name}:{line}\n{text}  {problem}\n")
    print(f"{ran - failed} of {ran} examples passed")
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
