"""The oracle's machinery: tolerances, NumPy helpers, reading printed tensors, running
cases through `sexpgpu eval`. The cases are in oracle_cases.py; oracle.py runs them."""
import math
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("oracle: SKIPPED: NumPy is not installed for this python3 (%s); "
          "install it (pip install numpy) to run the oracle tests" % sys.executable)
    sys.exit(77)

# ---------------------------------------------------------------------------------
# Tolerances. |got - want| <= atol + rtol * |want| elementwise, where `want` is
# computed in f64 (or exactly) from the very inputs SexpGPU was given. NaN must meet
# NaN and an infinity the same infinity.
#
# U is the unit roundoff of a dtype (half an ulp of 1).
U = {"f32": 2.0 ** -24, "f64": 2.0 ** -53, "bf16": 2.0 ** -8}
# Correctly rounded arithmetic (+ - * / max min neg abs sqrt casts between floats):
# one rounding, so 2u relative leaves a factor of 2 to spare: f32 ~1.2e-7, f64 ~2.2e-16.
# The brief's "~1e-6 relative for f32, ~1e-12 for f64" is used: it is looser than 2u
# and still catches any wrong operation, operand or rounding mode of a whole ulp scale.
ELEMENTWISE_RTOL = {"f32": 1e-6, "f64": 1e-12, "bf16": 2 * U["bf16"]}
# Transcendentals (exp log sin cos tanh erf logistic rsqrt pow): a few ulps of the
# result, plus the same few ulps of 1 absolute, for results near zero (sin near pi,
# tanh near 0, log near 1) whose relative error is not what libm bounds.
TRANSCENDENTAL_ULPS = 4
TRANSCENDENTAL_RTOL = {k: TRANSCENDENTAL_ULPS * 2 * u for k, u in U.items()}
TRANSCENDENTAL_ATOL = dict(TRANSCENDENTAL_RTOL)
# Reductions and matrix products over n terms: the recursive-summation bound
# n*u*sum|terms| (doubled), plus the final rounding.
REDUCTION_FACTOR = 2.0
# nn composites (a handful of ops chained, one n-term reduction inside): (16 + 4n) u
# relative and absolute (values near zero, e.g. layer-norm outputs and log-softmax).
def composite_tol(dtype, n):
    t = (16 + 4 * n) * U[dtype]
    return Close(t, t)
# Gradients compared with finite differences of the NumPy function in f64 (central
# differences, step 1e-6 relative): truncation and cancellation error ~1e-9.
FD_RTOL, FD_ATOL = 1e-6, 1e-7
# Integers, booleans, shape ops, and casts (to bf16 too): exact.


class Exact:
    def __repr__(self):
        return "exact"


class Close:
    def __init__(self, rtol, atol):
        self.rtol, self.atol = rtol, atol

    def __repr__(self):
        a = self.atol
        a = "max %.3g" % np.max(a) if np.ndim(a) and np.size(a) else "%.3g" % np.max(a) if np.ndim(a) else "%.3g" % a
        return "rtol %.3g atol %s" % (self.rtol, a)


EXACT = Exact()


def elem_tol(dtype):
    return Close(ELEMENTWISE_RTOL[dtype], 1e-300) if dtype in U else EXACT


def transc_tol(dtype):
    return Close(TRANSCENDENTAL_RTOL[dtype], TRANSCENDENTAL_ATOL[dtype])


def reduce_tol(dtype, n, magnitude):
    """n terms whose absolute values sum to `magnitude` (an array of the result's shape)."""
    return Close(2 * U[dtype], REDUCTION_FACTOR * n * U[dtype] * np.asarray(magnitude, np.float64) + 1e-300)


# ---------------------------------------------------------------------------------
# NumPy dtypes, bf16 rounding, and writing literals.

NP = {"f32": np.float32, "f64": np.float64, "bf16": np.float32, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
FLOATS = ("f32", "f64", "bf16")


def to_bf16(x):
    """f32 -> bf16 (kept in an f32 array): round to nearest even of the f32's high half."""
    x = np.asarray(x, np.float32)
    shape = x.shape
    x = x.reshape(-1)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32)
    out = rounded.view(np.float32).copy()
    out[np.isnan(x)] = np.nan
    return out.reshape(shape)


