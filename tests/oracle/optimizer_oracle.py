#!/usr/bin/env python3
"""The optimizer step against PyTorch, its oracle (docs/optimizers.md).

Each case is a few parameters with fixed initial values and a quadratic loss,
sum(weight * (p - target)^2) over the parameters. SexpGPU runs it with
`train_optimizer_oracle` (tests/unit/train/optimizer_oracle.cc: one graph per step with
the loss, its gradients by autodiff and src/train/optimizer.h's update, fed its outputs
back step after step); PyTorch runs the same with torch.optim (AdamW or SGD, parameter
groups), torch.optim.lr_scheduler.LambdaLR with the schedule's factor,
torch.nn.utils.clip_grad_norm_ and torch.optim.swa_utils.AveragedModel for the EMA.
Every step's loss, learning rate, gradient norm, parameters and EMA must agree within
1e-5 relative (plus 1e-6 absolute, for values near zero). Then a self-check: PyTorch run
with one setting changed must NOT agree, so a pass means what it says.

    python3 tests/oracle/optimizer_oracle.py --program build/tests/unit/train/train_optimizer_oracle

PyTorch is Debian's python3-torch, installed for /usr/bin/python3: when the Python
running this lacks it (a venv over another Python), the script runs itself again under
/usr/bin/python3 if that one has it. Without PyTorch it is skipped (exit 77), also under
CI=true as long as scripts/setup does not install it; once setup installs it, a skip
under CI=true is a failure.

Exit status: 0 all agreed, 1 a mismatch (or an error), 77 skipped.
"""
import argparse
import json
import math
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

RTOL, ATOL = 1e-5, 1e-6


sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_import import import_torch  # noqa: E402

torch = import_torch("optimizer oracle")


MODEL = """
(defmodel toy ()
  (defparam w (zeros [4 3]))
  (defparam b (zeros [3]) :tags [:no-decay])
  (defparam scale (zeros [5]) :tags [:no-decay :norm])
  (defparam frozen (zeros [2]) :trainable false)
  (lambda (x) x))
(defvar model (toy))
"""
SHAPES = {"model.w": [4, 3], "model.b": [3], "model.scale": [5]}


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def values(rng, n, low, high):
    return [f32(rng.uniform(low, high)) for _ in range(n)]


def factor(schedule, s, total):
    """LambdaLR's factor: src/train/optimizer.h's definition of each schedule."""
    if schedule is None:
        return 1.0
    kind, warmup, end_ratio = schedule
    if s < warmup:
        return s / warmup
    progress = min(1.0, (s - warmup) / max(1, total - warmup))
    if kind == "constant":
        return 1.0
    if kind == "warmup-cosine":
        return end_ratio + (1 - end_ratio) * (1 + math.cos(math.pi * progress)) / 2
    return 1.0 - (1 - end_ratio) * progress


def make_cases():
    rng = random.Random(20240611)
    cases = []
    for name in ("adamw", "sgd"):
        data = {"params": {}, "targets": {}, "weights": {}}
        for path, shape in SHAPES.items():
            n = math.prod(shape)
            data["params"][path] = values(rng, n, -1, 1)
            data["targets"][path] = values(rng, n, -1, 1)
            data["weights"][path] = values(rng, n, 0.5, 3.0)
        if name == "adamw":
            case = {
                "optimizer": "(adamw :lr 0.05 :betas [0.9 0.98] :eps 1e-6 :weight-decay 0.1 :groups (list "
                             "(group (select :tag :norm) :lr 0.1 :weight-decay 0.0) "
                             "(group (select :tag :no-decay) :weight-decay 0.0)))",
                "schedule": "(warmup-cosine :warmup 5 :min-lr 0.005)",
                "grad_clip": 4.0, "ema": 0.9,
                # What torch is given: its groups, as the selectors should assign them.
                "torch": {"kind": "adamw", "lr": 0.05, "betas": (0.9, 0.98), "eps": 1e-6, "weight_decay": 0.1,
                          "groups": [{"params": ["model.w"]},
                                     {"params": ["model.scale"], "lr": 0.1, "weight_decay": 0.0},
                                     {"params": ["model.b"], "weight_decay": 0.0}],
                          "schedule": ("warmup-cosine", 5, 0.005 / 0.05)},
            }
        else:
            case = {
                "optimizer": "(sgd :lr 0.05 :momentum 0.9 :weight-decay 0.01 "
                             ":groups (list (group (select :tag :norm) :lr 0.02)))",
                "schedule": "(warmup-linear :warmup 3 :end-lr 0.005)",
                "grad_clip": 6.0, "ema": 0.8,
                "torch": {"kind": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.01,
                          "groups": [{"params": ["model.w", "model.b"]}, {"params": ["model.scale"], "lr": 0.02}],
                          "schedule": ("warmup-linear", 3, 0.005 / 0.05)},
            }
        case.update(data, name=name, model=MODEL, total_steps=20, steps=20)
        cases.append(case)
    return cases


