#!/usr/bin/env python3
"""End-to-end tests of what a command makes of a damaged checkpoint, and of what a killed
run leaves beside its checkpoints (docs/training.md, "Checkpoints and resuming").

A checkpoint records each file's size and checksum in manifest.json: every command that
reads a file (a resumed `run`, `serve`, `export`, `evaluate`, `eval --checkpoint`) refuses
one whose bytes are not those written, E-CKPT-008 naming it. A checkpoint without
manifest.json (written before checksums) loads with W-CKPT-001, and its tables are still
checked: a tensor missing, of another shape or dtype, or a state.json missing or invalid
is E-CKPT-006 naming it (serve's own E-SERVE-003 for a weight).

Each case is one CTest test, e2e.checkpoint_<case>: `checkpoint_test.py SEXPGPU CASE`.
"""

import json
import os
import shutil
import socket
import struct
import sys

import e2e_test
from e2e_test import checkpoint_bytes, expect, run, train, training_dir

PROBE = "(item (sum (abs (getf (parameters model) :positions))))"
DAMAGED = "step-00000009"  # the newest checkpoint once step 12 is removed


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_tensors(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def without_tensor(path, name):
    header, data = read_safetensors(path)
    begin, end = header.pop(name)["data_offsets"]
    for key, info in header.items():
        if key != "__metadata__" and info["data_offsets"][0] >= end:
            info["data_offsets"] = [info["data_offsets"][0] - (end - begin), info["data_offsets"][1] - (end - begin)]
    write_tensors(path, header, data[:begin] + data[end:])


def retyped(path, name, dtype=None, shape=None):
    """The tensor `name` under another dtype or shape of the same byte count."""
    header, data = read_safetensors(path)
    if dtype:
        header[name]["dtype"] = dtype
    if shape:
        header[name]["shape"] = shape
    write_tensors(path, header, data)


def flip_byte(path, at=-3):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[at] ^= 0x01
    with open(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


class Run:
    """One trained run, copied for each damage: the copy's newest checkpoint is step 9."""

    def __init__(self, tmp):
        self.tmp = tmp
        # A counter, kept in state.json: 4 rows a step.
        text = e2e_test.TRAIN_FILE.replace(b"(defun loss (logits prepared)\n",
                                           b"(defun loss (logits prepared)\n  (counter :seen 4)\n")
        expect(text != e2e_test.TRAIN_FILE, "the counter went into the training file")
        self.file = training_dir(tmp, "run.sx", text)
        self.trained = os.path.join(tmp, "trained")
        train([self.file, "--checkpoint-dir", self.trained])
        self.copies = 0

    def copy(self, checked=True):
        self.copies += 1
        location = os.path.join(self.tmp, f"copy{self.copies}")
        shutil.copytree(self.trained, location)
        shutil.rmtree(os.path.join(location, "step-00000012"))
        manifest = os.path.join(location, DAMAGED, "manifest.json")
        if not checked and os.path.exists(manifest):
            os.remove(manifest)
        return location

    def commands(self, location):
        """Each command that reads the checkpoint: its name and arguments."""
        out = os.path.join(self.tmp, "export-out")
        sock = os.path.join(self.tmp, "s.sock")
        return {
            "resume": ["run", self.file, "--checkpoint-dir", location],
            "serve": ["serve", location, "--socket", sock],
            "export": ["export", self.file, "--checkpoint", location, "-o", out],
            "evaluate": ["evaluate", self.file, "--checkpoint", location],
            "eval": ["eval", "--file", self.file, "--checkpoint", location, PROBE],
        }


def expect_refusals(run_, location, refusals, warned=False):
    """Each command named in `refusals` ({command: (code, mentions)}) exits 1 with the code
    and every mention; W-CKPT-001 is on stderr when `warned`."""
    for command, args in run_.commands(location).items():
        if command not in refusals:
            continue
        code, mentions = refusals[command]
        rc, out, err, _ = run(args)
        expect(rc == 1 and f"error[{code}]" in err, f"{command}: exit {rc}, expected error[{code}]", out, err)
        for text in mentions:
            expect(text in err, f"{command}: the error should mention {text!r}", out, err)
        expect(("warning[W-CKPT-001]" in err) == warned, f"{command}: W-CKPT-001 {'missing' if warned else 'unasked'}",
               out, err)
        expect(not os.path.exists(os.path.join(run_.tmp, "export-out")), f"{command}: wrote an export", out, err)
        print(f"ok: {command} -> {code} {mentions}")


def case_damage(tmp):
    """Every damage to a checkpoint that records checksums is refused by every command that
    reads the damaged file, E-CKPT-008 naming the file; the others read it as before."""
    run_ = Run(tmp)
    every = ("resume", "serve", "export", "evaluate", "eval")
    damages = [
        # (what, file, damage, the commands that read that file)
        ("a parameter missing", "params.safetensors", lambda p: without_tensor(p, "model.positions"), every),
        ("a parameter of another shape", "params.safetensors",
         lambda p: retyped(p, "model.positions", shape=[16, 8]), every),
        ("a parameter of another dtype", "params.safetensors", lambda p: retyped(p, "model.positions", dtype="I32"),
         every),
        ("an optimizer tensor missing", "optimizer.safetensors",
         lambda p: without_tensor(p, "opt.model.head.weight.v"), ("resume",)),
        ("state.json missing", "state.json", os.remove, ("resume",)),
        ("state.json invalid", "state.json", lambda p: write_text(p, "{\"step\": 9, \"counters\": "), ("resume",)),
    ]
    # One flipped byte in each file.
    readers = {"experiment.json": every, "params.safetensors": every, "optimizer.safetensors": ("resume",),
               "ema.safetensors": ("resume", "serve", "export", "evaluate"), "state.json": ("resume",),
               "model.json": ("serve",)}
    for name, commands in readers.items():
        damages.append((f"a byte of {name} flipped", name, flip_byte, commands))
    for what, name, damage, commands in damages:
        location = run_.copy()
        path = os.path.join(location, DAMAGED, name)
        damage(path)
        print(f"-- {what}")
        expect_refusals(run_, location, {c: ("E-CKPT-008", (path,)) for c in commands})
    # A manifest that is no longer JSON: every command refuses the checkpoint.
    location = run_.copy()
    manifest = os.path.join(location, DAMAGED, "manifest.json")
    flip_byte(manifest, 0)
    expect_refusals(run_, location, {c: ("E-CKPT-008", (manifest,)) for c in every})
    # Damage to the optimizer's state alone leaves the weights readable.
    location = run_.copy()
    flip_byte(os.path.join(location, DAMAGED, "optimizer.safetensors"))
    rc, out, err, _ = run(run_.commands(location)["evaluate"])
    expect(rc == 0 and "val:  loss " in out and "warning" not in err, "evaluate reads the undamaged weights", out, err)
    print("ok: every damage refused, naming the file")


def case_old_format(tmp):
    """A checkpoint without manifest.json loads with W-CKPT-001; what its tables name must
    still be there in its shape and dtype, and its state.json whole (E-CKPT-006 by name)."""
    run_ = Run(tmp)
    positions = "`model.positions`"
    weight = lambda code: {"resume": (code, (positions,)), "serve": ("E-SERVE-003", (positions,)),  # noqa: E731
                           "export": (code, (positions,)), "evaluate": (code, (positions,)),
                           "eval": (code, (positions,))}
    damages = [
        ("a parameter missing", "params.safetensors", lambda p: without_tensor(p, "model.positions"),
         weight("E-CKPT-006")),
        ("a parameter of another shape", "params.safetensors", lambda p: retyped(p, "model.positions", shape=[16, 8]),
         weight("E-CKPT-006")),
        ("a parameter of another dtype", "params.safetensors", lambda p: retyped(p, "model.positions", dtype="I32"),
         weight("E-CKPT-006")),
        ("an optimizer tensor missing", "optimizer.safetensors",
         lambda p: without_tensor(p, "opt.model.head.weight.v"),
         {"resume": ("E-CKPT-006", ("`opt.model.head.weight.v`", "optimizer.safetensors"))}),
        ("an average missing", "ema.safetensors", lambda p: without_tensor(p, "model.positions"),
         {"resume": ("E-CKPT-006", (positions, "ema.safetensors"))}),
        ("state.json missing", "state.json", os.remove, {"resume": ("E-CKPT-006", ("holds no state.json",))}),
        ("state.json invalid", "state.json", lambda p: write_text(p, "{\"step\": 9, \"counters\": "),
         {"resume": ("E-CKPT-006", ("state.json: not a JSON object",))}),
        ("state.json without the counter", "state.json",
         lambda p: write_text(p, json.dumps({"step": 9, "loss": 4.2, "counters": {}})),
         {"resume": ("E-CKPT-006", ("state.json: holds no number for the counter `seen`",))}),
        ("state.json of another step", "state.json",
         lambda p: write_text(p, json.dumps({"step": 3, "loss": 4.2, "counters": {}})),
         {"resume": ("E-CKPT-006", ("state.json: its `step` is 3, not the checkpoint's 9",))}),
    ]
    for what, name, damage, refusals in damages:
        location = run_.copy(checked=False)
        damage(os.path.join(location, DAMAGED, name))
        print(f"-- {what}")
        expect_refusals(run_, location, refusals, warned=True)
    # Whole, it resumes with the warning, once, to the unbroken run's bits, and its next
    # checkpoints record checksums.
    location = run_.copy(checked=False)
    rc, out, err, _ = run(run_.commands(location)["resume"])
    expect(rc == 0 and "resuming" in out and err.count("warning[W-CKPT-001]") == 1, "resuming an old checkpoint", out,
           err)
    expect(checkpoint_bytes(location, 12) == checkpoint_bytes(run_.trained, 12), "the resumed run's bits differ")
    expect(os.path.exists(os.path.join(location, "step-00000012", "manifest.json")), "the next checkpoint's manifest")
    with open(os.path.join(location, "step-00000012", "state.json")) as f:
        seen = json.load(f)["counters"]["seen"]
    expect(seen == 48, f"the counter goes on from the checkpoint's: {seen} after 12 steps of 4")
    for command in ("evaluate", "eval"):
        rc, out, err, _ = run(run_.commands(os.path.join(location, DAMAGED))[command])
        expect(rc == 0 and "warning[W-CKPT-001]" in err, f"{command} reads an old checkpoint, warning", out, err)
    print("ok: an old checkpoint loads with W-CKPT-001, its tables checked")


def case_leftovers(tmp):
    """What a run killed while writing the loss curve (or early in a resume, while
    rewriting metrics.jsonl) left: the next run removes the temporaries and draws the
    missing curve."""
    run_file = training_dir(tmp)
    location = os.path.join(tmp, "run")
    train([run_file, "--checkpoint-dir", location])
    with open(os.path.join(location, "loss.svg"), "rb") as f:
        curve = f.read()
    with open("/proc/sys/kernel/pid_max") as f:
        dead = int(f.read())  # no process has this id
    host = socket.gethostname().replace("/", "_")
    leftovers = [f".loss.svg.tmp-{dead}-3-{host}", f".metrics.jsonl.tmp-{dead}-0-{host}"]
    for name in leftovers:
        write_text(os.path.join(location, name), "half")
    os.remove(os.path.join(location, "loss.svg"))
    out = train([run_file, "--checkpoint-dir", location])
    expect("resuming" in out, "the finished run finds itself done", out)
    left = [n for n in os.listdir(location) if n.startswith(".")]
    expect(left == [], f"the killed run's temporaries are left: {left}")
    with open(os.path.join(location, "loss.svg"), "rb") as f:
        expect(f.read() == curve, "the loss curve drawn again is not the run's")
    # A resumed run clears them too, before it writes anything.
    shutil.rmtree(os.path.join(location, "step-00000012"))
    for name in leftovers:
        write_text(os.path.join(location, name), "half")
    out = train([run_file, "--checkpoint-dir", location])
    left = [n for n in os.listdir(location) if n.startswith(".")]
    expect("resuming" in out and left == [], f"a resumed run leaves the temporaries: {left}", out)
    print("ok: leftovers removed, the curve drawn")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "checkpoint"))
