#!/usr/bin/env python3
"""End-to-end tests of training (`sexpgpu run`): the same bits run after run, on one core or
two and after kill -9; bf16 products; the run file's errors; `defrun :after`; a frozen
parameter loaded from a file and named by the checkpoint.

Each case is one CTest test, e2e.train_<case>: `train_test.py SEXPGPU CASE`. The helpers
(running the program, the tiny training file) are e2e_test.py's.
"""

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

import e2e_test
from e2e_test import (TRAIN_FILE, checkpoint_bytes, expect, expect_error, frozen_load_dir, run,
                      safetensors_names, train, training_dir, write, write_safetensors)


def case_determinism(tmp):
    """Two runs of one file give the same bits, on one core or two."""
    run_file = training_dir(tmp)
    locations = []
    for i, cores in enumerate(["1", "1", "2"]):
        location = os.path.join(tmp, f"run{i}")
        out = train([run_file, "--checkpoint-dir", location, "--cpu-cores", cores])
        expect(out.rstrip().splitlines()[-1].startswith("trained ") and "loss.svg" in out, "the run's last line", out)
        # The log line's rates: tokens/s is steps/s times the batch's 4 rows of 8 tokens.
        rates = re.search(r"step 12/12 .* ([\d.]+) steps/s  ([\d.]+) tokens/s  data [\d.]+ ms/step", out)
        expect(rates and abs(float(rates[2]) - 32 * float(rates[1])) <= 0.01 * float(rates[2]) + 1,
               "the log line's steps/s and tokens/s", out)
        locations.append(location)
    first = checkpoint_bytes(locations[0], 12)
    for location in locations[1:]:
        expect(checkpoint_bytes(location, 12) == first, f"{location} differs from {locations[0]}")
    with open(os.path.join(locations[0], "metrics.jsonl")) as f:
        lines = f.read().splitlines()
    expect(len(lines) == 12 and '"step":1,' in lines[0] and '"top"' in lines[0], "metrics.jsonl", "\n".join(lines))
    expect('"val/top"' in lines[5] and '"val/loss"' in lines[11] and "val/" not in lines[4], "the pass every 6 steps",
           "\n".join(lines))
    # evaluate: the pass on a checkpoint, with the :ema averages or the trained parameters.
    for extra, says in [([], "the :ema averages"), (["--trained"], "the trained parameters")]:
        rc, out, err, _ = run(["evaluate", run_file, "--checkpoint", locations[0], *extra])
        expect(rc == 0 and says in out and "val:  loss " in out and " top " in out, "evaluate", out, err)
    with open(os.path.join(locations[0], "step-00000012", "model.json")) as f:
        model = json.load(f)
    expect(model["inputs"] == [{"name": "inputs", "shape": [1, 8], "dtype": "i32"}]
           and model["outputs"] == [{"name": "output", "shape": [1, 8, 256], "dtype": "f32"}]
           and model["step"] == 12 and model["graph"]["format"] == "sexpgpu-graph"
           and "model.positions" in [p["path"] for p in model["parameters"]], "model.json", json.dumps(model)[:2000])
    steps = sorted(d for d in os.listdir(locations[0]) if d.startswith("step-"))
    expect(steps == [f"step-{s:08d}" for s in (3, 6, 9, 12)], f"checkpoints {steps}")
    print("ok: three runs, the same bits")


def case_resume_after_kill(tmp):
    """kill -9 at random points, then run again: the newest whole checkpoint is resumed and
    the final parameters are the unbroken run's bits."""
    run_file = training_dir(tmp)
    unbroken = os.path.join(tmp, "unbroken")
    train([run_file, "--checkpoint-dir", unbroken])
    broken = os.path.join(tmp, "broken")
    rng = random.Random(5)
    env = dict(os.environ, NO_COLOR="1")
    for attempt in range(40):
        if os.path.isdir(os.path.join(broken, "step-00000012")):
            break
        proc = subprocess.Popen([e2e_test.SEXPGPU, "run", run_file, "--checkpoint-dir", broken], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(0.05, 0.6) * e2e_test.TIME_SCALE)
        proc.kill()
        proc.wait()
        for d in os.listdir(broken) if os.path.isdir(broken) else []:
            if d.startswith("step-"):
                names = set(os.listdir(os.path.join(broken, d)))
                expect({"params.safetensors", "optimizer.safetensors", "experiment.json", "state.json"} <= names,
                       f"{d} after a kill holds only {sorted(names)}")
    train([run_file, "--checkpoint-dir", broken])
    expect(checkpoint_bytes(broken, 12) == checkpoint_bytes(unbroken, 12), "the resumed run's bits differ")
    print(f"ok: resumed after kills, the same bits")


