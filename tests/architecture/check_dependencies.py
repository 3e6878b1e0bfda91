#!/usr/bin/env python3
"""The directions between the parts of src/ (docs/architecture.md).

Each part is a folder of src/ and one library (the cli is the program). A part may
include only its own headers and those of the parts below it, and its library may link
only those parts' libraries:

    graph     nothing: the IR, its primitives' rules, autodiff and passes
    device    graph
    runtime   graph, device (no Lisp)
    io        graph
    lang      graph (it builds graphs, never runs them)
    report    nothing: the loss-curve picture and the moved lines, text in, text out
    text      graph (its codes' rows): tokenizers, text in, ids out
    distributed  nothing: the workers of a data-parallel run and their collectives
    model     lang, graph, io, device, runtime, text
    train     lang, graph, io, device, runtime, model, report, text, distributed
    serve     graph, device, runtime, io (no Lisp)
    library   serve, graph, device, runtime, io (no Lisp: libsexpgpu holds none)
    bundle    train, model, lang, graph, io, device, runtime, report, text, distributed
    cli       every part

Checked here:
  - every `#include "PART/..."` in every file under src/PART/ (subfolders too);
  - every `sexpgpu_PART` library named in src/PART/CMakeLists.txt's
    target_link_libraries;
  - graph includes no file or process headers (<fstream>, <filesystem>, <cstdio>, ...):
    it knows nothing of files;
  - only src/device/cuda/ includes the CUDA toolkit's headers (<cuda_runtime_api.h>,
    <cublas_v2.h>, <nvrtc.h>, ...): it alone is built with the toolkit, so a build
    without one builds everything else;
  - docs/architecture.md's table of the rules says what RULES says, so that the page and
    this test cannot part.

A failure names the file, the line and the include (or library), and the rule it breaks.
An exception is an entry of EXCEPTIONS with its reason, listed on the page too.

Usage:
    check_dependencies.py [--root DIR]    check the tree (default: this repository)
    check_dependencies.py --self-test     check that the checker finds planted violations

Exit status: 0 when the tree keeps the rules, 1 otherwise. Python 3 standard library only.
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# What each part may include and link besides itself.
RULES = {
    "graph": set(),
    "device": {"graph"},
    "runtime": {"graph", "device"},
    "io": {"graph"},
    "lang": {"graph"},
    "report": set(),
    "text": {"graph"},
    "distributed": set(),
    "model": {"lang", "graph", "io", "device", "runtime", "text"},
    "train": {"lang", "graph", "io", "device", "runtime", "model", "report", "text", "distributed"},
    "serve": {"graph", "device", "runtime", "io"},
    "library": {"serve", "graph", "device", "runtime", "io"},
    "bundle": {"lang", "graph", "io", "device", "runtime", "model", "train", "report", "text", "distributed"},
    "cli": {"lang", "graph", "io", "device", "runtime", "model", "train", "serve", "library", "report", "bundle", "text",
            "distributed"},
}

# Why each part is where it is: shown with a violation.
REASONS = {
    "graph": "graph knows nothing of the language, of devices or of files",
    "device": "a device knows the graph and nothing above it; it never sees a Lisp value",
    "runtime": "the runtime sits on graph and device and knows no Lisp",
    "io": "io reads and writes tensors (graph) and knows no Lisp and no device",
    "lang": "lang builds graphs through the graph's builders; it never runs them",
    "report": "report turns text and numbers into text; the caller reads and writes the files",
    "text": "text runs tokenizers on text it is given (graph only for its codes' rows); no file, no Lisp",
    "distributed": "distributed moves bytes between workers; it knows no tensor, graph or Lisp",
    "model": "model sits on lang, graph, io, device, runtime and text",
    "train": "train sits on lang, graph, io, device, runtime, model, report, text and distributed",
    "serve": "serve runs model.json through the runtime; it needs no Lisp",
    "library": "libsexpgpu runs a model as serve does, in the caller's process; it holds no Lisp",
    "bundle": "bundle sits on train and what train reaches: it evaluates a run file to copy what it reads",
    "cli": "cli may use every part",
}

# Headers graph may not include: it knows nothing of files or processes.
GRAPH_FORBIDDEN_SYSTEM = {"fstream", "filesystem", "cstdio", "stdio.h", "unistd.h", "fcntl.h", "dirent.h"}

# The CUDA toolkit's headers, and the one folder that may include them.
CUDA_HEADER = re.compile(r"^(cuda|cublas|nvrtc|cufft|curand|cusparse|cusolver|nvJitLink)\w*\.h$|^cuda/")
CUDA_FOLDER = "src/device/cuda/"

# (file relative to the root, included part) -> why it is allowed. None today.
EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
SOURCE_SUFFIXES = {".cc", ".h", ".cpp", ".hpp", ".cu", ".cuh"}


def check_includes(root):
    problems = []
    src = root / "src"
    for part_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        part = part_dir.name
        if part not in RULES:
            problems.append(f"src/{part}/: a part that docs/architecture.md and this test do not know; add its rule")
            continue
        allowed = RULES[part] | {part}
        for path in sorted(part_dir.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                quote, name = match.groups()
                if quote == "<":
                    if part == "graph" and name in GRAPH_FORBIDDEN_SYSTEM:
                        problems.append(f"{rel}:{number}: includes <{name}>: {REASONS['graph']}")
                    if CUDA_HEADER.match(name) and not rel.startswith(CUDA_FOLDER):
                        problems.append(f"{rel}:{number}: includes <{name}>: only {CUDA_FOLDER} includes the "
                                        "CUDA toolkit's headers (a build without the toolkit builds the rest)")
                    continue
                target = name.split("/")[0] if "/" in name else None
                if target is None:
                    problems.append(
                        f'{rel}:{number}: includes "{name}": include a header by its part, "{part}/{name}"')
                    continue
                if target in allowed or (rel, target) in EXCEPTIONS:
                    continue
                may = ", ".join(sorted(RULES[part])) or "nothing else"
                problems.append(f'{rel}:{number}: includes "{name}": {part} may include {may} '
                                f"({REASONS[part]})")
    return problems


def check_links(root):
    problems = []
    for cmake in sorted((root / "src").glob("*/CMakeLists.txt")):
        part = cmake.parent.name
        if part not in RULES:
            continue
        rel = cmake.relative_to(root).as_posix()
        text = cmake.read_text()
        for match in LINK.finditer(text):
            target, rest = match.groups()
            if target not in (f"sexpgpu_{part}", "sexpgpu"):
                continue
            number = text.count("\n", 0, match.start()) + 1
            for lib in re.findall(r"\bsexpgpu_(\w+)", rest):
                if lib == part or lib in RULES[part] or (rel, lib) in EXCEPTIONS:
                    continue
                may = ", ".join(sorted(RULES[part])) or "nothing else"
                problems.append(f"{rel}:{number}: {target} links sexpgpu_{lib}: {part} may link {may} "
                                f"({REASONS[part]})")
    return problems


def check_page(root):
    """The table in docs/architecture.md: | `part/` | `a`, `b` | ... |"""
    page = root / "docs" / "architecture.md"
    if not page.exists():
        return ["docs/architecture.md: missing; it states the rules this test enforces"]
    found = {}
    for line in page.read_text().splitlines():
        row = re.match(r"^\|\s*`(\w+)/`\s*\|([^|]*)\|", line)
        if row:
            found[row.group(1)] = set(re.findall(r"`(\w+)/?`", row.group(2)))
    problems = []
    for part, allowed in RULES.items():
        if part not in found:
            problems.append(f"docs/architecture.md: the table of rules has no row for `{part}/`")
        elif found[part] != allowed:
            problems.append(f"docs/architecture.md: the row of `{part}/` says {sorted(found[part])}, "
                            f"this test says {sorted(allowed)}: make them agree")
    for part in found.keys() - RULES.keys():
        problems.append(f"docs/architecture.md: the table has a row for `{part}/`, which this test does not know")
    return problems


def check(root):
    return check_includes(root) + check_links(root) + check_page(root)


def self_test():
    """Plants one violation of each kind in a copy of the rules' shape and expects each found."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        (root / "docs" / "architecture.md").write_text((ROOT / "docs" / "architecture.md").read_text())
        files = {
            "src/graph/ok.cc": '#include "graph/graph.h"\n#include <vector>\n',
            "src/graph/bad.cc": '#include "graph/graph.h"\n#include "device/device.h"\n',
            "src/graph/files.cc": "#include <fstream>\n",
            "src/lang/runs.cc": '  #  include "runtime/program.h"\n',
            "src/device/cpu/deep.cc": '#include "lang/value.h"\n',
            "src/device/cpu/gpu.cc": "#include <cuda_runtime_api.h>\n",
            "src/device/cuda/fine.cu": '#include <cuda_runtime_api.h>\n#include "graph/graph.h"\n',
            "src/io/bare.cc": '#include "util.h"\n',
            "src/report/writes.cc": '#include "io/checkpoint.h"\n',
            "src/model/fine.cc": '#include "device/device.h"\n#include "runtime/program.h"\n',
            "src/runtime/CMakeLists.txt": "target_link_libraries(sexpgpu_runtime PUBLIC sexpgpu_graph\n"
                                          "  sexpgpu_lang fmt::fmt)\n",
            "src/newpart/x.cc": "",
        }
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        problems = check(root)
        expected = [
            'src/graph/bad.cc:2: includes "device/device.h"',
            "src/graph/files.cc:1: includes <fstream>",
            'src/lang/runs.cc:1: includes "runtime/program.h"',
            'src/device/cpu/deep.cc:1: includes "lang/value.h"',
            "src/device/cpu/gpu.cc:1: includes <cuda_runtime_api.h>",
            'src/io/bare.cc:1: includes "util.h"',
            'src/report/writes.cc:1: includes "io/checkpoint.h"',
            "src/runtime/CMakeLists.txt:1: sexpgpu_runtime links sexpgpu_lang",
            "src/newpart/: a part",
        ]
        failed = False
        for want in expected:
            if not any(p.startswith(want) for p in problems):
                print(f"self-test: the checker missed: {want}", file=sys.stderr)
                failed = True
        for p in problems:
            if not any(p.startswith(want) for want in expected):
                print(f"self-test: the checker reported what is allowed: {p}", file=sys.stderr)
                failed = True
        # A row of the page's table that disagrees is found too.
        page = root / "docs" / "architecture.md"
        page.write_text(page.read_text().replace("| `io/` | `graph/` |", "| `io/` | `graph/`, `lang/` |"))
        if not any(p.startswith("docs/architecture.md: the row of `io/`") for p in check_page(root)):
            print("self-test: the checker missed a table row that disagrees", file=sys.stderr)
            failed = True
    print("self-test: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} broken dependency rule(s); see docs/architecture.md", file=sys.stderr)
        return 1
    print("every part includes and links only what docs/architecture.md allows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
