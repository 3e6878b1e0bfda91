"""Sampling loops over a causal language model served with `--at`.

Such a model takes its whole window of tokens every call (shapes are fixed) and, with
`--at`, a last input `at`: the position whose outputs it returns. A loop pads its tokens
after their end, passes `at` = the last token's position, picks the next token from the
logits there, and goes on until the window is full, `max_new` tokens are made, or the
`end` token comes.
"""

import numpy as np

__all__ = ["greedy", "sample"]


class _AtModel:
    """A served model checked to be one a sampling loop can drive."""

    def __init__(self, client, output):
        if len(client.inputs) != 2 or client.inputs[1].name != "at":
            raise ValueError("a sampling loop drives a model of one token window and `at`, served with --at; "
                             f"this one takes {', '.join(str(i) for i in client.inputs)}")
        self.window, at = client.inputs
        if at.shape != (1,) or at.dtype != "i32":
            raise ValueError(f"`at` is {at}, not at [1] i32")
        if len(self.window.shape) != 2 or self.window.shape[0] != 1 or self.window.dtype not in ("i32", "i64"):
            raise ValueError(f"the window is {self.window}, not [1, N] i32 or i64 tokens")
        chosen = [o for o in client.outputs if output is None or o.name == output]
        if not chosen:
            raise ValueError(f"the model has no output `{output}`; its outputs are "
                             f"{', '.join(o.name for o in client.outputs)}")
        self.logits = chosen[0]
        if len(self.logits.shape) != 3 or self.logits.shape[:2] != (1, 1) \
                or self.logits.dtype not in ("f32", "bf16", "f64"):
            raise ValueError(f"the logits are {self.logits}, not [1, 1, V] floats (is it served with --at?)")
        self.client = client

    def next_logits(self, tokens):
        x = np.zeros(self.window.shape, self.window.numpy_dtype)
        x[0, : len(tokens)] = tokens
        at = np.array([len(tokens) - 1], np.int32)
        return self.client.call(x, at)[self.logits.name][0, 0].astype(np.float64)

    def run(self, prompt, choose, max_new, end):
        tokens = [int(t) for t in prompt]
        size = self.window.shape[1]
        if not 1 <= len(tokens) <= size:
            raise ValueError(f"a prompt holds 1 to {size} tokens, the window's length; this one holds {len(tokens)}")
        if max_new is not None and max_new < 0:
            raise ValueError(f"max_new is a count, not {max_new}")
        made = 0
        while len(tokens) < size and (max_new is None or made < max_new):
            logits = self.next_logits(tokens)
            if np.isnan(logits).any() or np.isposinf(logits).any() or not np.isfinite(logits.max()):
                raise ValueError(f"the logits after token {len(tokens) - 1} hold NaN or infinity, or only -infinity")
            tokens.append(choose(logits))
            made += 1
            if end is not None and tokens[-1] == end:
                break
        return tokens


def greedy(client, prompt, *, max_new=None, end=None, output=None):
    """The prompt followed by the most likely next token, one at a time (the first of equal
    ones), until the window is full, `max_new` tokens are made, or `end` is made.

    `client` is a Client of a model served with --at; `output` names its logits when it
    has more than one output (the first otherwise). Returns every token, the prompt's too.
    """
    return _AtModel(client, output).run(prompt, lambda logits: int(np.argmax(logits)), max_new, end)


def sample(client, prompt, *, temperature=1.0, seed=0, max_new=None, end=None, output=None):
    """As `greedy`, but each token drawn from softmax(logits / temperature), with numpy's
    default generator seeded by `seed`: the same seed gives the same tokens. A temperature
    near 0 approaches greedy; above 1 flattens the distribution.
    """
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"the temperature is a number above 0, not {temperature!r}")
    rng = np.random.default_rng(seed)

    def draw(logits):
        scaled = logits / temperature
        weights = np.exp(scaled - scaled.max())
        return int(rng.choice(len(weights), p=weights / weights.sum()))

    return _AtModel(client, output).run(prompt, draw, max_new, end)
