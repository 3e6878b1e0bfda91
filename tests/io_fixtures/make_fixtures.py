#!/usr/bin/env python3
"""Writes the safetensors fixtures the io tests read, with the real `safetensors` package
(and PyTorch for bf16), so that the C++ reader is checked against files other tools make.

    /usr/bin/python3 tests/io_fixtures/make_fixtures.py     # needs numpy, safetensors, torch

Every value is a formula of its index, written again in tests/unit/io/fixtures_test.cc;
change one only with the other. The files are committed: the tests do not need Python.

  numpy.safetensors        safetensors.numpy.save_file: F32 [2,3], F64 [4], I64 [5],
                           BOOL [5], a scalar F32 [], an empty F32 [0,3], metadata
  torch.safetensors        safetensors.torch.save_file: BF16 [3,4], F32 [2,2,2], I64 [3],
                           metadata
  sharded/                 a checkpoint in two shards with model.safetensors.index.json,
                           written as Hugging Face transformers writes one
"""
import json
import os
import sys

import numpy as np
import safetensors.numpy
import safetensors.torch
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def numpy_fixture():
    i6 = np.arange(6, dtype=np.float32)
    tensors = {
        "f32": (i6 * np.float32(0.5) - np.float32(1)).reshape(2, 3),  # i * 0.5 - 1
        "f64": np.arange(4, dtype=np.float64) / 3.0,  # i / 3
        "i64": np.arange(5, dtype=np.int64) * 1000000007 - 2**40,  # i * 1000000007 - 2^40
        "bool": np.arange(5) % 2 == 0,  # i even
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    safetensors.numpy.save_file(tensors, os.path.join(HERE, "numpy.safetensors"),
                                metadata={"format": "np", "made_by": "make_fixtures.py"})


def torch_fixture():
    tensors = {
        # (i + 1) / 3 in f32, then rounded to bf16 by PyTorch (to nearest even)
        "bf16": ((torch.arange(12, dtype=torch.float32) + 1) / 3).to(torch.bfloat16).reshape(3, 4),
        "f32": torch.arange(8, dtype=torch.float32).reshape(2, 2, 2) * 1.5,  # i * 1.5
        "i64": torch.arange(3, dtype=torch.int64),  # i
    }
    safetensors.torch.save_file(tensors, os.path.join(HERE, "torch.safetensors"), metadata={"format": "pt"})


# Tensor k of the sharded checkpoint holds i * 0.25 + k, in its dtype.
SHARDS = {
    "model-00001-of-00002.safetensors": [
        ("model.embed_tokens.weight", [4, 2], torch.float32),
        ("model.layers.0.self_attn.q_proj.weight", [2, 2], torch.bfloat16),
    ],
    "model-00002-of-00002.safetensors": [
        ("model.layers.1.self_attn.q_proj.weight", [2, 2], torch.bfloat16),
        ("lm_head.weight", [4, 2], torch.float32),
    ],
}


def sharded_fixture():
    folder = os.path.join(HERE, "sharded")
    os.makedirs(folder, exist_ok=True)
    weight_map = {}
    total_size = 0
    k = 0
    for shard, entries in SHARDS.items():
        tensors = {}
        for name, shape, dtype in entries:
            n = int(np.prod(shape))
            tensors[name] = (torch.arange(n, dtype=torch.float32) * 0.25 + k).reshape(shape).to(dtype)
            total_size += tensors[name].numel() * tensors[name].element_size()
            weight_map[name] = shard
            k += 1
        safetensors.torch.save_file(tensors, os.path.join(folder, shard), metadata={"format": "pt"})
    # As transformers' save_pretrained writes it.
    index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def main():
    numpy_fixture()
    torch_fixture()
    sharded_fixture()
    return 0


if __name__ == "__main__":
    sys.exit(main())
