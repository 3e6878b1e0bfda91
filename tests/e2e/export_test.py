#!/usr/bin/env python3
"""End-to-end tests of `sexpgpu export` (docs/cli.md, its export section): a trained
checkpoint exported and read back, the refusals, the moved lines after an edit, the
variant and knobs the checkpoint records, a full disk.

Each case is one CTest test, e2e.export_<case>: `export_test.py SEXPGPU CASE`. The
helpers (running the program, the tiny training file) are e2e_test.py's.
"""

import json
import os
import resource
import signal
import struct
import subprocess
import sys

import e2e_test
from e2e_test import TRAIN_FILE, expect, expect_error, run, train, training_dir, write

try:
    from safetensors.numpy import load_file
except ImportError:  # the e2e tests run without it, saying so
    load_file = None


def exported(args, timeout=120):
    rc, out, err, _ = run(["export", *args], timeout=timeout)
    expect(rc == 0, f"sexpgpu export {' '.join(args)}: exit {rc}", out, err)
    return out


def trained_run(tmp, name="run.sx", text=TRAIN_FILE, extra=()):
    """The training file trained to step 12 (checkpoints at 3, 6, 9, 12, with :ema)."""
    run_file = training_dir(tmp, name, text)
    location = os.path.join(tmp, "runs", os.path.splitext(name)[0])
    train([run_file, "--checkpoint-dir", location, *extra])
    return run_file, location


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def format_size(n):
    for unit in ["KiB", "MiB", "GiB"]:
        n /= 1024
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n:.1f} TiB"


def weights(path):
    if load_file is None:
        return None
    return load_file(path)


# --- Cases --------------------------------------------------------------------------------


def case_writes(tmp):
    """The page's output lines; model.json as the checkpoint holds it; params.safetensors
    holding every weight model.json names, the :ema averages; nothing else left behind."""
    run_file, location = trained_run(tmp)
    out_dir = os.path.join(tmp, "exports", "tiny-model")
    out = exported([run_file, "--checkpoint", location, "-o", out_dir])
    checkpoint = os.path.join(location, "step-00000012")
    model = read_json(os.path.join(out_dir, "model.json"))
    names = [p["path"] for p in model["parameters"]]
    size = os.path.getsize(os.path.join(out_dir, "params.safetensors"))
    stored = weights(os.path.join(out_dir, "params.safetensors"))
    data_bytes = sum(a.nbytes for a in stored.values()) if stored is not None else None
    lines = out.splitlines()
    expect(lines[0] == f"export: {checkpoint}", "the export: line", out)
    expect(lines[1].startswith(f"wrote {out_dir}: {len(names)} weights, "), "the wrote line", out)
    if data_bytes is not None:
        expect(lines[1] == f"wrote {out_dir}: {len(names)} weights, {format_size(data_bytes)}", "the size", out)
        expect(size > data_bytes, "the size counts the weights, not the header", out)
    expect(lines[2:] == ["  inputs  inputs [1, 8] i32", "  outputs output [1, 8, 256] f32"], "the signature", out)
    expect(sorted(os.listdir(out_dir)) == ["model.json", "params.safetensors"], f"{os.listdir(out_dir)}")
    expect(os.listdir(os.path.join(tmp, "exports")) == ["tiny-model"], "a temporary left beside the export")
    # model.json: the checkpoint's own, byte for byte in what it says, with its checkpoint,
    # step and slug.
    expect(model == read_json(os.path.join(checkpoint, "model.json")), "model.json is not the checkpoint's")
    slug = read_json(os.path.join(checkpoint, "experiment.json"))["slug"]
    expect((model["checkpoint"], model["step"], model["slug"]) == ("step-00000012", 12, slug), "metadata",
           json.dumps({k: model[k] for k in ("checkpoint", "step", "slug")}))
    if stored is None:
        print("note: no Python safetensors; the weights are not read back")
        return
    expect(sorted(stored) == sorted(names), f"the weights {sorted(stored)} are not model.json's {sorted(names)}")
    averages = weights(os.path.join(checkpoint, "ema.safetensors"))
    trained_values = weights(os.path.join(checkpoint, "params.safetensors"))
    for name in names:
        expect(stored[name].dtype.name == "float32", f"{name} is {stored[name].dtype}")
        expect((stored[name] == averages[name]).all(), f"{name} is not the :ema average")
        expect(not (stored[name] == trained_values[name]).all(), f"{name}: the average is the trained value")
    # An earlier checkpoint, named.
    earlier = os.path.join(tmp, "exports", "step-6")
    out = exported([run_file, "--checkpoint", os.path.join(location, "step-00000006"), "-o", earlier])
    expect(out.startswith(f"export: {location}/step-00000006\n"), "export: step 6", out)
    expect(read_json(os.path.join(earlier, "model.json"))["step"] == 6, "step 6's model.json")
    print("ok: exported, and read back")


