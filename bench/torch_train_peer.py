"""The PyTorch peer of bench/train, and the PyTorch side of tests/oracle/train_oracle.py.

bench/gpt.sx built in PyTorch, parameter for parameter: a dict of tensors keyed by the
paths SexpGPU gives them (model.blocks.0.attn.qkv.weight), weights stored [in out] as
sexpgpu/nn stores them, and the forward written as lib/sexpgpu/nn.sx writes it:

  h = embed(ids) + positions
  each block (pre-norm): h = h + proj(attention(layer_norm(h)))
                         h = h + down(gelu_tanh(up(layer_norm(h))))
  logits = layer_norm(h) @ head; loss = mean cross-entropy of the next byte

attention: q k v from one [dim 3*dim] product, scores / sqrt(head_dim), positions after
the query set to -1e9, softmax; layer_norm eps 1e-5 (biased variance); gelu the tanh
approximation (sexpgpu/ops' `gelu`, GPT-2's); no dropout. AdamW with PyTorch's defaults
but the rate, clip_grad_norm_ at 1.0.

As a program it times training steps: `torch_train_peer.py --model tiny|small|large --text
PATH --threads N --seconds S` prints `torch VERSION threads N blas NAME (...)` and then the
mean and the best milliseconds per steady-state step (forward, backward, clipping, AdamW
step), the steps timed, over S seconds (at least 3 steps), after a warmup, and the MiB the
steps needed: how far the process's peak resident memory rose above what it held before
the first step (the parameters, the data and PyTorch itself). With
`--mode forward` it times the forward alone (no autograd), with `--mode gradient` the
gradient of the loss by every parameter (bench/forward); with `--precision bf16` those
run under torch.autocast("cpu", bfloat16), which runs every matrix product on bf16
operands (bench/forward --precision bf16). With `--rounds` it times nothing at once: after
the warmup and the first line it reads lines from standard input, each a number of
seconds S, and times that many seconds of steps for each, printing the same figures, until
its input ends (bench/forward interleaves its own runs with these rounds, so that a
machine that slows down for a while slows both). bench/train.py takes the mean:
SexpGPU's figure is a mean too. The BLAS is whatever libblas.so.3 the loader finds; on a
reference BLAS it prints `refuse WHY` and times nothing (torch_blas.py).
OPENBLAS_CORETYPE is dropped from the environment before torch loads, as
bench/numpy_peer.py does: set on some hosts to dodge old OpenBLAS bugs, it slows a
current one. With `--device cuda` the parameters and batches live on the GPU, each timed
step waits for the GPU (torch.cuda.synchronize), bf16 runs under torch.autocast("cuda"),
the first line names the GPU instead of the BLAS, and the memory is how far the GPU's
peak allocated memory rose above what the parameters took; AdamW runs fused there.

The models gpt2 and gpt2-tiny are bench/cuda_gpt2.sx's (bench/cuda_train): the token table
shared by the embedding and the head, attention through scaled_dot_product_attention
(causal) where PyTorch has it, their batches from `--tokens PATH` (u16 tokens) instead of
--text, `--rows N` rows a step. With `--compile` the loss is torch.compile'd; where
torch.compile is missing or fails, the steps run eager, and the first line ends in
`compiled`, or `eager (WHY)`.
"""
import argparse
import math
import os
import resource
import sys
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_name, None)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_blas import blas_line  # noqa: E402

# bench/gpt.sx's knobs for each model.
MODELS = {
    "tiny": dict(vocab=256, dim=64, depth=2, heads=4, window=64, rows=8),
    "small": dict(vocab=256, dim=256, depth=4, heads=4, window=128, rows=8),
    "large": dict(vocab=256, dim=768, depth=12, heads=12, window=128, rows=1),
    # bench/cuda_gpt2.sx's: GPT-2 small (124M parameters), and a tiny one for the cpu.
    "gpt2": dict(vocab=50304, dim=768, depth=12, heads=12, window=1024, rows=8, tied=True),
    "gpt2-tiny": dict(vocab=512, dim=64, depth=2, heads=4, window=64, rows=4, tied=True),
}


