#!/usr/bin/env python3
"""The Python safetensors package reads a file SexpGPU wrote: io_write_sample writes it,
this checks every tensor's dtype, shape and values and the metadata. Exits 77 (skipped)
when the package or numpy is missing, except under CI=true, where a skip fails.

    python3 tests/unit/io/python_reads.py build/tests/unit/io/io_write_sample
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import safetensors
    from safetensors import safe_open
except ImportError as e:
    print(f"skipped: {e.name} is not installed for {sys.executable} (scripts/setup installs it)")
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

# The dtypes in io_write_sample's order, as graph::kAllDTypes has them.
DTYPES = [("f32", "F32", np.float32), ("bf16", "BF16", None), ("f64", "F64", np.float64), ("i32", "I32", np.int32),
          ("i64", "I64", np.int64), ("bool", "BOOL", np.bool_), ("u8", "U8", np.uint8), ("u16", "U16", np.uint16)]


def expected(k, name):
    out = []
    for i in range(6):
        v = (i * 3 + k) % 11 - 5
        if name == "bool":
            v = i % 2
        if name in ("u8", "u16") and v < 0:
            v = -v
        out.append(v * (0.75 if name in ("f32", "bf16", "f64") else 1))
    return np.array(out).reshape(2, 3)


def bf16_bits(values):
    """f32 values rounded to bf16 (nearest even), as uint16 bits."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    program = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sample.safetensors")
        subprocess.run([program, path], check=True)
        raw = open(path, "rb").read()
        header_size = int.from_bytes(raw[:8], "little")
        if (8 + header_size) % 8:
            problems.append(f"the data starts at byte {8 + header_size}, not 8-byte aligned")
        # The Rust implementation's own validation, with every tensor's raw bytes.
        by_name = {name: info for name, info in safetensors.deserialize(raw)}
        with safe_open(path, framework="numpy") as f:
            if f.metadata() != {"format": "pt", "written_by": "sexpgpu"}:
                problems.append(f"metadata {f.metadata()}")
            for k, (name, st_name, np_type) in enumerate(DTYPES):
                info = by_name[name]
                if info["dtype"].upper() != st_name or list(info["shape"]) != [2, 3]:
                    problems.append(f"{name}: {info['dtype']} {info['shape']}")
                want = expected(k, name)
                if np_type is None:
                    got = np.frombuffer(info["data"], dtype=np.uint16).reshape(2, 3)
                    if not np.array_equal(got, bf16_bits(want).reshape(2, 3)):
                        problems.append(f"{name}: {got} != {want}")
                    continue
                got = f.get_tensor(name)
                if got.dtype != np_type or not np.array_equal(got, want.astype(np_type)):
                    problems.append(f"{name}: {got!r} != {want!r}")
            scalar = f.get_tensor("scalar")
            if scalar.shape != () or scalar.dtype != np.float32 or scalar != 2.5:
                problems.append(f"scalar: {scalar!r}")
            empty = f.get_tensor("empty")
            if empty.shape != (0, 4):
                problems.append(f"empty: {empty.shape}")
    for p in problems:
        print(p)
    print(f"safetensors {safetensors.__version__} read the file: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