def case_trained(tmp):
    """--trained: the trained weights instead of the :ema averages; without :ema, the trained
    ones either way; a bf16 parameter, held as f32 by the checkpoint and the export alike."""
    run_file, location = trained_run(tmp)
    out_dir = os.path.join(tmp, "trained")
    exported([run_file, "--checkpoint", location, "-o", out_dir, "--trained"])
    if load_file is None:
        print("note: no Python safetensors; the weights are not read back")
        return
    stored = weights(os.path.join(out_dir, "params.safetensors"))
    trained_values = weights(os.path.join(location, "step-00000012", "params.safetensors"))
    expect(stored and all((stored[n] == trained_values[n]).all() for n in stored),
           "--trained gives the trained weights")
    # A run without :ema: its weights are the trained ones either way.
    plain = TRAIN_FILE.replace(b":ema 0.9 ", b"")
    plain_dir = os.path.join(tmp, "plain")
    os.makedirs(plain_dir)
    run_file, location = trained_run(plain_dir, text=plain)
    out_dir = os.path.join(tmp, "plain-export")
    exported([run_file, "--checkpoint", location, "-o", out_dir])
    stored = weights(os.path.join(out_dir, "params.safetensors"))
    trained_values = weights(os.path.join(location, "step-00000012", "params.safetensors"))
    expect(all((stored[n] == trained_values[n]).all() for n in stored), "without :ema, the trained weights")
    # A bf16 parameter: the checkpoint and the export hold it as f32, the same values, and
    # model.json says the model reads bf16.
    bf16_dir = os.path.join(tmp, "bf16")
    os.makedirs(bf16_dir)
    with_bf16 = (plain.replace(b"(defparam positions (normal [8 dim] :std 0.02))",
                               b"(defparam positions (normal [8 dim] :std 0.02))\n"
                               b"  (defparam gain (ones [dim] :dtype :bf16))")
                 .replace(b"(lambda (ids) (head (block (+ (embed ids) positions))))",
                          b"(lambda (ids) (head (* (block (+ (embed ids) positions)) (cast gain :f32))))"))
    run_file, location = trained_run(bf16_dir, text=with_bf16, extra=["--steps", "3"])
    out_dir = os.path.join(tmp, "bf16-export")
    exported([run_file, "--checkpoint", location, "-o", out_dir, "--trained"])
    stored = weights(os.path.join(out_dir, "params.safetensors"))
    # The checkpoint holds it as f32 too (the page: "As in a checkpoint, a bf16 weight is
    # stored as f32"), values a bf16 holds exactly.
    held = weights(os.path.join(location, "step-00000003", "params.safetensors"))["model.gain"]
    rounded = [struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF0000))[0]
               for v in held.tolist()]
    expect(held.dtype.name == "float32" and held.tolist() == rounded, f"gain held as {held.dtype}: {held}")
    expect(stored["model.gain"].dtype.name == "float32" and stored["model.gain"].tolist() == held.tolist(),
           "the bf16 weight's values", str(stored["model.gain"]))
    gain = [p for p in read_json(os.path.join(out_dir, "model.json"))["parameters"] if p["path"] == "model.gain"]
    expect(gain == [{"path": "model.gain", "shape": [16], "dtype": "bf16"}], f"model.json: {gain}")
    print("ok: --trained")