def init_params(cfg, seed=0):
    """The parameters in sexpgpu/nn's initializers (not its random stream), in the order
    SexpGPU declares them."""
    g = torch.Generator().manual_seed(seed)
    dim, hidden = cfg["dim"], 4 * cfg["dim"]
    p = {}

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    def linear(path, n_in, n_out, bias=True):
        p[path + ".weight"] = normal([n_in, n_out], 1.0 / math.sqrt(n_in))
        if bias:
            p[path + ".b"] = torch.zeros(n_out)

    def norm(path):
        p[path + ".weight"] = torch.ones(dim)
        p[path + ".b"] = torch.zeros(dim)

    p["model.positions"] = normal([cfg["window"], dim], 0.02)
    p["model.embed.table"] = normal([cfg["vocab"], dim], 0.02)
    for i in range(cfg["depth"]):
        b = f"model.blocks.{i}"
        norm(b + ".attn-norm")
        linear(b + ".attn.qkv", dim, 3 * dim)
        linear(b + ".attn.proj", dim, dim)
        norm(b + ".mlp-norm")
        linear(b + ".feed-forward.up", dim, hidden)
        linear(b + ".feed-forward.down", hidden, dim)
    norm("model.final-norm")
    if not cfg.get("tied"):
        linear("model.head", dim, cfg["vocab"], bias=False)
    return p


def forward(p, ids, cfg):
    """The logits [rows window vocab] of ids [rows window]."""
    dim, heads = cfg["dim"], cfg["heads"]
    head_dim = dim // heads
    rows, seq = ids.shape
    causal = torch.ones(seq, seq, dtype=torch.bool, device=ids.device).tril()

    def layer_norm(x, path):
        return F.layer_norm(x, (dim,), p[path + ".weight"], p[path + ".b"], eps=1e-5)

    def linear(x, path):
        y = x @ p[path + ".weight"]
        return y + p[path + ".b"] if path + ".b" in p else y

    h = p["model.embed.table"][ids] + p["model.positions"][:seq]
    for i in range(cfg["depth"]):
        b = f"model.blocks.{i}"
        qkv = linear(layer_norm(h, b + ".attn-norm"), b + ".attn.qkv")
        q, k, v = (t.reshape(rows, seq, heads, head_dim).transpose(1, 2) for t in qkv.split(dim, dim=-1))
        if cfg.get("tied") and hasattr(F, "scaled_dot_product_attention"):
            mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(head_dim)
            mixed = torch.softmax(scores.masked_fill(~causal, -1e9), dim=-1) @ v
        mixed = mixed.transpose(1, 2).reshape(rows, seq, dim)
        h = h + linear(mixed, b + ".attn.proj")
        up = linear(layer_norm(h, b + ".mlp-norm"), b + ".feed-forward.up")
        h = h + linear(F.gelu(up, approximate="tanh"), b + ".feed-forward.down")
    if cfg.get("tied"):
        return layer_norm(h, "model.final-norm") @ p["model.embed.table"].t()
    return linear(layer_norm(h, "model.final-norm"), "model.head")


def loss_of(p, ids, cfg):
    """Mean cross-entropy of each next byte; ids is [rows window+1]."""
    ids = ids.long()
    logits = forward(p, ids[:, :-1], cfg)
    return F.cross_entropy(logits.reshape(-1, cfg["vocab"]), ids[:, 1:].reshape(-1))


