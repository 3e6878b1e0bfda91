#!/usr/bin/env python3
"""End-to-end tests of bundles (docs/bundle.md): `sexpgpu bundle`, a bundle run from
another folder with its originals deleted, `sexpgpu new`, archives, and the checks.

Each case is one CTest test, e2e.bundle_<case>: `bundle_test.py SEXPGPU CASE`. The
helpers (running the program, safetensors files) are e2e_test.py's.
"""

import json
import os
import random
import shutil
import sys

import e2e_test
from e2e_test import expect, expect_error, run, train, write, write_safetensors

PARTS = b""";; The teacher's shape, and its tensors' names in the sharded file.
(defmodel pair (n)
  (defparam a (zeros [n 3]))
  (defparam b (zeros [3]))
  (lambda (x) (+ (matmul x a) b)))
(defun teacher-name (path) (if (equal path "teacher.a") "w.a" "w.b"))
"""

# A sharded with-loaded teacher, a frozen :load, a jsonl loader (read by the run and by
# its :eval pass) and a required local module.
RUN = b"""(require "sexpgpu/nn")
(require "lib/parts")
(defknob lr 1e-2 "the learning rate")
(defvar teacher (with-loaded ("teacher/model.safetensors.index.json" teacher-name) (pair 4)))
(defmodel student (n)
  (defparam offset (zeros [n]) :trainable false :load ["pos.safetensors" "offset"])
  (let ((layer (linear n 3)))
    (lambda (x) (layer (+ x offset)))))
(defvar model (student 4))
(defun prepare (batch)
  (list :inputs (field batch :x) :targets (field batch :y) :teach (teacher (field batch :x))))
(defun loss (logits prepared)
  (let ((gap (- logits (getf prepared :teach))))
    (+ (cross-entropy logits (getf prepared :targets)) (mean (* gap gap)))))
(defrun :seed 5 :data (jsonl "data/train.jsonl" :fields [:x :y]) :batch 4 :steps 6
        :optimizer (adamw :lr lr) :ema 0.9 :checkpoint-every 3 :log-every 3
        :eval (pass :name "val" :data (jsonl "data/train.jsonl" :fields [:x :y]) :every 6 :batches 1))
"""

RESULTS = ["params.safetensors", "optimizer.safetensors", "ema.safetensors", "state.json"]
SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def experiment(tmp):
    """The experiment in tmp/exp: its run file's path."""
    exp = os.path.join(tmp, "exp")
    for folder in ("lib", "teacher", "data"):
        os.makedirs(os.path.join(exp, folder))
    write(exp, "lib/parts.sx", PARTS)
    write_safetensors(os.path.join(exp, "pos.safetensors"), {"offset": ([4], [0.1, -0.2, 0.3, 0.05])})
    write_safetensors(os.path.join(exp, "teacher", SHARDS[0]),
                      {"w.a": ([4, 3], [((k * 7) % 5 - 2) / 10 for k in range(12)])})
    write_safetensors(os.path.join(exp, "teacher", SHARDS[1]), {"w.b": ([3], [0.5, -0.5, 0.25])})
    index = {"metadata": {}, "weight_map": {"w.a": SHARDS[0], "w.b": SHARDS[1]}}
    write(exp, "teacher/model.safetensors.index.json", json.dumps(index).encode())
    rows = [json.dumps({"x": [((i * 3 + j) % 7) / 7 for j in range(4)], "y": i % 3}) for i in range(20)]
    write(exp, "data/train.jsonl", ("\n".join(rows) + "\n").encode())
    return write(exp, "run.sx", RUN)


def results(location):
    """The bytes of what the run's last checkpoint holds besides experiment.json."""
    out = {}
    for name in RESULTS:
        with open(os.path.join(location, "step-00000006", name), "rb") as f:
            out[name] = f.read()
    return out


def ok(args):
    rc, out, err, _ = run(args)
    expect(rc == 0, f"sexpgpu {' '.join(args)}: exit {rc}", out, err)
    return out, err


def manifest(folder):
    with open(os.path.join(folder, "bundle.json")) as f:
        return json.load(f)


def original_run(tmp):
    """The experiment, trained where it was written: its run file and its results."""
    run_file = experiment(tmp)
    location = os.path.join(tmp, "runs", "original")
    train([run_file, "--checkpoint-dir", location])
    return run_file, results(location)