def case_refusals(tmp):
    """An existing folder, another file's checkpoint, changed parameters, no checkpoint, a
    checkpoint without experiment.json, a model that cannot run alone: each a coded error
    naming what is wrong, and no folder written."""
    run_file, location = trained_run(tmp)
    out_dir = os.path.join(tmp, "out")
    os.makedirs(out_dir)
    write(out_dir, "keep.txt", b"mine")
    expect_error(["export", run_file, "--checkpoint", location, "-o", out_dir], "E-SERVE-020", mentions=(out_dir,))
    expect(os.listdir(out_dir) == ["keep.txt"], "the existing folder was touched")
    a_file = write(tmp, "a-file", b"x")
    expect_error(["export", run_file, "--checkpoint", location, "-o", a_file], "E-SERVE-020")
    fresh = os.path.join(tmp, "fresh")
    # Another file's checkpoint: a wider model.
    other = write(tmp, "other.sx", TRAIN_FILE.replace(b"(tiny 256 16)", b"(tiny 256 32)"))
    expect_error(["export", other, "--checkpoint", location, "-o", fresh], "E-CKPT-006",
                 mentions=("model.positions", "[8, 32]", "[8, 16]", "experiment.json"))
    # The same file with a parameter added.
    added = write(tmp, "run.sx", TRAIN_FILE.replace(
        b"(defparam positions (normal [8 dim] :std 0.02))",
        b"(defparam positions (normal [8 dim] :std 0.02))\n  (defparam scale (ones [dim]))"))
    expect_error(["export", added, "--checkpoint", location, "-o", fresh], "E-CKPT-006",
                 mentions=("model.scale", "not of the checkpoint"))
    write(tmp, "run.sx", TRAIN_FILE)
    # No checkpoint there; a checkpoint whose experiment.json is gone (damaged: its
    # manifest names it), or was never written.
    expect_error(["export", run_file, "--checkpoint", os.path.join(tmp, "nowhere"), "-o", fresh], "E-CKPT-003")
    os.remove(os.path.join(location, "step-00000012", "experiment.json"))
    expect_error(["export", run_file, "--checkpoint", location, "-o", fresh], "E-CKPT-008",
                 mentions=("step-00000012/experiment.json",))
    os.remove(os.path.join(location, "step-00000012", "manifest.json"))
    expect_error(["export", run_file, "--checkpoint", location, "-o", fresh], "E-CKPT-006",
                 mentions=("step-00000012: the checkpoint holds no experiment.json",))
    # A model whose prediction holds a function runs only from the file.
    infer = (TRAIN_FILE.replace(b"(lambda (ids) (head (block (+ (embed ids) positions))))",
                                b"(lambda (ids) (list (head (block (+ (embed ids) positions))) identity))")
             .replace(b"(argmax logits", b"(argmax (first logits)")
             .replace(b"(cross-entropy logits", b"(cross-entropy (first logits)"))
    infer_file, infer_location = trained_run(tmp, "infer.sx", infer, extra=["--steps", "3"])
    expect_error(["export", infer_file, "--checkpoint", infer_location, "-o", fresh], "E-INFER-001",
                 mentions=("output.1",))
    expect(not os.path.exists(fresh), "a refused export wrote its folder")
    expect(not any(n.startswith(".fresh") for n in os.listdir(tmp)), "a refused export left a temporary")
    # Usage: the flags are required.
    rc, out, err, _ = run(["export", run_file, "--checkpoint", location])
    expect(rc == 2 and "-o" in err, "export without -o is a usage error", out, err)
    print("ok: refusals")


def case_moved_lines(tmp):
    """An edit that moves lines is allowed, and the lines that moved are printed after the
    export: line; an edit in place says so; an old checkpoint without the text says it
    cannot tell."""
    run_file, location = trained_run(tmp)
    checkpoint = os.path.join(location, "step-00000012")
    recorded = read_json(os.path.join(checkpoint, "experiment.json"))["sources"]
    expect(recorded[0]["path"] == "run.sx" and recorded[0]["text"] == TRAIN_FILE.decode(),
           "experiment.json records the source's text", json.dumps(recorded)[:500])
    # Then every file it required, with its hash: here the standard library's nn.sx.
    import hashlib
    required = {os.path.basename(s["path"]): s for s in recorded[1:]}
    expect("nn.sx" in required and os.path.isabs(required["nn.sx"]["path"]), "experiment.json records nn.sx",
           json.dumps(recorded[1:])[:500])
    with open(required["nn.sx"]["path"], "rb") as f:
        expect(required["nn.sx"]["sha256"] == hashlib.sha256(f.read()).hexdigest(), "nn.sx's hash",
               json.dumps(required["nn.sx"]))
    # Unchanged: nothing between the two lines.
    out = exported([run_file, "--checkpoint", location, "-o", os.path.join(tmp, "same")])
    expect(out.splitlines()[1].startswith("wrote "), "an unchanged file reports no moved lines", out)
    # Two comment lines after the model's definition (line 6 of 21): lines 7-21 move by 2.
    lines = TRAIN_FILE.decode().split("\n")
    expect(lines[6].startswith("(defvar model"), "the training file's line 7", "\n".join(lines))
    edited = "\n".join(lines[:6] + [";; a note", ";; another"] + lines[6:])
    write(tmp, "run.sx", edited.encode())
    count = len(TRAIN_FILE.decode().rstrip("\n").split("\n"))
    out = exported([run_file, "--checkpoint", location, "-o", os.path.join(tmp, "moved")])
    expect(out.splitlines()[:2] == [f"export: {checkpoint}", f"  run.sx: lines 7-{count} are now 9-{count + 2}"],
           "the moved lines", out)
    # A comment changed on its own line: nothing moved.
    write(tmp, "run.sx", TRAIN_FILE.replace(b"(require \"sexpgpu/nn\")", b"(require \"sexpgpu/nn\") ; edited"))
    out = exported([run_file, "--checkpoint", location, "-o", os.path.join(tmp, "in-place")])
    expect(out.splitlines()[1] == "  run.sx: edited in place, no line moved", "an edit in place", out)
    # A checkpoint from before the text was recorded (and checksums: it has no manifest).
    saved = read_json(os.path.join(checkpoint, "experiment.json"))
    del saved["sources"][0]["text"]
    write(checkpoint, "experiment.json", json.dumps(saved, indent=2).encode())
    os.remove(os.path.join(checkpoint, "manifest.json"))
    out = exported([run_file, "--checkpoint", location, "-o", os.path.join(tmp, "no-text")])
    expect(out.splitlines()[1] == "  run.sx: changed since the run; its checkpoint records no text to tell which "
           "lines moved", "a checkpoint without the text", out)
    # The file under another name: said, and the rest as before.
    renamed = write(tmp, "renamed.sx", TRAIN_FILE)
    out = exported([renamed, "--checkpoint", location, "-o", os.path.join(tmp, "renamed-export")])
    expect(out.splitlines()[1] == "  renamed.sx: the checkpoint's run compiled run.sx", "a renamed file", out)
    print("ok: moved lines")


