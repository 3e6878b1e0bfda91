#!/usr/bin/env python3
"""Training against PyTorch, its oracle (issue 10): a small GPT from sexpgpu/nn trained
50 steps by `sexpgpu run` and by PyTorch from the same initial weights on the same
batches must agree.

The run file (RUN_FILE below) is bench/gpt.sx's model, narrower and shorter, with AdamW
(weight decay off for the :no-decay group), warmup-cosine and gradient clipping. SexpGPU
writes its initial parameters (`(parameters model)`) and the 50 batches the run reads
(`take-batch` with the run's seed, step by step) with `sexpgpu eval`; PyTorch loads them
and trains bench/torch_train_peer.py's model of the same file (torch.optim.AdamW with the
same groups, LambdaLR with warmup-cosine's factor, clip_grad_norm_). Then:

  - the loss of every step (metrics.jsonl) agrees within 1e-4 relative;
  - every final parameter (step-00000050/params.safetensors) within 1e-4.

AdamW's eps is 1e-6 here, not PyTorch's 1e-8. With 1e-8, Adam turns a gradient element
of rounding-noise size (the attention's key bias, whose exact gradient is zero; an
embedding element whose terms cancel) into a step of up to ~lr, whose sign and size the
rounding decides, so the final parameters of any two float32 implementations part by
~3e-4: PyTorch in float32 and PyTorch in float64 do (4.3e-4, more than SexpGPU and
PyTorch in float32: 3.5e-4), while the losses still agree within 2e-5. With 1e-6 those
elements take steps of their gradient's size, and the parameters agree within ~6e-6. The
test prints PyTorch float32 against float64 beside SexpGPU's figures, for scale.

A self-check follows: PyTorch run again with the schedule one step late must NOT agree,
so a pass means what it says.

    python3 tests/oracle/train_oracle.py --program build/sexpgpu

PyTorch is Debian's python3-torch, installed for /usr/bin/python3: when the Python
running this lacks it, the script runs itself again under /usr/bin/python3 if that one
has it; without PyTorch it is skipped (exit 77), as optimizer_oracle.py is.

Exit status: 0 all agreed, 1 a mismatch (or an error), 77 skipped.
"""
import argparse
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LOSS_RTOL, PARAM_ATOL = 1e-4, 1e-4
STEPS = 50

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_import import import_torch  # noqa: E402

torch = import_torch("train oracle")

sys.path.insert(0, str(ROOT / "bench"))
from torch_train_peer import loss_of  # noqa: E402

CFG = dict(vocab=256, dim=32, depth=2, heads=4, window=16, rows=4)
LR, MIN_LR, WARMUP, WEIGHT_DECAY, CLIP, SEED = 3e-3, 3e-4, 10, 0.1, 0.5, 3
EPS = 1e-6

RUN_FILE = f"""
(require "sexpgpu/nn")
(defvar window {CFG['window']})
(defvar rows {CFG['rows']})
(defmodel gpt (vocab dim blocks heads context)
  (defparam positions (normal [context dim] :std 0.02))
  (let ((embed (embedding vocab dim))
        (blocks (repeat blocks (lambda (i) (transformer-block dim heads))))
        (final-norm (layer-norm dim))
        (head (linear dim vocab :bias false)))
    (lambda (ids)
      (let ((h (+ (embed ids) positions)))
        (head (final-norm (fold (lambda (x block) (block x)) h blocks)))))))
(defvar model (gpt {CFG['vocab']} {CFG['dim']} {CFG['depth']} {CFG['heads']} window))
(defvar data (text-windows "text.txt" :window window))
(defun prepare (batch)
  (let ((ids (field batch :ids)))
    (list :inputs (slice ids [0 0] [rows window]) :targets (slice ids [0 1] [rows (+ window 1)]))))
(defun loss (logits prepared) (cross-entropy logits (getf prepared :targets)))
(defrun :seed {SEED}
        :data data
        :batch rows
        :steps {STEPS}
        :optimizer (adamw :lr {LR} :eps {EPS} :weight-decay {WEIGHT_DECAY}
                          :groups (list (group (select :tag :no-decay) :weight-decay 0.0)))
        :schedule (warmup-cosine :warmup {WARMUP} :min-lr {MIN_LR})
        :grad-clip {CLIP}
        :log-every 10)
"""

DTYPES = {"F32": torch.float32, "I32": torch.int32, "I64": torch.int64, "F64": torch.float64}


def read_safetensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).clone()
    return out


