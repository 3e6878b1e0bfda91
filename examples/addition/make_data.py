#!/usr/bin/env python3
"""Writes the addition example's data: sums of two 3-digit numbers as token rows.

A row is the 12 tokens of "abc+def=" followed by the sum's four digits, least
significant first (the order a person adds in, so each digit depends only on the
digits before it): 0-9 are digits, 10 is '+', 11 is '='. train.jsonl holds
20,000 random sums, test.jsonl 1,000 others none of which is in train.jsonl.

    python3 examples/addition/make_data.py [FOLDER]
"""
import json
import os
import random
import sys

PLUS, EQUALS = 10, 11


def row(a, b):
    digits = lambda n, k: [int(c) for c in str(n).zfill(k)]
    return digits(a, 3) + [PLUS] + digits(b, 3) + [EQUALS] + digits(a + b, 4)[::-1]


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = random.Random(2026)
    pairs = rng.sample(range(1000 * 1000), 21000)
    for name, chosen in (("train.jsonl", pairs[:20000]), ("test.jsonl", pairs[20000:])):
        with open(os.path.join(folder, name), "w") as out:
            for p in chosen:
                out.write(json.dumps({"ids": row(p // 1000, p % 1000)}) + "\n")


if __name__ == "__main__":
    main()