KNOB_FILE = TRAIN_FILE.replace(b'(require "sexpgpu/nn")', b'(require "sexpgpu/nn")\n(defknob dim 16 "width")\n'
                                                       b'(defvariant wide :dim 24)').replace(b"(tiny 256 16)",
                                                                                            b"(tiny 256 dim)")


def case_variant_knobs(tmp):
    """The file compiled under the variant and knobs the checkpoint records, by export and
    by evaluate alike."""
    run_file, location = trained_run(tmp, text=KNOB_FILE, extra=["--variant", "wide", "--steps", "3"])
    rc, out, err, _ = run(["evaluate", run_file, "--checkpoint", location])
    expect(rc == 0 and "val:  loss " in out, "evaluate compiles the variant the checkpoint records", out, err)
    out_dir = os.path.join(tmp, "wide")
    exported([run_file, "--checkpoint", location, "-o", out_dir])
    model = read_json(os.path.join(out_dir, "model.json"))
    shapes = {p["path"]: p["shape"] for p in model["parameters"]}
    expect(shapes["model.positions"] == [8, 24] and model["slug"].endswith("-wide"), "the variant's width",
           json.dumps(shapes))
    location = os.path.join(tmp, "runs", "knob")
    train([run_file, "--checkpoint-dir", location, "--knob", "dim=20", "--steps", "3"])
    out_dir = os.path.join(tmp, "knob")
    exported([run_file, "--checkpoint", location, "-o", out_dir])
    shapes = {p["path"]: p["shape"] for p in read_json(os.path.join(out_dir, "model.json"))["parameters"]}
    expect(shapes["model.positions"] == [8, 20], "the knob's width", json.dumps(shapes))
    # The knob gone from the file: the error says export compiles under the recorded knobs.
    write(tmp, "run.sx", TRAIN_FILE)
    expect_error(["export", run_file, "--checkpoint", location, "-o", os.path.join(tmp, "gone")], "E-RUN-003",
                 mentions=("dim", "experiment.json"))
    expect_error(["evaluate", run_file, "--checkpoint", location], "E-RUN-003",
                 mentions=("dim", "evaluate compiles the file under the variant and knobs"))
    print("ok: variant and knobs")