def factor(s, total, late=0):
    """warmup-cosine's factor of the rate at step s (docs/optimizers.md); `late` shifts it."""
    s = max(0, s - late)
    if s < WARMUP:
        return s / WARMUP
    p = min(1.0, (s - WARMUP) / max(1, total - WARMUP))
    r = MIN_LR / LR
    return r + (1 - r) * (1 + math.cos(math.pi * p)) / 2


def torch_run(init, batches, late=0, dtype=torch.float32):
    """The losses of each step and the final parameters, trained in PyTorch."""
    params = {"model." + name: t.detach().to(dtype).clone().requires_grad_() for name, t in init.items()}
    no_decay = [t for name, t in params.items() if name.endswith(".b") or "norm." in name]
    decay = [t for name, t in params.items() if not (name.endswith(".b") or "norm." in name)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, eps=EPS)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: factor(s, STEPS, late))
    losses = []
    for ids in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(params, ids, CFG)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), CLIP)
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return losses, {name: t.detach().double() for name, t in params.items()}


def compare(ours_losses, ours_params, losses, params, verbose=False):
    """The largest relative difference of the losses, and absolute of the parameters."""
    loss_diffs = [abs(a - b) / abs(b) for a, b in zip(ours_losses, losses)]
    param_diffs = {name: float((ours_params[name].double() - t).abs().max()) for name, t in params.items()}
    if verbose:
        for s, (a, b, d) in enumerate(zip(ours_losses, losses, loss_diffs), 1):
            print(f"  step {s:2d}  loss {a:.7f}  torch {b:.7f}  relative difference {d:.2e}")
        for name, d in param_diffs.items():
            print(f"  {name:40s} largest difference {d:.2e}")
    return max(loss_diffs), max(param_diffs.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="train-oracle-") as where:
        where = Path(where)
        (where / "run.sx").write_text(RUN_FILE)
        # Text that exercises every byte the windows read; the loader picks the windows.
        (where / "text.txt").write_bytes(bytes((i * 7919 + (i >> 5) * 31) % 256 for i in range(20000)))
        batch_forms = " ".join(
            f'(save-tensors "{where}/batch-{s}.safetensors" (take-batch data :batch rows :step {s} :seed {SEED}))'
            for s in range(STEPS))
        subprocess.run([args.program, "eval", "--file", str(where / "run.sx"),
                        f'(list (save-tensors "{where}/init.safetensors" (parameters model)) {batch_forms})'],
                       check=True, stdout=subprocess.DEVNULL)
        location = where / "loc"
        subprocess.run([args.program, "run", str(where / "run.sx"), "--checkpoint-dir", str(location)],
                       check=True, stdout=subprocess.DEVNULL)
        metrics = [json.loads(line) for line in (location / "metrics.jsonl").read_text().splitlines()]
        ours_losses = [m["loss"] for m in metrics]
        ours_params = read_safetensors(location / f"step-{STEPS:08d}" / "params.safetensors")
        init = read_safetensors(where / "init.safetensors")
        batches = [read_safetensors(where / f"batch-{s}.safetensors")["ids"] for s in range(STEPS)]

    if len(ours_losses) != STEPS or set(ours_params) != {"model." + n for n in init}:
        print(f"train oracle: FAILED: {len(ours_losses)} losses, parameters {sorted(ours_params)}")
        return 1
    losses, params = torch_run(init, batches)
    loss_diff, param_diff = compare(ours_losses, ours_params, losses, params, args.verbose)
    losses64, params64 = torch_run(init, batches, dtype=torch.float64)
    scale_loss, scale_param = compare(losses, {n: t.float() for n, t in params.items()}, losses64, params64)
    print(f"train oracle: {STEPS} steps against PyTorch float32: losses within {loss_diff:.2e} relative "
          f"(tolerance {LOSS_RTOL:g}), final parameters within {param_diff:.2e} (tolerance {PARAM_ATOL:g}); "
          f"for scale, PyTorch float32 against float64: {scale_loss:.2e} and {scale_param:.2e}")
    if loss_diff > LOSS_RTOL or param_diff > PARAM_ATOL:
        print("train oracle: FAILED")
        return 1
    late_losses, late_params = torch_run(init, batches, late=1)
    late_loss, late_param = compare(ours_losses, ours_params, late_losses, late_params)
    if late_loss <= LOSS_RTOL and late_param <= PARAM_ATOL:
        print("train oracle: FAILED the self-check: the schedule one step late agreed too")
        return 1
    print(f"train oracle: self-check: with the schedule one step late, losses {late_loss:.2e}, "
          f"parameters {late_param:.2e}: caught")
    return 0

if __name__ == "__main__":
    sys.exit(main())
