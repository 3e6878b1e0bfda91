#!/usr/bin/env python3
"""End-to-end test of training on text read through a tokenizer: a jsonl loader's
`:tokenize` gives the ids and the mask, and a run trains on them with no preprocessing.

One CTest test, e2e.tokenize_train: `tokenize_test.py SEXPGPU tokenize_train`. The
tokenizer and the data are the UI cases' (tests/ui/tokenize/data).
"""

import json
import os
import shutil
import sys

import e2e_test
from e2e_test import expect, train, write

DATA = os.path.join(os.environ.get("SEXPGPU_SOURCE_DIR", ""), "tests", "ui", "tokenize", "data")

RUN_FILE = b"""
(require "sexpgpu/nn")
(defvar tk (tokenizer "tokenizer.json"))
(defmodel bag (vocab dim classes)
  (let ((embed (embedding vocab dim)) (head (linear dim classes)))
    (lambda (ids mask)
      (let* ((s (shape ids)) (m (reshape (cast mask :f32) [(first s) (second s) 1])))
        (head (/ (sum (* (embed ids) m) :axis 1) (sum m :axis 1)))))))
(defvar model (bag 400 16 2))
(defun prepare (batch)
  (list :inputs (list (field batch :text) (field batch :text-mask)) :targets (field batch :y)))
(defun loss (logits prepared) (cross-entropy logits (getf prepared :targets)))
(defrun :seed 3 :data (jsonl "reviews.jsonl" :fields [:y] :tokenize [:field :text :with tk :length 12])
  :batch 8 :steps 30 :optimizer (adamw :lr 0.05))
"""


def case_tokenize_train(tmp):
    """The run trains: its loss falls on the tokenized text."""
    for name in ("tokenizer.json", "reviews.jsonl"):
        shutil.copy(os.path.join(DATA, name), tmp)
    run_file = write(tmp, "run.sx", RUN_FILE)
    location = os.path.join(tmp, "runs")
    out = train([run_file, "--checkpoint-dir", location, "--device", "cpu"])
    expect(out.rstrip().splitlines()[-1].startswith("trained "), "the run's last line", out)
    with open(os.path.join(location, "metrics.jsonl")) as f:
        losses = [json.loads(line)["loss"] for line in f if '"loss"' in line]
    expect(len(losses) == 30 and losses[-1] < 0.5 * losses[0], f"the loss falls: {losses[0]} to {losses[-1]}", out)
    print(f"ok: the loss falls from {losses[0]:.4f} to {losses[-1]:.4f} on tokenized text")


if __name__ == "__main__":
    sys.exit(e2e_test.main_for(globals(), "tokenize"))
