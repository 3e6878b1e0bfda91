#!/usr/bin/env python3
"""Asks the served classifier how pleased each review is.

The reviews are tokenized as run.sx's loader tokenizes them, with all-MiniLM-L6-v2's
tokenizer.json (the `tokenizers` package): 16 ids, cut before [SEP] or padded with 0,
and a mask that is 1 on the tokens. The server answers the `probs` output: the
probability of each label, 0 disappointed and 1 pleased.

    sexpgpu serve runs/fine-tune --socket /tmp/fine-tune.sock --output probs &
    python3 examples/fine-tune/ask.py /tmp/fine-tune.sock "The lamp stopped working." ...

Needs numpy, tokenizers and the client (pip install clients/python).
"""
import os
import sys

import numpy as np
from sexpgpu_client import Client
from tokenizers import Tokenizer

IDS_PER_REVIEW = 16  # run.sx's ids-per-review
TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "all-MiniLM-L6-v2", "tokenizer.json")


def encode(tokenizer, text):
    """The ids and mask of one review, each [1 16] i32."""
    ids = tokenizer.encode(text).ids
    ids = np.array([ids + [0] * (IDS_PER_REVIEW - len(ids))], np.int32)
    return ids, (ids != 0).astype(np.int32)


def main():
    if len(sys.argv) < 3:
        print("usage: ask.py SOCKET TEXT...", file=sys.stderr)
        return 2
    tokenizer = Tokenizer.from_file(TOKENIZER)
    tokenizer.no_padding()  # the file pads to 128; the model reads 16
    tokenizer.enable_truncation(IDS_PER_REVIEW)
    with Client(sys.argv[1]) as model:
        for text in sys.argv[2:]:
            probs = model.call(*encode(tokenizer, text))["probs"]
            print("%.3f pleased  %s" % (probs[0, 1], text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