def case_bf16(tmp):
    """`defrun :precision :bf16`: the step, the passes and the model alone run their products
    on bf16 operands; the weights stay f32; the run learns, and not the f32 run's bits."""
    base = TRAIN_FILE.decode()
    runs = {}
    for precision in ["f32", "bf16"]:
        run_file = training_dir(tmp, f"{precision}.sx", base.replace("(defrun :seed 3", f"(defrun :seed 3 :precision :{precision}").encode())
        location = os.path.join(tmp, precision)
        out = train([run_file, "--checkpoint-dir", location])
        runs[precision] = (location, out)
    with open(os.path.join(runs["bf16"][0], "step-00000012", "model.json")) as f:
        model = json.load(f)
    products = [n for n in model["graph"]["nodes"] if n["op"] == "matmul"]
    expect(model["precision"] == "bf16" and products and all(n["dtype"] == "bf16" for n in products),
           f"model.json under bf16: precision {model['precision']}, products {[n['dtype'] for n in products]}")
    expect(model["outputs"][0]["dtype"] == "f32", f"the output keeps its dtype: {model['outputs']}")
    f32, bf16 = (checkpoint_bytes(runs[p][0], 12)["params.safetensors"] for p in ["f32", "bf16"])
    expect(f32 != bf16, "bf16 products train other bits than f32 ones")
    losses = [float(line.split("loss ")[1].split()[0]) for line in runs["bf16"][1].splitlines() if line.startswith("step ")]
    expect(losses and losses[-1] < losses[0], f"the bf16 run learns: {losses}")
    bad = write(tmp, "f16.sx", base.replace("(defrun :seed 3", "(defrun :seed 3 :precision :f16").encode())
    expect_error(["run", bad, "--checkpoint-dir", os.path.join(tmp, "f16")], "E-RUN-001", mentions=(":precision",))
    print("ok: :precision :bf16")


def case_errors(tmp):
    training_dir(tmp)
    base = TRAIN_FILE.decode()
    cases = [
        ("E-RUN-005", base.replace("(defun loss", "(defun not-loss"), "`loss`"),
        ("E-RUN-006", base.replace("(list :inputs", "(list :in"), ":inputs"),
        ("E-RUN-007", base.replace("(cross-entropy logits (getf prepared :targets))", "logits"), "scalar"),
        ("E-RUN-008", base.replace(":lr 1e-2", ":lr 1e30"), "step"),
        ("E-RUN-009", base.replace(':data (text-windows "text.txt" :window 8)', "", 1), ":data"),
    ]
    for i, (code, text, mention) in enumerate(cases):
        path = write(tmp, f"bad{i}.sx", text.encode())
        expect_error(["run", path, "--checkpoint-dir", os.path.join(tmp, f"bad{i}")], code, mentions=(mention,))
    # A prediction holding a function cannot run alone: a note, and the run goes on without model.json.
    text = (TRAIN_FILE.replace(b"(lambda (ids) (head (block (+ (embed ids) positions))))",
                               b"(lambda (ids) (list (head (block (+ (embed ids) positions))) identity))")
            .replace(b"(argmax logits", b"(argmax (first logits)").replace(b"(cross-entropy logits", b"(cross-entropy (first logits)"))
    path = write(tmp, "infer.sx", text)
    rc, out, err, _ = run(["run", path, "--checkpoint-dir", os.path.join(tmp, "infer"), "--steps", "3"])
    expect(rc == 0 and "error[E-INFER-001]" in err and "output.1" in err and "no model" in err, "E-INFER-001", out, err)
    expect(not os.path.exists(os.path.join(tmp, "infer", "step-00000003", "model.json")), "no model.json", out, err)
    # A location holding another file's checkpoints is refused, unless --fresh.
    first = write(tmp, "first.sx", TRAIN_FILE)
    other = write(tmp, "other.sx", TRAIN_FILE)
    location = os.path.join(tmp, "shared")
    train([first, "--checkpoint-dir", location, "--steps", "3"])
    expect_error(["run", other, "--checkpoint-dir", location, "--steps", "3"], "E-CKPT-005", mentions=("first",))
    out = train([other, "--checkpoint-dir", location, "--steps", "3", "--fresh"])
    expect(os.path.isdir(location + "-2/step-00000003"), "--fresh starts in LOC-2", out)
    # The same file with a parameter frozen that the checkpoint trained is refused by name.
    frozen = TRAIN_FILE.replace(b"(normal [8 dim] :std 0.02)", b"(normal [8 dim] :std 0.02) :trainable false")
    write(tmp, "first.sx", frozen)
    expect_error(["run", first, "--checkpoint-dir", location, "--steps", "6"], "E-CKPT-006", mentions=("positions",))