def case_missing_tensor(tmp):
    """A checkpoint whose params.safetensors (and ema.safetensors) lacks a parameter, one
    renamed; then a run file with an error in it: evaluate and export each report the coded
    error with the line of the file it points to, and no signal. The checkpoint's manifest
    is removed, as a checkpoint written before checksums has none, so that its files are
    read unchecked and the missing tensor is what is found."""
    run_file, location = trained_run(tmp, extra=["--steps", "3"])
    step = os.path.join(location, "step-00000003")
    os.remove(os.path.join(step, "manifest.json"))
    for name in ["params.safetensors", "ema.safetensors"]:
        path = os.path.join(step, name)
        with open(path, "rb") as f:
            data = f.read()
        expect(data.count(b'"model.head.weight"') == 1, f"{name} holds model.head.weight once")
        with open(path, "wb") as f:
            f.write(data.replace(b'"model.head.weight"', b'"model.head.weighT"'))
    out_dir = os.path.join(tmp, "out")
    for trained in [[], ["--trained"]]:
        for args in [["evaluate", run_file, "--checkpoint", location, *trained],
                     ["export", run_file, "--checkpoint", location, "-o", out_dir, *trained]]:
            rc, out, err, _ = run(args)
            expect(rc == 1 and "error[E-CKPT-006]" in err and "holds no `model.head.weight`" in err,
                   f"sexpgpu {' '.join(args)}: exit {rc}, expected E-CKPT-006", out, err)
            expect("-->" in err, f"sexpgpu {' '.join(args)}: the parameter's declaration", out, err)
    expect(not os.path.exists(out_dir), "a refused export wrote its folder")
    write(tmp, "run.sx", TRAIN_FILE + b"(no-such-function 1)\n")
    for args in [["evaluate", run_file, "--checkpoint", location],
                 ["export", run_file, "--checkpoint", location, "-o", out_dir]]:
        rc, out, err, _ = run(args)
        expect(rc == 1 and "error[E-EVAL-001]" in err and "(no-such-function 1)" in err,
               f"sexpgpu {' '.join(args)}: exit {rc}, expected E-EVAL-001 with its line", out, err)
    print("ok: missing tensor")


def case_full_disk(tmp):
    """A write that fails part-way (the file-size limit, as a full disk) is E-SERVE-021 and
    leaves neither the folder nor its temporary."""
    run_file, location = trained_run(tmp)
    out_parent = os.path.join(tmp, "exports")
    os.makedirs(out_parent)
    out_dir = os.path.join(out_parent, "model")

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 10, 16 << 10))  # the weights are 46 KiB

    proc = subprocess.run([e2e_test.SEXPGPU, "export", run_file, "--checkpoint", location, "-o", out_dir],
                          capture_output=True, timeout=120 * e2e_test.TIME_SCALE, preexec_fn=small_files,
                          env=dict(os.environ, NO_COLOR="1"))
    err = proc.stderr.decode(errors="replace")
    expect(proc.returncode == 1 and "error[E-SERVE-021]" in err and out_dir in err,
           f"a full disk: exit {proc.returncode}",
           proc.stdout.decode(errors="replace"), err)
    expect(os.listdir(out_parent) == [], f"left behind: {os.listdir(out_parent)}")
    # A temporary a killed export left (its process gone) is cleared by the next export.
    stale = os.path.join(out_parent, f".model.export-999999999-0-{os.uname().nodename}")
    os.makedirs(stale)
    exported([run_file, "--checkpoint", location, "-o", out_dir])
    expect(os.listdir(out_parent) == ["model"], f"left behind: {os.listdir(out_parent)}")
    print("ok: a full disk")


def case_killed(tmp):
    """kill -9 or SIGINT at random points of an export: the folder is whole or absent, and
    the next export to its name clears what a killed one left."""
    import random
    import time
    run_file, location = trained_run(tmp)
    out_parent = os.path.join(tmp, "exports")
    os.makedirs(out_parent)
    rng = random.Random(3)
    whole = 0
    for attempt in range(30):
        out_dir = os.path.join(out_parent, f"model-{attempt % 3}")
        proc = subprocess.Popen([e2e_test.SEXPGPU, "export", run_file, "--checkpoint", location, "-o", out_dir],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.03) * e2e_test.TIME_SCALE)  # an export takes about 0.02 s
        proc.send_signal(signal.SIGKILL if attempt % 2 else signal.SIGINT)
        proc.wait()
        if os.path.exists(out_dir):
            expect(sorted(os.listdir(out_dir)) == ["model.json", "params.safetensors"], f"{out_dir} is not whole")
            read_json(os.path.join(out_dir, "model.json"))
            if load_file is not None:
                load_file(os.path.join(out_dir, "params.safetensors"))
            whole += 1
            os.rename(out_dir, os.path.join(tmp, f"done-{attempt}"))
    exported([run_file, "--checkpoint", location, "-o", os.path.join(out_parent, "model-0")])
    exported([run_file, "--checkpoint", location, "-o", os.path.join(out_parent, "model-1")])
    exported([run_file, "--checkpoint", location, "-o", os.path.join(out_parent, "model-2")])
    expect(sorted(os.listdir(out_parent)) == ["model-0", "model-1", "model-2"],
           f"left behind: {sorted(os.listdir(out_parent))}")
    print(f"ok: 30 exports killed, {whole} of them after they finished")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "export"))