def resident_bytes():
    """The process's resident memory now (/proc/self/statm's second field, in pages)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def compile_loss(loss_fn, step):
    """Makes loss_fn[0] torch.compile's loss and runs a step (which compiles it); where it
    cannot, loss_fn[0] stays eager. Says which: `compiled`, or `eager (WHY)`."""
    if not hasattr(torch, "compile"):
        return f"eager (torch {torch.__version__} has no torch.compile)"
    loss_fn[0] = torch.compile(loss_of)
    try:
        step()
    except Exception as e:  # noqa: BLE001 - any failure of the compiler leaves eager steps
        loss_fn[0] = loss_of
        return f"eager (torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''})"
    return "compiled"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    data_from = ap.add_mutually_exclusive_group(required=True)
    data_from.add_argument("--text", help="a file whose bytes are the tokens")
    data_from.add_argument("--tokens", help="a file of little-endian u16 tokens")
    ap.add_argument("--rows", type=int, help="rows a step, instead of the model's")
    ap.add_argument("--compile", action="store_true", help="the loss torch.compile'd (eager where it cannot be)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--mode", choices=["step", "forward", "gradient"], default="step",
                    help="what is timed: the training step, the forward alone (no autograd), or the "
                         "gradient of the loss (forward and backward)")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32",
                    help="bf16: the forward and the gradient under torch.autocast(cpu, bfloat16)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: the parameters, the batches and the steps on the GPU")
    ap.add_argument("--rounds", action="store_true",
                    help="time S seconds of steps for each line S of standard input, until it ends")
    args = ap.parse_args()
    gpu = args.device == "cuda"
    if gpu and not torch.cuda.is_available():
        print("refuse PyTorch finds no GPU", flush=True)
        return 0
    blas = f"gpu {torch.cuda.get_device_name()}" if gpu else blas_line(torch)
    if blas.startswith("refuse"):
        print(blas, flush=True)
        return 0
    torch.set_num_threads(args.threads)
    cfg = dict(MODELS[args.model], **({"rows": args.rows} if args.rows else {}))
    if args.tokens:
        data = torch.frombuffer(bytearray(open(args.tokens, "rb").read()), dtype=torch.int16).long() & 0xFFFF
    else:
        data = torch.tensor(list(open(args.text, "rb").read()), dtype=torch.long)
    params = {path: t.to(args.device) for path, t in init_params(cfg, seed=1).items()}
    tensors = [t.requires_grad_() for t in params.values()]
    opt = torch.optim.AdamW(tensors, lr=1e-3, **({"fused": True} if gpu else {}))
    loss_fn = [loss_of]  # torch.compile's, with --compile where it works
    gen = torch.Generator().manual_seed(1)

    def batch(width):
        """A batch of `width` bytes a row, on the device the steps run on."""
        starts = torch.randint(0, len(data) - cfg["window"] - 1, (cfg["rows"],), generator=gen)
        return torch.stack([data[s:s + width] for s in starts.tolist()]).to(args.device)

    def step():
        ids = batch(cfg["window"] + 1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn[0](params, ids, cfg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tensors, 1.0)
        opt.step()
        return loss.item()

    def forward_only():
        ids = batch(cfg["window"])
        with torch.no_grad():
            return forward(params, ids, cfg)

    def gradient():
        ids = batch(cfg["window"] + 1)
        return torch.autograd.grad(loss_of(params, ids, cfg), tensors)

    step = {"step": step, "forward": forward_only, "gradient": gradient}[args.mode]
    if args.precision == "bf16":
        plain = step

        def step():
            with torch.autocast(args.device, dtype=torch.bfloat16):
                return plain()
    if gpu:
        unsynchronized = step

        def step():
            result = unsynchronized()
            torch.cuda.synchronize()
            return result
    resident_before = torch.cuda.memory_allocated() if gpu else resident_bytes()
    how = ""
    if args.compile:
        how = " " + compile_loss(loss_fn, step)
    for _ in range(args.warmup):
        step()
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} {blas}{how}", flush=True)

    def timed(seconds):
        times = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(times) < 3:
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        peak = (torch.cuda.max_memory_allocated() if gpu
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # Linux counts KiB
        steps_mib = max(0, peak - resident_before) / 2**20
        return f"{1e3 * sum(times) / len(times):.3f} {1e3 * min(times):.3f} {len(times)} {steps_mib:.1f}"

    if not args.rounds:
        print(timed(args.seconds), flush=True)
        return 0
    for line in sys.stdin:
        print(timed(float(line)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