def case_after(tmp):
    """`defrun :after` runs when the run ends, with the trained parameters: what it prints is
    what `eval --checkpoint` computes from the newest checkpoint."""
    probe = "(item (sum (abs (getf (parameters model) :positions))))"
    text = TRAIN_FILE.replace(b":log-every 4", b":log-every 4 :after (lambda () (print " + probe.encode() + b"))")
    run_file = training_dir(tmp, "after.sx", text)
    location = os.path.join(tmp, "after")
    out = train([run_file, "--checkpoint-dir", location, "--steps", "6"])
    printed = out.rstrip().splitlines()[-1]
    expect(out.rstrip().splitlines()[-2].startswith("trained "), ":after prints after the run's last line", out)
    rc, evaluated, err, _ = run(["eval", "--file", run_file, "--checkpoint", location, probe])
    expect(rc == 0 and printed == evaluated.strip(), f":after printed {printed}, eval --checkpoint {evaluated}", out,
           err)
    rc, initial, err, _ = run(["eval", "--file", run_file, probe])
    expect(rc == 0 and initial.strip() != printed, "the trained parameters, not the initial ones", initial, err)
    out = train([run_file, "--checkpoint-dir", location, "--steps", "6"])
    expect(out.rstrip().splitlines()[-1] == printed, "a run that finds itself done runs :after too", out)
    bad = write(tmp, "bad-after.sx", TRAIN_FILE.replace(b":log-every 4", b":log-every 4 :after 3"))
    expect_error(["run", bad, "--checkpoint-dir", os.path.join(tmp, "bad")], "E-RUN-001", mentions=(":after",))
    print("ok: :after")


def case_frozen_load(tmp):
    """A frozen :load parameter is named by the checkpoint, not copied: experiment.json records
    its file, tensor, size and hash; resume, evaluate and eval --checkpoint read the file again,
    and refuse it with E-LOAD-001 once its bytes changed."""
    run_file = frozen_load_dir(tmp)
    pos = os.path.join(tmp, "pos.safetensors")
    unbroken = os.path.join(tmp, "unbroken")
    train([run_file, "--checkpoint-dir", unbroken])
    # The same run stopped after step 6: its later checkpoints removed.
    location = os.path.join(tmp, "resumed")
    shutil.copytree(unbroken, location)
    for step in (9, 12):
        shutil.rmtree(os.path.join(location, f"step-{step:08d}"))
    out = train([run_file, "--checkpoint-dir", location])
    expect("resuming" in out, "the second run resumes", out)
    expect(checkpoint_bytes(location, 12) == checkpoint_bytes(unbroken, 12), "the resumed run's bits differ")
    folder = os.path.join(location, "step-00000012")
    names = safetensors_names(os.path.join(folder, "params.safetensors"))
    expect("model.positions" not in names and "model.head.weight" in names, f"params.safetensors holds {names}")
    with open(os.path.join(folder, "experiment.json")) as f:
        loads = json.load(f)["loads"]
    with open(pos, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    expect(loads == {"parameters": [{"path": "model.positions", "file": pos, "tensor": "pos"}],
                     "files": [{"file": pos, "size": os.path.getsize(pos), "sha256": digest}]},
           f"experiment.json's loads: {loads}")
    rc, out, err, _ = run(["evaluate", run_file, "--checkpoint", location])
    expect(rc == 0 and "val:  loss " in out, "evaluate reads the frozen file", out, err)
    probe = "(item (sum (abs (getf (parameters model) :positions))))"
    rc, out, err, _ = run(["eval", "--file", run_file, "--checkpoint", location, probe])
    expect(rc == 0 and abs(float(out.split()[-1]) - 12.0) < 1e-3, "eval --checkpoint reads the frozen file", out, err)
    # Another tensor of the same file is not what the run loaded.
    other = write(tmp, "frozen.sx", open(run_file, "rb").read().replace(b'"pos"])', b'"pos2"])'))
    write_safetensors(pos, {"pos": ([8, 16], [((k * 37) % 19 - 9) / 50 for k in range(128)]),
                            "pos2": ([8, 16], [0.0] * 128)})
    expect_error(["run", other, "--checkpoint-dir", location, "--steps", "15"], "E-CKPT-006",
                 mentions=("model.positions", "pos2"))
    # The file the run read, changed: every command that reads it refuses.
    write(tmp, "frozen.sx", open(run_file, "rb").read().replace(b'"pos2"])', b'"pos"])'))
    for args in (["run", run_file, "--checkpoint-dir", location, "--steps", "15"],
                 ["evaluate", run_file, "--checkpoint", location],
                 ["eval", "--file", run_file, "--checkpoint", location, probe]):
        expect_error(args, "E-LOAD-001", mentions=(pos,))
    print("ok: a frozen :load parameter named, read again, refused once changed")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "train"))