def f64_to_bf16(x):
    """A decimal read as f64 -> the nearest bf16 (round half to even), in an f32 array."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    r = np.ldexp(np.round(m * 256.0) / 256.0, e)
    return np.where(np.isfinite(x), r, x).astype(np.float32)


def cast_expected(x, to):
    """The expected value of (cast x to): C++ conversions, a float to an integer truncates
    and saturates with NaN to 0, an integer to a narrower one wraps, to bool is != 0."""
    x = np.asarray(x)
    if to == "bool":
        return x != 0
    if to in ("i32", "i64"):
        info = np.iinfo(NP[to])
        if x.dtype.kind == "f":
            t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf))
            # Saturate in integers: float64(info.max) of i64 is 2^63, which does not convert back.
            high, low = t >= float(info.max), t <= float(info.min)
            inside = np.where(high | low, 0.0, t).astype(NP[to])
            return np.where(high, info.max, np.where(low, info.min, inside)).astype(NP[to])
        return x.astype(np.int64).astype(NP[to])
    if to == "bf16":
        return to_bf16(x.astype(np.float32))
    return x.astype(NP[to])


def num(v, dtype):
    if dtype == "bool":
        return "true" if v else "false"
    if dtype in ("i32", "i64"):
        return str(int(v))
    f = float(np.float32(v)) if dtype in ("f32", "bf16") else float(v)
    if math.isnan(f):
        return "+nan.0"
    if math.isinf(f):
        return "+inf.0" if f > 0 else "-inf.0"
    return repr(f)


def nested(a, dtype):
    if a.ndim == 0:
        return num(a[()], dtype)
    return "[" + " ".join(nested(s, dtype) for s in a) + "]"


def lit(a, dtype):
    """A `(tensor ...)` literal of a NumPy array, exact for its dtype."""
    return "(tensor %s :dtype :%s)" % (nested(np.asarray(a), dtype), dtype)


def shape_lit(shape):
    return "[" + " ".join(str(int(d)) for d in shape) + "]"


# ---------------------------------------------------------------------------------
# Reading what the program prints.

TOKEN = re.compile(r"\s*(\(|\)|\[|\]|[^\s()\[\]]+)")


class Printed:
    def __init__(self, values, dtype):
        self.values, self.dtype = values, dtype


def parse(text):
    tokens = TOKEN.findall(text)
    pos = 0

    def atom(t):
        if t in ("true", "false"):
            return t == "true"
        if re.fullmatch(r"[-+]?\d+", t):
            return int(t)
        if t in ("+inf.0", "-inf.0", "+nan.0"):
            return float(t[:-2])
        if re.fullmatch(r"[-+]?[\d.]+(e[-+]?\d+)?", t):
            return float(t)
        return ("sym", t)

    def read():
        nonlocal pos
        t = tokens[pos]
        pos += 1
        if t in "([":
            close = ")" if t == "(" else "]"
            items = []
            while tokens[pos] != close:
                items.append(read())
            pos += 1
            if t == "(" and items and items[0] == ("sym", "tensor"):
                dtype = items[items.index(("sym", ":dtype")) + 1][1][1:]
                return Printed(items[1], dtype)
            return items
        return atom(t)

    value = read()
    if pos != len(tokens):
        raise ValueError("trailing text after the value: %r" % " ".join(tokens[pos:pos + 5]))
    return value


def to_array(p):
    """A printed tensor as a NumPy array of its dtype (bf16 in an f32 array)."""
    if p.dtype in ("i32", "i64"):
        return np.array(p.values, dtype=np.int64).astype(NP[p.dtype])
    if p.dtype == "bool":
        return np.array(p.values, dtype=np.bool_)
    a = np.array(p.values, dtype=np.float64)
    if p.dtype == "bf16":
        return f64_to_bf16(a)
    return a.astype(NP[p.dtype])


# ---------------------------------------------------------------------------------
# Cases and comparison.

class Case:
    def __init__(self, name, expr, want, dtype, tol=None, xfail=None):
        """want: an array (or a list of arrays, with dtype and tol lists to match, for an
        expression whose value is a list of tensors). xfail: the bug this case finds."""
        self.name, self.expr, self.xfail = name, expr, xfail
        self.multi = isinstance(want, list)
        self.want = want if self.multi else [want]
        self.dtype = dtype if isinstance(dtype, list) else [dtype] * len(self.want)
        if tol is None:
            tol = [EXACT] * len(self.want)
        self.tol = tol if isinstance(tol, list) else [tol] * len(self.want)


def compare_one(got, want, dtype, tol):
    """None when `got` (a Printed) matches, else a message."""
    if not isinstance(got, Printed):
        return "expected a tensor, got %r" % (got,)
    if got.dtype != dtype:
        return "dtype :%s, expected :%s" % (got.dtype, dtype)
    try:
        g = to_array(got)
    except ValueError as e:
        return "cannot read the printed tensor: %s" % e
    w = np.asarray(want)
    if g.shape != w.shape:
        return "shape %s, expected %s" % (list(g.shape), list(w.shape))
    if dtype in FLOATS:
        g64 = g.astype(np.float64)
        if isinstance(tol, Exact):
            ref = w.astype(np.float32) if dtype != "f64" else w.astype(np.float64)
            if dtype == "bf16":
                ref = to_bf16(ref)
            w64 = ref.astype(np.float64)
            bad = ~((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
        else:
            w64 = w.astype(np.float64)
            with np.errstate(invalid="ignore"):
                err = np.abs(g64 - w64)
                bound = tol.atol + tol.rtol * np.abs(w64)
                finite = np.isfinite(w64)
                ok = np.where(finite, err <= bound, (g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
            bad = ~ok
    else:
        w64 = w
        bad = g != w.astype(g.dtype)
        g64 = g
    if not np.any(bad):
        return None
    idx = np.argwhere(bad) if g.ndim else [()]
    lines = ["%d of %d elements differ (%r); first:" % (int(np.sum(bad)), g.size, tol)]
    for i in list(idx)[:5]:
        i = tuple(i)
        lines.append("  at %s: sexpgpu %r, numpy %r" % ([int(k) for k in i], g64[i].item(), np.asarray(w64)[i].item()))
    return "\n".join(lines)


def check(case, got):
    if case.multi:
        if not isinstance(got, list) or len(got) != len(case.want):
            return "expected a list of %d tensors, got %r" % (len(case.want), got)
        items = got
    else:
        items = [got]
    msgs = []
    for k, (g, w, d, t) in enumerate(zip(items, case.want, case.dtype, case.tol)):
        m = compare_one(g, w, d, t)
        if m:
            msgs.append(("value %d: " % k if case.multi else "") + m)
    return "\n".join(msgs) or None


# ---------------------------------------------------------------------------------
# Running the program.

def run_program(program, source, expr, device, timeout=120):
    with tempfile.TemporaryDirectory(prefix="sexpgpu-oracle-") as tmp:
        path = os.path.join(tmp, "cases.sx")
        with open(path, "w") as f:
            f.write(source)
        p = subprocess.run([program, "eval", "--device", device, "--file", path, expr],
                           capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_cases(program, cases, device, verbose=False):
    """Runs the cases in one process; on an error, each alone, to name the case."""
    source = ['(require "sexpgpu/ops")']
    for i, c in enumerate(cases):
        source.append(";; %s\n(defun oracle-case-%d () %s)" % (c.name, i, c.expr))
    source = "\n".join(source) + "\n"
    rc, out, err = run_program(program, source, "(list %s)" % " ".join("(oracle-case-%d)" % i for i in range(len(cases))),
                               device)
    results = {}
    if rc == 0:
        values = parse(out)
        if len(values) == len(cases):
            for c, v in zip(cases, values):
                results[c.name] = (v, None)
            return results
    for i, c in enumerate(cases):
        rc, out, err = run_program(program, source, "(oracle-case-%d)" % i, device)
        if rc != 0:
            results[c.name] = (None, "sexpgpu exited %d:\n%s" % (rc, (err or out).strip()))
        else:
            try:
                results[c.name] = (parse(out), None)
            except (ValueError, IndexError) as e:
                results[c.name] = (None, "cannot read the output (%s):\n%s" % (e, out[:2000]))
    return results


# ---------------------------------------------------------------------------------
# Helpers for building cases.

def f32(rng, shape, lo=None, hi=None, scale=1.0):
    if lo is not None:
        return rng.uniform(lo, hi, size=shape).astype(np.float32)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def f64(rng, shape, lo=None, hi=None, scale=1.0):
    if lo is not None:
        return rng.uniform(lo, hi, size=shape)
    return rng.standard_normal(shape) * scale


def rand(rng, dtype, shape, lo=None, hi=None):
    if dtype == "f32":
        return f32(rng, shape, lo, hi)
    if dtype == "f64":
        return f64(rng, shape, lo, hi)
    if dtype == "bf16":
        return to_bf16(f32(rng, shape, lo, hi))
    if dtype in ("i32", "i64"):
        return rng.integers(-50 if lo is None else lo, 50 if hi is None else hi, size=shape).astype(NP[dtype])
    if dtype == "bool":
        return rng.random(shape) < 0.5
    raise ValueError(dtype)


def wide(x):
    """Inputs as the f64 the reference computes from."""
    return np.asarray(x).astype(np.float64)


erf = np.vectorize(math.erf, otypes=[np.float64])


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))