# A frozen tiny GPT-2 read by hf-model from its folder, with the folder's own tokenizer,
# under a trainable head.
HF_RUN = b"""(require "sexpgpu/nn")
(require "sexpgpu/hf")
(defvar body (hf-model "models/tiny"))
(defvar tk (tokenizer "models/tiny/tokenizer.json"))
(defmodel classifier (vocab classes)
  (let ((head (linear vocab classes)))
    (lambda (ids) (head (sum (body ids) :axis 1)))))
(defvar model (classifier 400 2))
(defun prepare (batch) (list :inputs (field batch :text) :targets (field batch :y)))
(defun loss (logits prepared) (cross-entropy logits (getf prepared :targets)))
(defrun :seed 3 :data (jsonl "reviews.jsonl" :fields [:y] :tokenize [:field :text :with tk :length 12])
  :batch 8 :steps 6 :optimizer (adamw :lr 0.05) :ema 0.9 :checkpoint-every 6)
"""
TOKENIZE_DATA = os.path.join(os.environ.get("SEXPGPU_SOURCE_DIR", ""), "tests", "ui", "tokenize", "data")


def tiny_gpt2(folder, sharded=False):
    """A random GPT-2 of one layer over the tokenizer's 400 ids, as Hugging Face writes it:
    config.json, model.safetensors (sharded: the same tensors in two SHARDS and their
    index), and the tokenizer.json it reads text through."""
    os.makedirs(folder)
    config = {"model_type": "gpt2", "vocab_size": 400, "n_positions": 12, "n_embd": 4, "n_layer": 1, "n_head": 2}
    write(folder, "config.json", json.dumps(config).encode())
    shapes = {"wte.weight": [400, 4], "wpe.weight": [12, 4], "ln_f.weight": [4], "ln_f.bias": [4]}
    for part in ("ln_1", "ln_2"):
        shapes[f"h.0.{part}.weight"], shapes[f"h.0.{part}.bias"] = [4], [4]
    for layer, shape in [("attn.c_attn", [4, 12]), ("attn.c_proj", [4, 4]), ("mlp.c_fc", [4, 16]),
                         ("mlp.c_proj", [16, 4])]:
        shapes[f"h.0.{layer}.weight"], shapes[f"h.0.{layer}.bias"] = shape, shape[1:]
    draw = random.Random(7)
    tensors = {}
    for name, shape in shapes.items():
        count = shape[0] * (shape[1] if len(shape) > 1 else 1)
        tensors[name] = (shape, [draw.gauss(1.0 if name.endswith("ln_1.weight") else 0.0, 0.2) for _ in range(count)])
    if sharded:
        names = sorted(tensors)
        weight_map = {name: SHARDS[i * 2 // len(names)] for i, name in enumerate(names)}
        for shard in SHARDS:
            write_safetensors(os.path.join(folder, shard), {n: tensors[n] for n in names if weight_map[n] == shard})
        write(folder, "model.safetensors.index.json", json.dumps({"metadata": {}, "weight_map": weight_map}).encode())
    else:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    shutil.copy(os.path.join(TOKENIZE_DATA, "tokenizer.json"), folder)


# --- Cases --------------------------------------------------------------------------------


def case_round_trip(tmp):
    """The bundle, moved with its originals deleted, runs to the original run's bits; its
    sources differ from the originals in the path literals alone; each shard is copied once;
    every command takes it; `new` runs to the same bits sharing the bundle's weights."""
    run_file, expected = original_run(tmp)
    out, err = ok(["bundle", run_file, "-o", os.path.join(tmp, "b1")])
    expect(out.startswith(f"bundle: wrote {tmp}/b1: 2 sources, 5 data files, "), "the wrote line", out, err)
    expect(err == "", "no warning for an experiment whose paths are all strings", out, err)
    listed = manifest(os.path.join(tmp, "b1"))
    data = sorted(f["path"] for f in listed["files"] if f["kind"] == "data")
    expect(sum(SHARDS[0] in p for p in data) == 1 and sum(SHARDS[1] in p for p in data) == 1,
           f"each shard copied once: {data}")
    expect(sum("train.jsonl" in p for p in data) == 1, f"the jsonl both loaders read, copied once: {data}")
    for entry in listed["files"]:
        size = os.path.getsize(os.path.join(tmp, "b1", entry["path"]))
        expect(size == entry["size"], f"bundle.json's size of {entry['path']}")
    with open(os.path.join(tmp, "b1", "run.sx"), "rb") as f:
        bundled = f.read()
    names = {os.path.basename(p).split("-", 1)[1]: p for p in data}
    restored = bundled
    for written, name in [(b"teacher/model.safetensors.index.json", "model.safetensors.index.json"),
                          (b"pos.safetensors", "pos.safetensors"), (b"data/train.jsonl", "train.jsonl")]:
        restored = restored.replace(b'"' + names[name].encode() + b'"', b'"' + written + b'"')
    expect(restored == RUN, "the bundled run file is the original with its path literals rewritten", bundled.decode())
    with open(os.path.join(tmp, "b1", "lib", "parts.sx"), "rb") as f:
        expect(f.read() == PARTS, "a module without paths is copied byte for byte")

    # Moved to another folder, the originals deleted.
    os.makedirs(os.path.join(tmp, "far"))
    bundle = os.path.join(tmp, "far", "b")
    shutil.move(os.path.join(tmp, "b1"), bundle)
    shutil.rmtree(os.path.join(tmp, "exp"))
    location = os.path.join(tmp, "runs", "bundled")
    train([bundle, "--checkpoint-dir", location])
    expect(results(location) == expected, "the bundle's run reaches the original run's bits")
    with open(os.path.join(location, "step-00000006", "experiment.json")) as f:
        loads = json.load(f)["loads"]
    for entry in loads["files"]:
        expect(os.path.isabs(entry["file"]) and entry["file"].startswith(bundle + "/data/"),
               f"the checkpoint names the bundle's copy, absolutely: {entry['file']}")
    out, err = ok(["check", bundle])
    expect(out.endswith("run.sx: ok\n"), "check takes a bundle", out, err)
    out, err = ok(["explain", bundle])
    expect("teacher.a" in out and bundle + "/data/" in out, "explain takes a bundle", out, err)
    out, err = ok(["evaluate", bundle, "--checkpoint", location])
    expect("val:" in out, "evaluate takes a bundle", out, err)
    out, err = ok(["export", bundle, "--checkpoint", location, "-o", os.path.join(tmp, "exported")])
    expect(out.startswith("export: "), "export takes a bundle", out, err)
    out, err = ok(["eval", "--file", bundle, '(teacher-name "teacher.a")'])
    expect(out == '"w.a"\n', "eval --file takes a bundle", out, err)
    rc, out, err, _ = run(["repl", bundle], stdin=b'(teacher-name "teacher.b")\n')
    expect(rc == 0 and '"w.b"' in out, "repl takes a bundle", out, err)

    # A new experiment: sources copied to edit, the weights pointed at, not copied.
    exp2 = os.path.join(tmp, "exp2")
    out, err = ok(["new", bundle, exp2])
    copied = sorted(os.path.relpath(os.path.join(d, f), exp2) for d, _, fs in os.walk(exp2) for f in fs)
    expect(copied == ["lib/parts.sx", "run.sx"], f"new copies the sources alone: {copied}")
    with open(os.path.join(exp2, "run.sx"), "rb") as f:
        text = f.read()
    expect(b'"../far/b/data/' in text, "the paths point at the bundle's copies, relative from DIR", text.decode())
    location = os.path.join(tmp, "runs", "new")
    train([os.path.join(exp2, "run.sx"), "--checkpoint-dir", location])
    expect(results(location) == expected, "the new experiment's run reaches the same bits")
    with open(os.path.join(location, "step-00000006", "experiment.json")) as f:
        for entry in json.load(f)["loads"]["files"]:
            shared = os.path.join(bundle, "data", os.path.basename(entry["file"]))
            expect(os.path.samefile(entry["file"], shared), f"the new run reads the bundle's {shared}")
    expect_error(["new", bundle, exp2], "E-BUNDLE-003", mentions=(exp2,))
    # Bundled again, it holds the same data files under the same names.
    ok(["bundle", os.path.join(exp2, "run.sx"), "-o", os.path.join(tmp, "again")])
    again = sorted(f["path"] for f in manifest(os.path.join(tmp, "again"))["files"] if f["kind"] == "data")
    expect(again == data, f"the bundle of a new experiment names its data as the first did: {again}")

    # A changed file of the bundle is refused, naming it, by every command that takes it.
    shard = os.path.join(bundle, [p for p in data if SHARDS[1] in p][0])
    with open(shard, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"\x7f")
    for args in (["run", bundle, "--checkpoint-dir", os.path.join(tmp, "runs", "changed")], ["check", bundle],
                 ["new", bundle, os.path.join(tmp, "exp3")]):
        expect_error(args, "E-LOAD-001", mentions=(shard,))
    expect(not os.path.exists(os.path.join(tmp, "exp3")), "a refused new leaves nothing")
    print("ok: bundled, moved, run to the same bits; new shares the weights; a changed file refused")


def case_hf_model(tmp):
    """hf-model's folder is copied whole as data/HASH-tiny/ (config.json, the weights,
    tokenizer.json) and its literal rewritten; the tokenizer named inside it is that copy.
    Moved with the originals deleted, the bundle runs to the original run's bits, and
    `new` points into the bundle's folder."""
    exp = os.path.join(tmp, "exp")
    tiny_gpt2(os.path.join(exp, "models", "tiny"))
    shutil.copy(os.path.join(TOKENIZE_DATA, "reviews.jsonl"), exp)
    run_file = write(exp, "run.sx", HF_RUN)
    location = os.path.join(tmp, "runs", "original")
    train([run_file, "--checkpoint-dir", location])
    expected = results(location)
    out, err = ok(["bundle", run_file, "-o", os.path.join(tmp, "b1")])
    expect(err == "", "no warning: the model's folder and the tokenizer are strings", out, err)
    data = sorted(f["path"] for f in manifest(os.path.join(tmp, "b1"))["files"] if f["kind"] == "data")
    model = [p for p in data if p.count("/") == 2]
    reviews = [p for p in data if p not in model]
    folder = os.path.dirname(model[0])
    expect(folder.startswith("data/") and folder.endswith("-tiny") and len(reviews) == 1 and
           [os.path.relpath(p, folder) for p in model] == ["config.json", "model.safetensors", "tokenizer.json"],
           f"the model's files, each once, in one folder under their own names: {data}")
    with open(os.path.join(tmp, "b1", "run.sx"), "rb") as f:
        bundled = f.read()
    restored = bundled.replace(f'"{folder}/tokenizer.json"'.encode(), b'"models/tiny/tokenizer.json"')
    restored = restored.replace(f'"{folder}"'.encode(), b'"models/tiny"').replace(reviews[0].encode(), b"reviews.jsonl")
    expect(restored == HF_RUN, "the bundled run file is the original with its paths rewritten", bundled.decode())

    os.makedirs(os.path.join(tmp, "far"))
    bundle = os.path.join(tmp, "far", "b")
    shutil.move(os.path.join(tmp, "b1"), bundle)
    shutil.rmtree(exp)
    location = os.path.join(tmp, "runs", "bundled")
    train([bundle, "--checkpoint-dir", location])
    expect(results(location) == expected, "the bundle's run reaches the original run's bits")

    exp2 = os.path.join(tmp, "exp2")
    ok(["new", bundle, exp2])
    with open(os.path.join(exp2, "run.sx"), "rb") as f:
        text = f.read()
    expect(f'(hf-model "../far/b/{folder}")'.encode() in text and
           f'(tokenizer "../far/b/{folder}/tokenizer.json")'.encode() in text,
           "new points hf-model and the tokenizer at the bundle's model folder", text.decode())
    expect(sorted(os.listdir(exp2)) == ["run.sx"], "new copies no model file")
    location = os.path.join(tmp, "runs", "new")
    train([os.path.join(exp2, "run.sx"), "--checkpoint-dir", location])
    expect(results(location) == expected, "the new experiment's run reaches the same bits")

    # The same tensors sharded: the index and each shard it names, in the model's folder.
    exp3 = os.path.join(tmp, "exp3")
    tiny_gpt2(os.path.join(exp3, "models", "tiny"), sharded=True)
    shutil.copy(os.path.join(TOKENIZE_DATA, "reviews.jsonl"), exp3)
    run_file = write(exp3, "run.sx", HF_RUN)
    ok(["bundle", run_file, "-o", os.path.join(tmp, "b3")])
    model = sorted(f["path"] for f in manifest(os.path.join(tmp, "b3"))["files"] if f["path"].count("/") == 2)
    names = [os.path.basename(p) for p in model]
    expect(names == ["config.json", *SHARDS, "model.safetensors.index.json", "tokenizer.json"],
           f"the sharded model's files in its folder: {model}")
    shutil.rmtree(exp3)
    location = os.path.join(tmp, "runs", "sharded")
    train([os.path.join(tmp, "b3"), "--checkpoint-dir", location])
    expect(results(location) == expected, "the sharded model's bundle reaches the same bits")
    print("ok: an hf-model folder, whole or sharded, bundled, run to the same bits, shared by new")


def case_archive(tmp):
    """--archive writes one .tar.zst (or .tar) that run and new take: the same bits."""
    run_file, expected = original_run(tmp)
    out, err = ok(["bundle", run_file, "-o", os.path.join(tmp, "b"), "--archive"])
    archive = out.split()[2].rstrip(":")
    expect(archive in (os.path.join(tmp, "b.tar.zst"), os.path.join(tmp, "b.tar")), "the archive's name", out, err)
    expect(os.path.isfile(archive) and not os.path.exists(os.path.join(tmp, "b")), "one file, no folder", out, err)
    shutil.rmtree(os.path.join(tmp, "exp"))
    os.environ["SEXPGPU_CACHE_DIR"] = os.path.join(tmp, "cache")
    location = os.path.join(tmp, "runs", "archived")
    out = train([archive, "--checkpoint-dir", location])
    expect("trained b:" in out, "the run's slug is the archive's name", out)
    expect(results(location) == expected, "the archive's run reaches the original run's bits")
    exp = os.path.join(tmp, "exp2")
    ok(["new", archive, exp])
    expect(os.path.isfile(os.path.join(exp, "bundle", "bundle.json")), "new unpacks the archive into DIR/bundle/")
    with open(os.path.join(exp, "run.sx"), "rb") as f:
        expect(b'"bundle/data/' in f.read(), "the paths point into DIR/bundle/")
    location = os.path.join(tmp, "runs", "new")
    train([os.path.join(exp, "run.sx"), "--checkpoint-dir", location])
    expect(results(location) == expected, "the new experiment's run reaches the same bits")
    expect_error(["bundle", run_file, "-o", os.path.join(tmp, "c")], "E-READ-010")
    print("ok: an archive run and started from")


def case_refusals(tmp):
    """A malformed bundle.json, a missing file, a place that exists, a damaged archive:
    each a coded error; the bundle's --knob recorded as its default, a flag given wins."""
    run_file = experiment(tmp)
    bundle = os.path.join(tmp, "b")
    ok(["bundle", run_file, "-o", bundle, "--knob", "lr=0.5"])
    expect(manifest(bundle)["knobs"] == {"lr": "0.5"}, "the --knob given to bundle is recorded")
    out, err = ok(["eval", "--file", bundle, "lr"])
    expect(out == "0.5\n", "the recorded knob is the bundle's default", out, err)
    out, err = ok(["eval", "--file", bundle, "--knob", "lr=0.25", "lr"])
    expect(out == "0.25\n", "a --knob given wins over the bundle's", out, err)
    expect_error(["bundle", run_file, "-o", bundle], "E-BUNDLE-003", mentions=(bundle,))
    # Folders named with a trailing slash are the folders themselves.
    ok(["bundle", run_file, "-o", os.path.join(tmp, "slash") + "/"])
    ok(["new", os.path.join(tmp, "slash") + "/", os.path.join(tmp, "slash-exp") + "/"])
    expect(os.path.isfile(os.path.join(tmp, "slash-exp", "run.sx")), "new DIR/ writes DIR")
    broken = os.path.join(tmp, "broken")
    shutil.copytree(bundle, broken)
    with open(os.path.join(broken, "bundle.json"), "rb") as f:
        text = f.read()
    write(broken, "bundle.json", text[: len(text) // 2])
    expect_error(["run", broken], "E-BUNDLE-001", mentions=("bundle.json",))
    write(broken, "bundle.json", text.replace(b'"run.sx"', b'"../run.sx"', 1))
    expect_error(["check", broken], "E-BUNDLE-001", mentions=("outside",))
    listed = json.loads(text)
    listed["files"][0]["kind"], listed["files"][1]["size"] = 7, -1
    write(broken, "bundle.json", json.dumps(listed).encode())
    expect_error(["check", broken], "E-BUNDLE-001", mentions=("size and sha256",))
    write(broken, "bundle.json", text)
    jsonl = [f["path"] for f in manifest(broken)["files"] if f["path"].endswith("train.jsonl")][0]
    os.remove(os.path.join(broken, jsonl))
    expect_error(["run", broken], "E-BUNDLE-002", mentions=(jsonl,))
    expect_error(["new", broken, os.path.join(tmp, "exp2")], "E-BUNDLE-002")
    damaged = write(tmp, "damaged.tar", b"not an archive at all" * 100)
    expect_error(["run", damaged], "E-BUNDLE-004", mentions=("damaged.tar",))
    expect_error(["new", os.path.join(tmp, "nowhere"), os.path.join(tmp, "exp3")], "E-BUNDLE-001",
                 mentions=("nowhere",))
    print("ok: every refusal coded")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "bundle"))
