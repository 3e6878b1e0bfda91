#!/usr/bin/env python3
"""Fails when docs/builtins.md is not what `sexpgpu doc --markdown` prints.

The page is generated from the builtins' own rows (src/lang/builtins/builtins.h), so a
builtin added without its documentation, or a row changed without regenerating the
page, fails here. To regenerate:

    build/sexpgpu doc --markdown > docs/builtins.md

Usage: check_builtins_page.py --program build/sexpgpu [--write]
(--write regenerates the page instead of comparing). Python 3 standard library only.
"""

import argparse
import difflib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "builtins.md"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--write", action="store_true", help="write docs/builtins.md instead of comparing")
    args = parser.parse_args()
    done = subprocess.run([args.program, "doc", "--markdown"], capture_output=True, text=True,
                          env=dict(os.environ, NO_COLOR="1"), timeout=60)
    if done.returncode != 0:
        print(f"sexpgpu doc --markdown: exit {done.returncode}\n{done.stderr}", file=sys.stderr)
        return 1
    if args.write:
        PAGE.write_text(done.stdout, encoding="utf-8")
        print(f"wrote {PAGE}")
        return 0
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if current == done.stdout:
        print("docs/builtins.md is what `sexpgpu doc --markdown` prints")
        return 0
    diff = difflib.unified_diff(current.splitlines(keepends=True), done.stdout.splitlines(keepends=True),
                                "docs/builtins.md", "sexpgpu doc --markdown")
    sys.stdout.writelines(diff)
    print("\ndocs/builtins.md is out of date; regenerate it with\n"
          "  build/sexpgpu doc --markdown > docs/builtins.md\n"
          "(or tests/docs/check_builtins_page.py --program build/sexpgpu --write)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