def run_torch(case, perturb=None):
    t = dict(case["torch"])
    if perturb:
        t.update(perturb)
    torch.manual_seed(0)
    module = torch.nn.Module()
    module.ps = torch.nn.ParameterList(
        [torch.nn.Parameter(torch.tensor(case["params"][p], dtype=torch.float32).reshape(SHAPES[p])) for p in SHAPES])
    param = dict(zip(SHAPES, module.ps))
    groups = [dict(g, params=[param[p] for p in g["params"]]) for g in t["groups"]]
    if t["kind"] == "adamw":
        opt = torch.optim.AdamW(groups, lr=t["lr"], betas=t["betas"], eps=t["eps"], weight_decay=t["weight_decay"])
    else:
        opt = torch.optim.SGD(groups, lr=t["lr"], momentum=t["momentum"], weight_decay=t["weight_decay"])
    total = case["total_steps"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: factor(t["schedule"], s, total))
    decay = case["ema"]
    ema = torch.optim.swa_utils.AveragedModel(module, avg_fn=lambda avg, p, n: decay * avg + (1 - decay) * p)
    targets = {p: torch.tensor(case["targets"][p], dtype=torch.float32).reshape(SHAPES[p]) for p in SHAPES}
    weights = {p: torch.tensor(case["weights"][p], dtype=torch.float32).reshape(SHAPES[p]) for p in SHAPES}
    steps = []
    for s in range(case["steps"]):
        opt.zero_grad()
        loss = sum((weights[p] * (param[p] - targets[p]) ** 2).sum() for p in SHAPES)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(module.ps), case["grad_clip"])
        lr = t["lr"] * factor(t["schedule"], s, total)
        opt.step()
        sched.step()
        ema.update_parameters(module)
        steps.append({
            "loss": loss.item(), "lr": lr, "norm": norm.item(),
            "params": {p: param[p].detach().reshape(-1).tolist() for p in SHAPES},
            "ema": {p: e.detach().reshape(-1).tolist() for p, e in zip(SHAPES, ema.module.ps)},
        })
    return steps


def run_sexpgpu(program, case):
    with tempfile.TemporaryDirectory() as tmp:
        given, written = Path(tmp) / "case.json", Path(tmp) / "out.json"
        given.write_text(json.dumps({k: v for k, v in case.items() if k != "torch"}))
        done = subprocess.run([str(program), str(given), str(written)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit("optimizer oracle: %s failed (%d):\n%s" % (program, done.returncode, done.stderr))
        if done.stderr:
            print(done.stderr, end="")
        return json.loads(written.read_text())["steps"]


def mismatches(got, want):
    """The places where `got` (SexpGPU) and `want` (PyTorch) differ beyond the tolerance."""
    out = []

    def compare(what, g, w):
        if g is None or abs(g - w) > RTOL * abs(w) + ATOL:
            out.append("%s: SexpGPU %r, PyTorch %r" % (what, g, w))

    for s, (g, w) in enumerate(zip(got, want)):
        for key in ("loss", "lr", "norm"):
            compare("step %d %s" % (s, key), g[key], w[key])
        for kind in ("params", "ema"):
            for path, wv in w[kind].items():
                gv = g[kind].get(path)
                if gv is None or len(gv) != len(wv):
                    out.append("step %d %s %s: missing or of another size" % (s, kind, path))
                    continue
                for i, (a, b) in enumerate(zip(gv, wv)):
                    compare("step %d %s %s[%d]" % (s, kind, path, i), a, b)
    if len(got) != len(want):
        out.append("SexpGPU ran %d steps, PyTorch %d" % (len(got), len(want)))
    return out


# One setting changed at a time: each must make PyTorch disagree with SexpGPU.
PERTURBATIONS = {
    "adamw": [{"eps": 1e-4}, {"betas": (0.9, 0.99)}, {"weight_decay": 0.2},
              {"groups": [{"params": ["model.w", "model.b"]},
                          {"params": ["model.scale"], "lr": 0.1, "weight_decay": 0.0}]},
              {"schedule": ("warmup-cosine", 4, 0.1)}, {"schedule": ("warmup-cosine", 5, 0.0)}],
    "sgd": [{"momentum": 0.8}, {"weight_decay": 0.0}, {"schedule": ("warmup-linear", 3, 0.0)},
            {"groups": [{"params": ["model.w", "model.b", "model.scale"]}]}],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--program", required=True, help="train_optimizer_oracle")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    failed = 0
    for case in make_cases():
        got = run_sexpgpu(args.program, case)
        want = run_torch(case)
        problems = mismatches(got, want)
        clipped = sum(1 for w in want if w["norm"] > case["grad_clip"])
        if problems:
            failed += 1
            print("FAIL %s: %d mismatches, the first:\n  %s" % (case["name"], len(problems), "\n  ".join(problems[:10])))
        else:
            print("ok   %s: %d steps agree with torch %s (%d of them clipped; final loss %.6g)"
                  % (case["name"], len(want), torch.__version__, clipped, want[-1]["loss"]))
        for perturb in PERTURBATIONS[case["name"]]:
            if not mismatches(got, run_torch(case, perturb)):
                failed += 1
                print("SELFTEST %s: PyTorch with %r still agrees: the comparison proves nothing" % (case["name"], perturb))
        if args.verbose:
            for s, (g, w) in enumerate(zip(got, want)):
                print("  step %2d loss %.7g/%.7g lr %.6g norm %.5g" % (s, g["loss"], w["loss"], g["lr"], w["norm"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
