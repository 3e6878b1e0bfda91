"""The oracle's cases, one function per group: SexpGPU expressions and the NumPy values
they must give (see oracle.py for how they run and oracle_core.py for the tolerances)."""
import math

import numpy as np

from oracle_core import *  # noqa: F401,F403  the helpers every case uses

# ---------------------------------------------------------------------------------
# Groups. Each returns a list of cases.

def group_elementwise(rng):
    cases = []
    add = cases.append

    unary = {
        "abs": (np.abs, None, None, elem_tol),
        "sqrt": (np.sqrt, 0.0, 20.0, elem_tol),
        "exp": (np.exp, -20.0, 20.0, transc_tol),
        "log": (np.log, 1e-3, 100.0, transc_tol),
        "sin": (np.sin, -10.0, 10.0, transc_tol),
        "cos": (np.cos, -10.0, 10.0, transc_tol),
        "tanh": (np.tanh, -6.0, 6.0, transc_tol),
        "rsqrt": (lambda x: 1.0 / np.sqrt(x), 1e-3, 100.0, transc_tol),
        "erf": (erf, -4.0, 4.0, transc_tol),
        "logistic": (logistic, -20.0, 20.0, transc_tol),
        "sign": (np.sign, None, None, elem_tol),
    }
    for dtype in ("f32", "f64"):
        for op, (fn, lo, hi, tol) in unary.items():
            x = rand(rng, dtype, (5, 7), lo, hi)
            if op == "sign":
                x[0, :3] = 0.0
            add(Case("%s %s" % (op, dtype), "(%s %s)" % (op, lit(x, dtype)), fn(wide(x)), dtype, tol(dtype)))
        x = rand(rng, dtype, (4, 6))
        add(Case("neg %s" % dtype, "(- %s)" % lit(x, dtype), -wide(x), dtype, elem_tol(dtype)))
        x = rand(rng, dtype, (4, 6), 0.5, 4.0) * np.sign(rand(rng, dtype, (4, 6)))
        add(Case("reciprocal %s" % dtype, "(/ %s)" % lit(x, dtype), 1.0 / wide(x), dtype, elem_tol(dtype)))
    # bf16: the op computes in f32 and rounds once to bf16, so within a bf16 ulp.
    for op in ("exp", "tanh", "sqrt", "abs"):
        fn, lo, hi, _ = unary[op]
        x = rand(rng, "bf16", (3, 8), lo if lo is not None else -3.0, hi if hi is not None else 3.0)
        add(Case("%s bf16" % op, "(%s %s)" % (op, lit(x, "bf16")), fn(wide(x)), "bf16", Close(2 * U["bf16"], 1e-30)))
    # Special values through the unary ops.
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.0, -104.0, 3e38], np.float32)
    with np.errstate(all="ignore"):
        for op in ("exp", "tanh", "logistic", "abs", "erf", "sin"):
            fn = unary[op][0]
            want = fn(wide(special))
            if op == "sin":
                want = np.where(np.isinf(wide(special)), np.nan, want)
            add(Case("%s special" % op, "(%s %s)" % (op, lit(special, "f32")), want, "f32", transc_tol("f32")))
        pos = np.array([0.0, np.inf, np.nan, 1e-38, 1e-45, -1.0, 3e38], np.float32)
        for op in ("sqrt", "log", "rsqrt"):
            fn = unary[op][0]
            add(Case("%s special" % op, "(%s %s)" % (op, lit(pos, "f32")), fn(wide(pos)), "f32", transc_tol("f32")))

    # Binary arithmetic, broadcasting [3 1] with [1 4], [2 3 4] with [4], and scalars.
    binary = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "max": np.maximum, "min": np.minimum}
    shapes = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), (2, 1, 5)), ((3, 4), ()), ((), (2, 2))]
    for dtype in ("f32", "f64", "bf16"):
        for op, fn in binary.items():
            for sa, sb in (shapes if dtype != "bf16" else shapes[:1]):
                a = rand(rng, dtype, sa)
                b = rand(rng, dtype, sb, 0.5, 3.0) if op == "/" else rand(rng, dtype, sb)
                tol = elem_tol(dtype) if dtype != "bf16" else Close(2 * U["bf16"], 1e-30)
                add(Case("%s %s %s %s" % (op, dtype, list(sa), list(sb)),
                         "(%s %s %s)" % (op, lit(a, dtype), lit(b, dtype)), fn(wide(a), wide(b)), dtype, tol))
    # Weak scalars: a literal takes the tensor's dtype.
    x = rand(rng, "f32", (3, 5))
    for op, fn in binary.items():
        for s in (2.5, 0.1, -3):
            sv = wide(np.float32(s))
            add(Case("%s f32 weak %r" % (op, s), "(%s %s %r)" % (op, lit(x, "f32"), s), fn(wide(x), sv), "f32", elem_tol("f32")))
            if op != "/":
                add(Case("%s weak %r f32" % (op, s), "(%s %r %s)" % (op, s, lit(x, "f32")), fn(sv, wide(x)), "f32", elem_tol("f32")))
    # Variadic folds: (+ a b c) is ((a + b) + c).
    a, b, c = rand(rng, "f32", (4,)), rand(rng, "f32", (3, 1)), rand(rng, "f32", (1,))
    add(Case("+ three", "(+ %s %s %s)" % (lit(a, "f32"), lit(b, "f32"), lit(c, "f32")),
             (a + b + c), "f32", Close(2e-6, 1e-6)))
    add(Case("* three", "(* %s %s %s)" % (lit(a, "f32"), lit(b, "f32"), lit(c, "f32")),
             wide(a) * wide(b) * wide(c), "f32", Close(2e-6, 1e-30)))
    # max/min with NaN: NaN wins.
    a = np.array([1.0, np.nan, 3.0, np.nan, -np.inf], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan, 0.0], np.float32)
    for op, fn in (("max", np.maximum), ("min", np.minimum)):
        add(Case("%s nan" % op, "(%s %s %s)" % (op, lit(a, "f32"), lit(b, "f32")), fn(a, b), "f32", EXACT))
    # Integers: wrapping arithmetic, division truncating toward zero, by zero gives 0.
    for dtype in ("i32", "i64"):
        a = rand(rng, dtype, (4, 5), -1000, 1000)
        b = rand(rng, dtype, (5,), -30, 30)
        b[0] = 0
        for op, fn in (("+", np.add), ("-", np.subtract), ("*", np.multiply), ("max", np.maximum), ("min", np.minimum)):
            add(Case("%s %s" % (op, dtype), "(%s %s %s)" % (op, lit(a, dtype), lit(b, dtype)), fn(a, b), dtype))
        q = np.where(b == 0, 0, np.trunc(wide(a) / np.where(b == 0, 1, wide(b)))).astype(NP[dtype])
        add(Case("/ %s (truncates, by 0 gives 0)" % dtype, "(/ %s %s)" % (lit(a, dtype), lit(b, dtype)), q, dtype))
        add(Case("abs %s" % dtype, "(abs %s)" % lit(a, dtype), np.abs(a), dtype))
        add(Case("sign %s" % dtype, "(sign %s)" % lit(b, dtype), np.sign(b), dtype))
        add(Case("neg %s" % dtype, "(- %s)" % lit(a, dtype), -a, dtype))
        add(Case("%s + weak 7" % dtype, "(+ %s 7)" % lit(a, dtype), a + NP[dtype](7), dtype))
    big = np.array([2147483647, -2147483648, 2000000000], np.int32)
    add(Case("+ i32 wraps", "(+ %s %s)" % (lit(big, "i32"), lit(np.array([1, -1, 2000000000], np.int32), "i32")),
             (big.astype(np.int64) + np.array([1, -1, 2000000000])).astype(np.int32), "i32"))
    # Promotion: i32 with a weak float gives f32; i32 with f32 gives f32; bf16 with f32 gives
    # f32; i32 with i64 gives i64; f32 with f64 gives f64.
    i = rand(rng, "i32", (6,))
    x = rand(rng, "f32", (6,))
    add(Case("i32 * weak 0.5", "(* %s 0.5)" % lit(i, "i32"), wide(i) * 0.5, "f32", elem_tol("f32")))
    add(Case("i32 + f32", "(+ %s %s)" % (lit(i, "i32"), lit(x, "f32")), wide(i) + wide(x), "f32", elem_tol("f32")))
    xb = rand(rng, "bf16", (6,))
    add(Case("bf16 + f32", "(+ %s %s)" % (lit(xb, "bf16"), lit(x, "f32")), wide(xb) + wide(x), "f32", elem_tol("f32")))
    il = rand(rng, "i64", (6,))
    add(Case("i32 + i64", "(+ %s %s)" % (lit(i, "i32"), lit(il, "i64")), i.astype(np.int64) + il, "i64"))
    xd = rand(rng, "f64", (6,))
    add(Case("f32 * f64", "(* %s %s)" % (lit(x, "f32"), lit(xd, "f64")), wide(x) * xd, "f64", elem_tol("f64")))
    # pow (float only): positive bases with any exponent; negative bases with integer exponents.
    for dtype in ("f32", "f64"):
        a = rand(rng, dtype, (3, 4), 0.1, 5.0)
        b = rand(rng, dtype, (4,), -3.0, 3.0)
        add(Case("pow %s" % dtype, "(pow %s %s)" % (lit(a, dtype), lit(b, dtype)), np.power(wide(a), wide(b)),
                 dtype, Close(TRANSCENDENTAL_RTOL[dtype] * 4, 1e-300)))
        a = rand(rng, dtype, (5,), -4.0, 4.0)
        add(Case("expt %s integer exponent" % dtype, "(expt %s 3.0)" % lit(a, dtype), np.power(wide(a), 3.0),
                 dtype, Close(TRANSCENDENTAL_RTOL[dtype] * 4, 1e-300)))
        add(Case("expt %s tensor 2" % dtype, "(expt %s (tensor 2.0 :dtype :%s))" % (lit(a, dtype), dtype),
                 wide(a) ** 2, dtype, Close(TRANSCENDENTAL_RTOL[dtype] * 4, 1e-300)))

    # Comparisons: floats (with equal elements, NaN), integers, against a scalar, broadcast.
    cmps = {"=": np.equal, "/=": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal}
    for dtype in ("f32", "f64", "i32", "bf16"):
        a = np.round(rand(rng, dtype, (3, 1), -3, 3) if dtype in ("i32",) else rand(rng, dtype, (3, 1)) * 2) / (1 if dtype == "i32" else 2)
        a = a.astype(NP[dtype])
        b = np.round(rand(rng, dtype, (1, 4), -3, 3) if dtype in ("i32",) else rand(rng, dtype, (1, 4)) * 2) / (1 if dtype == "i32" else 2)
        b = b.astype(NP[dtype])
        if dtype == "f32":
            a[0, 0] = np.nan
        for op, fn in cmps.items():
            add(Case("%s %s" % (op, dtype), "(%s %s %s)" % (op, lit(a, dtype), lit(b, dtype)), fn(a, b), "bool"))
    x = rand(rng, "f32", (2, 5))
    x[0, 0] = 0.5
    for op, fn in cmps.items():
        add(Case("%s f32 weak 0.5" % op, "(%s %s 0.5)" % (op, lit(x, "f32")), fn(x, np.float32(0.5)), "bool"))
    add(Case("< i32 f32 promotes", "(< %s %s)" % (lit(i, "i32"), lit(np.full(6, 0.5, np.float32), "f32")),
             wide(i) < 0.5, "bool"))
    # Logic.
    p, q, r = rand(rng, "bool", (3, 1)), rand(rng, "bool", (1, 4)), rand(rng, "bool", (3, 4))
    add(Case("logical-and", "(logical-and %s %s)" % (lit(p, "bool"), lit(q, "bool")), p & q, "bool"))
    add(Case("logical-or", "(logical-or %s %s)" % (lit(p, "bool"), lit(q, "bool")), p | q, "bool"))
    add(Case("logical-and three", "(logical-and %s %s %s)" % (lit(p, "bool"), lit(q, "bool"), lit(r, "bool")), p & q & r, "bool"))
    add(Case("logical-not", "(logical-not %s)" % lit(r, "bool"), ~r, "bool"))
    # where, with broadcasting of all three and a scalar branch.
    for dtype in ("f32", "i32", "f64", "bool"):
        c = rand(rng, "bool", (3, 1))
        a = rand(rng, dtype, (1, 4))
        b = rand(rng, dtype, (3, 4))
        add(Case("where %s" % dtype, "(where %s %s %s)" % (lit(c, "bool"), lit(a, dtype), lit(b, dtype)),
                 np.where(c, a, b), dtype))
    c = rand(rng, "bool", (2, 3))
    x = rand(rng, "f32", (2, 3))
    add(Case("where weak scalar", "(where %s %s 0.0)" % (lit(c, "bool"), lit(x, "f32")), np.where(c, x, np.float32(0)), "f32"))
    add(Case("where from comparison", "(where (> %s 0.0) %s (- %s))" % (lit(x, "f32"), lit(x, "f32"), lit(x, "f32")),
             np.abs(x), "f32"))

    # Casts between f32 f64 i32 i64 bool, and to and from bf16.
    xf = np.concatenate([rand(rng, "f32", (12,)) * 100, np.array([0.5, -0.5, 2.5, -2.5, 1e10, -1e10, np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)]).astype(np.float32)
    for to in ("f64", "i32", "i64", "bool", "bf16", "f32"):
        add(Case("cast f32 -> %s" % to, "(cast %s :%s)" % (lit(xf, "f32"), to), cast_expected(xf, to), to))
    xd = np.concatenate([rand(rng, "f64", (10,)) * 1e3, np.array([1e300, -1e300, 1e-300, np.nan, 3e9, -3e9])])
    for to in ("f32", "i32", "i64", "bool"):
        add(Case("cast f64 -> %s" % to, "(cast %s :%s)" % (lit(xd, "f64"), to), cast_expected(xd, to), to))
    # f64 -> bf16 as the reference does it: through f32 (as Eigen and XLA do).
    xd2 = rand(rng, "f64", (10,))
    add(Case("cast f64 -> bf16", "(cast %s :bf16)" % lit(xd2, "f64"), to_bf16(xd2.astype(np.float32)), "bf16"))
    # Ties of bf16 rounding: to even, both ways, and the f32 values either side of a tie.
    ties = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -(1.0 + 2 ** -8), 1.0 + 2 ** -8 + 2 ** -23,
                     1.0 + 2 ** -8 - 2 ** -23, 65504.0, 3.3895314e38, 1e-39, 3.4e38, np.nan], np.float32)
    add(Case("cast f32 -> bf16 ties", "(cast %s :bf16)" % lit(ties, "f32"), to_bf16(ties), "bf16"))
    xb = rand(rng, "bf16", (3, 4))
    for to in ("f32", "f64", "i32", "bool"):
        add(Case("cast bf16 -> %s" % to, "(cast %s :%s)" % (lit(xb, "bf16"), to),
                 cast_expected(xb, to), to))
    xi = np.concatenate([rand(rng, "i32", (8,), -100000, 100000), np.array([0, 2147483647, -2147483648, 16777217], np.int32)])
    for to in ("f32", "f64", "i64", "bool", "bf16"):
        want = cast_expected(xi, to) if to != "f32" else xi.astype(np.float32)
        add(Case("cast i32 -> %s" % to, "(cast %s :%s)" % (lit(xi, "i32"), to), want, to))
    xl = np.array([5000000000, -5000000000, 2 ** 40 + 3, -7, 0], np.int64)
    for to in ("i32", "f64", "f32"):
        add(Case("cast i64 -> %s" % to, "(cast %s :%s)" % (lit(xl, "i64"), to), cast_expected(xl, to), to))
    bb = rand(rng, "bool", (7,))
    for to in ("f32", "i32", "f64", "bf16"):
        add(Case("cast bool -> %s" % to, "(cast %s :%s)" % (lit(bb, "bool"), to), cast_expected(bb, to), to))
    # IEEE special cases: division by zero, pow at its edges, signed zeros (seen through 1/x).
    num_ = np.array([1.0, -1.0, 0.0, np.inf, -2.0, np.nan], np.float32)
    den = np.array([0.0, 0.0, 0.0, np.inf, -0.0, 1.0], np.float32)
    add(Case("/ f32 by zero and infinities", "(/ %s %s)" % (lit(num_, "f32"), lit(den, "f32")), wide(num_) / wide(den), "f32"))
    pb = np.array([0.0, 0.0, 0.0, -2.0, -2.0, 1.0, np.inf, 2.0, np.nan, 1.0], np.float32)
    pe = np.array([0.0, -1.0, 2.0, 0.5, 3.0, np.nan, -1.0, np.inf, 0.0, np.inf], np.float32)
    add(Case("pow special values", "(pow %s %s)" % (lit(pb, "f32"), lit(pe, "f32")), np.power(wide(pb), wide(pe)), "f32"))
    z = np.array([-0.0, 0.0, -0.0, 3.0], np.float32)
    Z = lit(z, "f32")
    for expr, fn in (("(+ %s 0.0)" % Z, lambda v: v + np.float32(0.0)),
                     ("(- %s 0.0)" % Z, lambda v: v - np.float32(0.0)),
                     ("(- %s (tensor -0.0))" % Z, lambda v: v - np.float32(-0.0)),
                     ("(* %s 1.0)" % Z, lambda v: v * np.float32(1.0)),
                     ("(- %s)" % Z, lambda v: -v),
                     ("(- (- %s))" % Z, lambda v: v),
                     ("(abs %s)" % Z, np.abs),
                     ("(sqrt %s)" % Z, np.sqrt),
                     ("(* %s -1.0)" % Z, lambda v: v * np.float32(-1.0))):
        add(Case("signed zero: 1/%s" % expr.replace(Z, "x"), "(/ 1.0 %s)" % expr, np.float32(1) / fn(z), "f32"))
    x = rand(rng, "f32", (3, 4), 0.5, 3.0)
    add(Case("/ weak 2.0 f32", "(/ 2.0 %s)" % lit(x, "f32"), 2.0 / wide(x), "f32", elem_tol("f32")))
    add(Case("- weak 1 i32", "(- 1 %s)" % lit(i, "i32"), 1 - i, "i32"))
    sg = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, 1e-45, -1e-45], np.float32)
    add(Case("sign special", "(sign %s)" % lit(sg, "f32"), np.sign(sg), "f32"))
    # bool in arithmetic takes the other operand's dtype.
    bb2 = rand(rng, "bool", (2, 3))
    xf2 = rand(rng, "f32", (2, 3))
    add(Case("bool + f32", "(+ %s %s)" % (lit(bb2, "bool"), lit(xf2, "f32")), wide(bb2) + wide(xf2), "f32", elem_tol("f32")))
    add(Case("bool * weak 2", "(* %s 2)" % lit(bb2, "bool"), bb2.astype(np.int32) * 2, "i32"))
    bb3 = rand(rng, "bool", (2, 3))
    add(Case("= bool bool", "(= %s %s)" % (lit(bb2, "bool"), lit(bb3, "bool")), bb2 == bb3, "bool"))
    # Literals: integers give i32, floats f32, booleans bool.
    ints = rand(rng, "i32", (2, 3))
    add(Case("literal ints are i32", "(tensor %s)" % nested(ints, "i32"), ints, "i32"))
    fl = rand(rng, "f32", (2, 3))
    add(Case("literal floats are f32", "(tensor %s)" % nested(fl, "f32"), fl, "f32"))
    add(Case("literal f64 keeps f64", "(tensor %s :dtype :f64)" % nested(xd2, "f64"), xd2, "f64"))
    return cases


def reduced_axes(x, axes):
    return tuple(range(x.ndim)) if axes is None else tuple(sorted(a % x.ndim for a in axes))


def np_arg(x, axes, keepdims, fn):
    """argmax/argmin over several axes: the flat position within the reduced axes (in
    axis order), first occurrence on ties."""
    ax = reduced_axes(x, axes)
    rest = [d for d in range(x.ndim) if d not in ax]
    moved = np.transpose(x, rest + list(ax)).reshape([x.shape[d] for d in rest] + [-1])
    out = fn(moved, axis=-1).astype(np.int64)
    if keepdims:
        out = out.reshape([1 if d in ax else x.shape[d] for d in range(x.ndim)])
    return out


def reduction_kw(axes, keepdims):
    s = ""
    if axes is not None:
        s += " :axes [%s]" % " ".join(map(str, axes))
    if keepdims:
        s += " :keepdims true"
    return s


def group_reductions(rng):
    cases = []
    add = cases.append
    axes_list = [None, [0], [1], [2], [-1], [0, 2], [2, 0], [1, 2], [0, 1, 2], [-3, -2]]
    for dtype in ("f32", "f64", "i32", "i64", "bf16"):
        x = rand(rng, dtype, (4, 5, 6), -100, 100)
        if dtype in ("i32", "i64"):
            small = rand(rng, dtype, (4, 5, 6), -3, 3)  # many ties for argmax/argmin
        else:
            small = (np.round(wide(rand(rng, "f32", (4, 5, 6))) * 2) / 2).astype(NP[dtype])
        for axes in axes_list:
            for keepdims in (False, True):
                ax = reduced_axes(x, axes)
                kw = reduction_kw(axes, keepdims)
                n = int(np.prod([x.shape[a] for a in ax]))
                if dtype in FLOATS:
                    want = np.sum(wide(x), axis=ax, keepdims=keepdims)
                    mag = np.sum(np.abs(wide(x)), axis=ax, keepdims=keepdims)
                    tol = reduce_tol(dtype, n, mag)
                    if dtype == "bf16":  # accumulates in f32, rounds once to bf16
                        tol = Close(2 * U["bf16"], reduce_tol("f32", n, mag).atol)
                else:
                    want, tol = np.sum(x, axis=ax, keepdims=keepdims).astype(NP[dtype]), EXACT
                add(Case("sum %s%s" % (dtype, kw), "(sum %s%s)" % (lit(x, dtype), kw), want, dtype, tol))
                add(Case("reduce-max %s%s" % (dtype, kw), "(reduce-max %s%s)" % (lit(x, dtype), kw),
                         np.max(x, axis=ax, keepdims=keepdims), dtype))
                add(Case("reduce-min %s%s" % (dtype, kw), "(reduce-min %s%s)" % (lit(x, dtype), kw),
                         np.min(x, axis=ax, keepdims=keepdims), dtype))
                if dtype in ("f32", "i32"):
                    add(Case("argmax %s ties%s" % (dtype, kw), "(argmax %s%s)" % (lit(small, dtype), kw),
                             np_arg(small, axes, keepdims, np.argmax), "i64"))
                    add(Case("argmin %s ties%s" % (dtype, kw), "(argmin %s%s)" % (lit(small, dtype), kw),
                             np_arg(small, axes, keepdims, np.argmin), "i64"))
    # NaN wins in max/min and argmax/argmin (the first NaN), as in NumPy.
    x = rand(rng, "f32", (3, 4))
    x[0, 2] = np.nan
    x[2, 1] = np.nan
    x[2, 3] = np.nan
    for op, fn in (("reduce-max", np.max), ("reduce-min", np.min)):
        for axes in (None, [0], [1]):
            kw = reduction_kw(axes, False)
            add(Case("%s nan%s" % (op, kw), "(%s %s%s)" % (op, lit(x, "f32"), kw), fn(x, axis=reduced_axes(x, axes)), "f32"))
    for op, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for axes in (None, [0], [1]):
            kw = reduction_kw(axes, False)
            add(Case("%s nan%s" % (op, kw), "(%s %s%s)" % (op, lit(x, "f32"), kw), np_arg(x, axes, False, fn), "i64"))
    # Infinities, a rank-1 and a rank-0 input, and a long reduction.
    y = np.array([-np.inf, -np.inf, np.inf, 1.0], np.float32)
    add(Case("sum inf", "(sum %s)" % lit(y, "f32"), np.float32(np.nan), "f32"))
    add(Case("reduce-max -inf", "(reduce-max %s)" % lit(y[:2], "f32"), np.float32(-np.inf), "f32"))
    s = np.float32(2.5)
    add(Case("sum rank 0", "(sum %s)" % lit(s, "f32"), s, "f32"))
    big = np.array([2147483647, 1, 2], np.int32)
    add(Case("sum i32 wraps", "(sum %s)" % lit(big, "i32"), np.int32(np.int64(big.astype(np.int64).sum()).astype(np.int32)), "i32"))
    one = rand(rng, "f32", (1, 5, 1))
    for op, fn in (("sum", np.sum), ("reduce-max", np.max)):
        add(Case("%s size-1 axes" % op, "(%s %s :axes [0 2])" % (op, lit(one, "f32")), fn(one, axis=(0, 2)), "f32"))
    add(Case("argmax rank 0", "(argmax %s)" % lit(np.float32(3.0), "f32"), np.int64(0), "i64"))
    z = rand(rng, "f32", (999,))
    add(Case("sum 999", "(sum %s)" % lit(z, "f32"), np.sum(wide(z)), "f32", reduce_tol("f32", 999, np.sum(np.abs(wide(z))))))
    return cases


def np_pad(x, low, high, interior, value):
    shape = [l + h + n + max(n - 1, 0) * i for n, l, h, i in zip(x.shape, low, high, interior)]
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(l, l + (n - 1) * (i + 1) + 1, i + 1) for n, l, i in zip(x.shape, low, interior))] = x
    return out


def np_scatter_add(x, idx, updates, axis):
    out = x.copy()
    clipped = np.clip(idx, 0, x.shape[axis] - 1)
    r = idx.ndim
    xt = np.moveaxis(out, axis, 0)
    ut = np.moveaxis(updates, list(range(axis, axis + r)), list(range(r)))
    np.add.at(xt, clipped, ut)
    return out


def group_shapes(rng):
    cases = []
    add = cases.append
    for dtype in ("f32", "i32", "bool", "f64", "bf16", "i64"):
        x = rand(rng, dtype, (2, 3, 4))
        L = lit(x, dtype)
        for shape in ([4, 6], [24], [2, -1], [-1, 3, 2], [1, 24, 1], [2, 3, 4]):
            add(Case("reshape %s %s" % (dtype, shape), "(reshape %s %s)" % (L, shape_lit(shape)), x.reshape(shape), dtype))
        add(Case("transpose %s default" % dtype, "(transpose %s)" % L, np.transpose(x), dtype))
        for perm in ([1, 0, 2], [2, 0, 1], [0, 2, 1], [0, 1, 2]):
            add(Case("transpose %s %s" % (dtype, perm), "(transpose %s %s)" % (L, shape_lit(perm)), np.transpose(x, perm), dtype))
        y = rand(rng, dtype, (3, 1))
        for shape in ([3, 5], [2, 3, 5], [4, 1, 3, 1]):
            add(Case("broadcast %s [3 1] to %s" % (dtype, shape), "(broadcast %s %s)" % (lit(y, dtype), shape_lit(shape)),
                     np.broadcast_to(y, shape), dtype))
    x = rand(rng, "f32", (5, 6, 7))
    L = lit(x, "f32")
    # Slices: Python semantics with positive steps, negative start/stop counting from the
    # end and clamped to the axis; shorter lists leave the last axes whole.
    slices = [
        ([1, 0, 2], [4, 6, 7], None),
        ([0, 1, 0], [5, 6, 7], [2, 3, 4]),
        ([-3, -5, 1], [5, -1, -2], [1, 2, 3]),
        ([1], [3], None),
        ([0, 2], [5, 4], [4, 1]),
        ([-100, 0, 0], [100, 6, 7], [3, 5, 6]),
        ([3, 0, 0], [2, 6, 7], None),  # stop before start: empty along axis 0
        ([0, 0, 6], [5, 6, 7], [1, 1, 7]),
        ([-1, -1, -1], [5, 6, 7], None),
    ]
    for start, stop, step in slices:
        st = step or [1] * len(start)
        want = x[tuple(slice(a, b, c) for a, b, c in zip(start, stop, st))]
        expr = "(slice %s %s %s%s)" % (L, shape_lit(start), shape_lit(stop), " " + shape_lit(step) if step else "")
        if want.size == 0:
            add(Case("slice %s %s %s (empty: its shape)" % (start, stop, step),
                              "(tensor (shape %s))" % expr, np.array(want.shape, np.int32), "i32"))
        else:
            add(Case("slice %s %s %s" % (start, stop, step), expr, want, "f32"))
    xi = rand(rng, "i32", (10,))
    add(Case("slice i32 1-D step 3", "(slice %s [1] [10] [3])" % lit(xi, "i32"), xi[1:10:3], "i32"))
    # concat
    for dtype in ("f32", "i32", "bool"):
        a, b, c = rand(rng, dtype, (2, 3)), rand(rng, dtype, (2, 3)), rand(rng, dtype, (2, 3))
        for axis in (0, 1, -1, -2):
            add(Case("concat %s axis %d" % (dtype, axis),
                     "(concat-tensors (list %s %s %s) :axis %d)" % (lit(a, dtype), lit(b, dtype), lit(c, dtype), axis),
                     np.concatenate([a, b, c], axis=axis), dtype))
    a, b = rand(rng, "f32", (2, 1, 4)), rand(rng, "f32", (2, 3, 4))
    add(Case("concat uneven axis 1", "(concat-tensors (list %s %s) :axis 1)" % (lit(a, "f32"), lit(b, "f32")),
             np.concatenate([a, b], axis=1), "f32"))
    add(Case("concat default axis 0", "(concat-tensors (list %s %s))" % (lit(a, "f32"), lit(a, "f32")),
             np.concatenate([a, a], axis=0), "f32"))
    ia = rand(rng, "i32", (2, 3))
    add(Case("concat i32 with f32 promotes", "(concat-tensors (list %s %s) :axis 0)" % (lit(ia, "i32"), lit(np.full((2, 3), 1.5, np.float32), "f32")),
             np.concatenate([ia.astype(np.float32), np.full((2, 3), 1.5, np.float32)]), "f32"))
    # pad, with a value and interior padding
    for dtype, value in (("f32", 0.0), ("f32", -1.5), ("i32", 7), ("f64", 2.25)):
        x = rand(rng, dtype, (3, 4))
        for low, high in (([1, 0], [0, 2]), ([0, 0], [0, 0]), ([2, 3], [1, 1])):
            vkw = "" if value == 0.0 else " :value %r" % value
            add(Case("pad %s %s %s%s" % (dtype, low, high, vkw), "(pad %s %s %s%s)" % (lit(x, dtype), shape_lit(low), shape_lit(high), vkw),
                     np_pad(x, low, high, [0, 0], value), dtype))
    x = rand(rng, "f32", (3, 4))
    add(Case("pad interior", "(pad %s [1 0] [0 2] :interior [1 2] :value 9.0)" % lit(x, "f32"),
             np_pad(x, [1, 0], [0, 2], [1, 2], 9.0), "f32"))
    # gather: NumPy take along an axis, with index arrays of any rank; an index outside
    # the axis is an error (tests/ui/tensor/index-*.sx), never clamped.
    x = rand(rng, "f32", (5, 4, 3))
    L = lit(x, "f32")
    for axis in (0, 1, 2, -1):
        n = x.shape[axis]
        for ishape in ((), (6,), (2, 3)):
            for idt in ("i32", "i64"):
                idx = rng.integers(0, n, size=ishape).astype(NP[idt])
                add(Case("gather axis %d indices %s %s" % (axis, list(ishape), idt),
                         "(gather %s %s :axis %d)" % (L, lit(idx, idt), axis), np.take(x, idx, axis=axis), "f32"))
    tbl = rand(rng, "i32", (6, 2))
    ids = rng.integers(0, 6, size=(3, 2)).astype(np.int32)
    add(Case("index i32 table", "(index %s %s)" % (lit(tbl, "i32"), lit(ids, "i32")), tbl[ids], "i32"))
    # one-hot: out-of-range ids give a row of zeros.
    ids = np.array([[0, 3, 1], [4, -1, 5]], np.int32)
    for dtype in ("f32", "i32", "bool", "f64"):
        want = (ids[..., None] == np.arange(5)).astype(NP[dtype])
        add(Case("one-hot %s" % dtype, "(one-hot %s 5 :dtype :%s)" % (lit(ids, "i32"), dtype), want, dtype))
    add(Case("one-hot default f32", "(one-hot %s 4)" % lit(ids[0] % 4, "i32"),
             (ids[0, :, None] % 4 == np.arange(4)).astype(np.float32), "f32"))
    # scatter-add: duplicates add up; updates shaped like the matching gather.
    for dtype in ("f32", "i32", "f64"):
        for axis in (0, 1, -1):
            x = rand(rng, dtype, (4, 3, 5))
            n = x.shape[axis]
            idx = rng.integers(0, n, size=(2, 3)).astype(np.int32)
            idx[0, 0] = idx[1, 1]  # a duplicate
            upd_shape = x.shape[:axis % 3] + idx.shape + x.shape[axis % 3 + 1:]
            upd = rand(rng, dtype, upd_shape)
            want = np_scatter_add(x, idx, upd, axis % 3)
            tol = EXACT if dtype not in FLOATS else Close(2 * U[dtype], 8 * U[dtype] * (np.abs(wide(x)) + 6 * 3))
            add(Case("scatter-add %s axis %d" % (dtype, axis),
                     "(scatter-add %s %s %s :axis %d)" % (lit(x, dtype), lit(idx, "i32"), lit(upd, dtype), axis),
                     want, dtype, tol))
    # Rank 0 and rank 1 corners.
    one = rand(rng, "f32", (1, 1))
    add(Case("reshape [1 1] to rank 0", "(reshape %s [])" % lit(one, "f32"), one.reshape(()), "f32"))
    add(Case("broadcast rank 0", "(broadcast %s [2 3])" % lit(np.float32(1.75), "f32"), np.full((2, 3), 1.75, np.float32), "f32"))
    v = rand(rng, "f32", (5,))
    add(Case("transpose rank 1", "(transpose %s)" % lit(v, "f32"), v, "f32"))
    add(Case("concat one tensor", "(concat-tensors (list %s) :axis 0)" % lit(v, "f32"), v, "f32"))
    bt = rand(rng, "bool", (2, 2))
    add(Case("pad bool with true", "(pad %s [1 0] [0 1] :value 1)" % lit(bt, "bool"), np_pad(bt, [1, 0], [0, 1], [0, 0], True), "bool"))
    ids64 = np.array([2, 0, 1], np.int64)
    add(Case("one-hot i64 ids", "(one-hot %s 3)" % lit(ids64, "i64"), np.eye(3, dtype=np.float32)[ids64], "f32"))
    add(Case("gather from bool", "(gather %s %s :axis 1)" % (lit(bt, "bool"), lit(np.array([1, 1, 0], np.int32), "i32")),
             bt[:, [1, 1, 0]], "bool"))
    add(Case("slice bf16", "(slice %s [1] [5] [2])" % lit(to_bf16(v), "bf16"), to_bf16(v)[1:5:2], "bf16"))
    # iota and full
    for shape, axis, dtype in (([4], 0, "i32"), ([2, 3], 1, "f32"), ([3, 2, 2], 0, "i64"), ([3, 2, 2], 2, "f64")):
        want = np.broadcast_to(np.arange(shape[axis]).reshape([-1 if d == axis else 1 for d in range(len(shape))]), shape)
        add(Case("iota %s axis %d %s" % (shape, axis, dtype), "(iota %s :axis %d :dtype :%s)" % (shape_lit(shape), axis, dtype),
                 want.astype(NP[dtype]), dtype))
    add(Case("full", "(full [2 3] 1.25)", np.full((2, 3), 1.25, np.float32), "f32"))
    add(Case("full i32", "(full [3] 4)", np.full((3,), 4, np.int32), "i32"))
    add(Case("zeros f64", "(zeros [2 2] :dtype :f64)", np.zeros((2, 2)), "f64"))
    add(Case("ones bf16", "(ones [3] :dtype :bf16)", np.ones(3, np.float32), "bf16"))
    return cases


def matmul_tol(dtype, a, b):
    k = a.shape[-1]
    mag = np.matmul(np.abs(wide(a)), np.abs(wide(b)))
    return reduce_tol(dtype, k, mag)


def group_matmul(rng):
    cases = []
    add = cases.append
    shapes = [
        ((3, 4), (4, 5)),
        ((1, 7), (7, 1)),
        ((6, 16), (16, 2)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (3, 4, 2)),   # batch axes broadcast: [2 1] with [3]
        ((4, 3), (2, 3, 5)),          # a 2-D operand broadcast over a batch
        ((2, 3, 4), (4, 2)),
        ((1, 3, 4), (5, 4, 2)),
        ((4,), (4, 3)),               # 1-D on the left: a row, dropped
        ((3, 4), (4,)),               # 1-D on the right: a column, dropped
        ((4,), (4,)),                 # both: a scalar
        ((5,), (2, 5, 3)),
        ((2, 3, 5), (5,)),
    ]
    for dtype in ("f32", "f64"):
        for sa, sb in shapes:
            a, b = rand(rng, dtype, sa), rand(rng, dtype, sb)
            add(Case("matmul %s %s @ %s" % (dtype, list(sa), list(sb)), "(matmul %s %s)" % (lit(a, dtype), lit(b, dtype)),
                     np.matmul(wide(a), wide(b)), dtype, matmul_tol(dtype, a, b)))
    for sa, sb in shapes[:5] + shapes[8:11]:
        a, b = rand(rng, "i32", sa, -20, 20), rand(rng, "i32", sb, -20, 20)
        add(Case("matmul i32 %s @ %s" % (list(sa), list(sb)), "(matmul %s %s)" % (lit(a, "i32"), lit(b, "i32")),
                 np.matmul(a, b).astype(np.int32), "i32"))
    a, b = rand(rng, "i64", (3, 4), -10 ** 6, 10 ** 6), rand(rng, "i64", (4, 2), -10 ** 6, 10 ** 6)
    add(Case("matmul i64", "(matmul %s %s)" % (lit(a, "i64"), lit(b, "i64")), np.matmul(a, b), "i64"))
    # bf16: products accumulate in f32 and the result rounds once to bf16.
    for sa, sb in (((3, 8), (8, 4)), ((2, 2, 5), (2, 5, 3))):
        a, b = rand(rng, "bf16", sa), rand(rng, "bf16", sb)
        t = matmul_tol("f32", a, b)
        add(Case("matmul bf16 %s @ %s" % (list(sa), list(sb)), "(matmul %s %s)" % (lit(a, "bf16"), lit(b, "bf16")),
                 np.matmul(wide(a), wide(b)), "bf16", Close(2 * U["bf16"], t.atol)))
    # Mixed dtypes promote: f32 @ f64 is f64.
    a, b = rand(rng, "f32", (2, 3)), rand(rng, "f64", (3, 2))
    add(Case("matmul f32 @ f64", "(matmul %s %s)" % (lit(a, "f32"), lit(b, "f64")), np.matmul(wide(a), b), "f64",
             matmul_tol("f64", a, b)))
    # Identity and a transpose: exact.
    a = rand(rng, "f32", (4, 4))
    add(Case("matmul by identity", "(matmul %s %s)" % (lit(a, "f32"), lit(np.eye(4, dtype=np.float32), "f32")), a, "f32"))
    return cases


def np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_logsumexp(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    v = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def np_rms_norm(x, w=None, eps=1e-6):
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return y * w if w is not None else y


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def np_gelu_erf(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def np_cross_entropy(logits, targets):
    ls = logits - np_logsumexp(logits, axis=-1, keepdims=True)
    picked = np.take_along_axis(ls, targets[..., None].astype(np.int64), axis=-1)[..., 0]
    return -picked.mean()


def group_nn(rng):
    cases = []
    add = cases.append
    for dtype in ("f32", "f64"):
        x = rand(rng, dtype, (4, 9)) * 3
        X, w = lit(x, dtype), wide(x)
        add(Case("softmax %s" % dtype, "(softmax %s)" % X, np_softmax(w), dtype, composite_tol(dtype, 9)))
        add(Case("softmax %s axis 0" % dtype, "(softmax %s :axis 0)" % X, np_softmax(w, 0), dtype, composite_tol(dtype, 4)))
        add(Case("log-softmax %s" % dtype, "(log-softmax %s)" % X, w - np_logsumexp(w, -1, True), dtype, composite_tol(dtype, 9)))
        add(Case("log-softmax %s axis 0" % dtype, "(log-softmax %s :axis 0)" % X, w - np_logsumexp(w, 0, True), dtype, composite_tol(dtype, 4)))
        add(Case("logsumexp %s" % dtype, "(logsumexp %s)" % X, np_logsumexp(w), dtype, composite_tol(dtype, 9)))
        add(Case("logsumexp %s axis 0 keepdims" % dtype, "(logsumexp %s :axis 0 :keepdims true)" % X,
                 np_logsumexp(w, 0, True), dtype, composite_tol(dtype, 4)))
        big = np.array([[1000.0, 999.0, -1000.0], [-50.0, -50.0, -50.0]], NP[dtype])
        add(Case("logsumexp %s large (no overflow)" % dtype, "(logsumexp %s)" % lit(big, dtype), np_logsumexp(wide(big)),
                 dtype, composite_tol(dtype, 3)))
        add(Case("softmax %s large (no overflow)" % dtype, "(softmax %s)" % lit(big, dtype), np_softmax(wide(big)),
                 dtype, composite_tol(dtype, 3)))
        x3 = rand(rng, dtype, (2, 3, 16))
        wt, bs = rand(rng, dtype, (16,)), rand(rng, dtype, (16,))
        add(Case("normalize %s" % dtype, "(normalize %s)" % lit(x3, dtype), np_layer_norm(wide(x3)), dtype, composite_tol(dtype, 16)))
        add(Case("normalize %s weight bias" % dtype, "(normalize %s :weight %s :bias %s)" % (lit(x3, dtype), lit(wt, dtype), lit(bs, dtype)),
                 np_layer_norm(wide(x3), wide(wt), wide(bs)), dtype, composite_tol(dtype, 16)))
        add(Case("normalize %s eps 0.1" % dtype, "(normalize %s :eps 0.1)" % lit(x3, dtype),
                 np_layer_norm(wide(x3), eps=np.float64(NP[dtype](0.1))), dtype, composite_tol(dtype, 16)))
        add(Case("rms-normalize %s" % dtype, "(rms-normalize %s)" % lit(x3, dtype), np_rms_norm(wide(x3)), dtype, composite_tol(dtype, 16)))
        add(Case("rms-normalize %s weight" % dtype, "(rms-normalize %s :weight %s)" % (lit(x3, dtype), lit(wt, dtype)),
                 np_rms_norm(wide(x3), wide(wt)), dtype, composite_tol(dtype, 16)))
        g = rand(rng, dtype, (5, 8)) * 3
        add(Case("gelu %s" % dtype, "(gelu %s)" % lit(g, dtype), np_gelu(wide(g)), dtype, composite_tol(dtype, 1)))
        add(Case("gelu-erf %s" % dtype, "(gelu-erf %s)" % lit(g, dtype), np_gelu_erf(wide(g)), dtype, composite_tol(dtype, 1)))
        add(Case("silu %s" % dtype, "(silu %s)" % lit(g, dtype), wide(g) * logistic(wide(g)), dtype, composite_tol(dtype, 1)))
        add(Case("relu %s" % dtype, "(relu %s)" % lit(g, dtype), np.maximum(g, 0), dtype))
        logits = rand(rng, dtype, (6, 5)) * 2
        t = rng.integers(0, 5, size=(6,)).astype(np.int32)
        add(Case("cross-entropy %s" % dtype, "(cross-entropy %s %s)" % (lit(logits, dtype), lit(t, "i32")),
                 np_cross_entropy(wide(logits), t), dtype, composite_tol(dtype, 30)))
        l3 = rand(rng, dtype, (2, 3, 7))
        t3 = rng.integers(0, 7, size=(2, 3)).astype(np.int64)
        add(Case("cross-entropy %s 3-D i64 targets" % dtype, "(cross-entropy %s %s)" % (lit(l3, dtype), lit(t3, "i64")),
                 np_cross_entropy(wide(l3), t3), dtype, composite_tol(dtype, 42)))
        m = rand(rng, dtype, (3, 4, 5))
        for axes, ax in ((None, None), ("1", (1,)), ("[0 2]", (0, 2)), ("-1", (-1,))):
            kw = "" if axes is None else " :axes %s" % axes
            n = m.size if ax is None else int(np.prod([m.shape[a] for a in ax]))
            add(Case("mean %s%s" % (dtype, kw), "(mean %s%s)" % (lit(m, dtype), kw), wide(m).mean(axis=ax), dtype,
                     composite_tol(dtype, n)))
            add(Case("var %s%s" % (dtype, kw), "(var %s%s)" % (lit(m, dtype), kw), wide(m).var(axis=ax), dtype,
                     composite_tol(dtype, 2 * n)))
        add(Case("mean %s keepdims" % dtype, "(mean %s :axes [0 1] :keepdims true)" % lit(m, dtype),
                 wide(m).mean(axis=(0, 1), keepdims=True), dtype, composite_tol(dtype, 12)))
    # Several axes at once, integer input to mean, rank-1 inputs.
    x = rand(rng, "f32", (3, 4)) * 2
    add(Case("logsumexp axes [0 1]", "(logsumexp %s :axis [0 1])" % lit(x, "f32"),
             np_logsumexp(wide(x).reshape(-1), -1), "f32", composite_tol("f32", 12)))
    e = np.exp(wide(x) - wide(x).max())
    add(Case("softmax axes [0 1]", "(softmax %s :axis [0 1])" % lit(x, "f32"), e / e.sum(), "f32", composite_tol("f32", 12)))
    xi = rand(rng, "i32", (7,))
    add(Case("mean of i32 is f32", "(mean %s)" % lit(xi, "i32"), wide(xi).mean(), "f32", composite_tol("f32", 7)))
    v = rand(rng, "f32", (10,))
    add(Case("normalize rank 1", "(normalize %s)" % lit(v, "f32"), np_layer_norm(wide(v)), "f32", composite_tol("f32", 10)))
    add(Case("cross-entropy rank 1", "(cross-entropy %s (tensor 3))" % lit(v, "f32"),
             np_cross_entropy(wide(v), np.array(3)), "f32", composite_tol("f32", 10)))
    # bf16 composites: each op rounds to bf16, so a few bf16 ulps.
    xb = rand(rng, "bf16", (3, 8))
    tb = Close(8 * U["bf16"], 8 * U["bf16"])
    add(Case("softmax bf16", "(softmax %s)" % lit(xb, "bf16"), np_softmax(wide(xb)), "bf16", tb))
    add(Case("gelu bf16", "(gelu %s)" % lit(xb, "bf16"), np_gelu(wide(xb)), "bf16", Close(8 * U["bf16"], 8 * U["bf16"])))
    add(Case("mean bf16", "(mean %s :axes 1)" % lit(xb, "bf16"), wide(xb).mean(axis=1), "bf16", Close(4 * U["bf16"], 8 * U["bf16"] * np.abs(wide(xb)).mean(axis=1))))
    for n in (1, 4, 7):
        add(Case("causal-mask %d" % n, "(causal-mask %d)" % n, np.tril(np.ones((n, n), bool)), "bool"))
    return cases


def fd_grad(f, x, h_rel=1e-6):
    """Central finite differences of a NumPy scalar function in f64."""
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        h = h_rel * max(1.0, abs(x[i]))
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def group_grad(rng):
    cases = []
    add = cases.append
    fd = Close(FD_RTOL, FD_ATOL)
    # Scalar functions of one f64 tensor: (lisp body over x, NumPy function, input range).
    w = rand(rng, "f64", (3, 4))
    W = lit(w, "f64")
    wd = np.abs(w) + 0.5  # positive divisors
    sel = rng.integers(0, 4, size=(5,)).astype(np.int32)
    funcs = [
        ("exp", "(sum (exp x))", lambda x: np.sum(np.exp(x)), None),
        ("log", "(sum (log x))", lambda x: np.sum(np.log(x)), (0.2, 3.0)),
        ("sqrt", "(sum (sqrt x))", lambda x: np.sum(np.sqrt(x)), (0.2, 3.0)),
        ("rsqrt", "(sum (rsqrt x))", lambda x: np.sum(1 / np.sqrt(x)), (0.2, 3.0)),
        ("sin cos", "(sum (* (sin x) (cos x)))", lambda x: np.sum(np.sin(x) * np.cos(x)), None),
        ("tanh", "(sum (tanh x))", lambda x: np.sum(np.tanh(x)), None),
        ("erf", "(sum (erf x))", lambda x: np.sum(erf(x)), None),
        ("logistic", "(sum (logistic x))", lambda x: np.sum(logistic(x)), None),
        ("abs", "(sum (abs x))", lambda x: np.sum(np.abs(x)), None),
        ("pow base", "(sum (pow x 2.5))", lambda x: np.sum(x ** 2.5), (0.2, 3.0)),
        ("pow exponent", "(sum (pow 1.7 x))", lambda x: np.sum(1.7 ** x), None),
        ("mul weighted", "(sum (* x %s))" % W, lambda x: np.sum(x * w), None),
        ("div numerator", "(sum (/ x %s))" % lit(wd, "f64"), lambda x: np.sum(x / wd), None),
        ("div denominator", "(sum (/ %s x))" % W, lambda x: np.sum(w / x), (0.5, 3.0)),
        ("max elementwise", "(sum (* (max x %s) %s))" % (W, W), lambda x: np.sum(np.maximum(x, w) * w), None),
        ("min elementwise", "(sum (min x 0.1))", lambda x: np.sum(np.minimum(x, 0.1)), None),
        ("reduce-max axis", "(sum (* (reduce-max x :axes [1]) %s))" % lit(w[:, 0], "f64"),
         lambda x: np.sum(x.max(axis=1) * w[:, 0]), None),
        ("reduce-min all", "(reduce-min x)", lambda x: x.min(), None),
        ("sum keepdims broadcast", "(sum (* (sum x :axes [0] :keepdims true) %s))" % W,
         lambda x: np.sum(x.sum(axis=0, keepdims=True) * w), None),
        ("transpose", "(sum (* (transpose x) %s))" % lit(w.T, "f64"), lambda x: np.sum(x.T * w.T), None),
        ("reshape", "(sum (* (reshape x [2 6]) %s))" % lit(w.reshape(2, 6), "f64"), lambda x: np.sum(x.reshape(2, 6) * w.reshape(2, 6)), None),
        ("broadcast", "(sum (* (broadcast (sum x :axes [1] :keepdims true) [3 5]) (broadcast %s [3 5])))" % lit(w[:, :1], "f64"),
         lambda x: np.sum(np.broadcast_to(x.sum(axis=1, keepdims=True), (3, 5)) * w[:, :1]), None),
        ("slice step", "(sum (* (slice x [0 1] [3 4] [2 2]) %s))" % lit(w[0:3:2, 1:4:2], "f64"),
         lambda x: np.sum(x[0:3:2, 1:4:2] * w[0:3:2, 1:4:2]), None),
        ("pad", "(sum (* (pad x [1 0] [0 2] :value 3.0) %s))" % lit(np_pad(w, [1, 0], [0, 2], [0, 0], 0.5), "f64"),
         lambda x: np.sum(np_pad(x, [1, 0], [0, 2], [0, 0], 3.0) * np_pad(w, [1, 0], [0, 2], [0, 0], 0.5)), None),
        ("concat", "(sum (* (concat-tensors (list x (* x x)) :axis 1) %s))" % lit(np.concatenate([w, w], 1), "f64"),
         lambda x: np.sum(np.concatenate([x, x * x], 1) * np.concatenate([w, w], 1)), None),
        ("gather repeated", "(sum (* (gather x %s :axis 1) %s))" % (lit(sel, "i32"), lit(np.take(w, sel, axis=1) + 1, "f64")),
         lambda x: np.sum(np.take(x, sel, axis=1) * (np.take(w, sel, axis=1) + 1)), None),
        ("where", "(sum (where (> %s 0.0) (* x x) (* 3.0 x)))" % W, lambda x: np.sum(np.where(w > 0, x * x, 3 * x)), None),
        ("cast f32 roundtrip", "(sum (* (cast (cast x :f32) :f64) %s))" % W, lambda x: np.sum(x * w), None),
        ("softmax", "(sum (* (softmax x) %s))" % W, lambda x: np.sum(np_softmax(x) * w), None),
        ("log-softmax axis 0", "(sum (* (log-softmax x :axis 0) %s))" % W, lambda x: np.sum((x - np_logsumexp(x, 0, True)) * w), None),
        ("logsumexp", "(sum (logsumexp x))", lambda x: np.sum(np_logsumexp(x)), None),
        ("normalize", "(sum (* (normalize x) %s))" % W, lambda x: np.sum(np_layer_norm(x) * w), None),
        ("normalize weight bias", "(sum (* (normalize x :weight %s :bias %s) %s))" % (lit(w[0], "f64"), lit(w[1], "f64"), W),
         lambda x: np.sum(np_layer_norm(x, w[0], w[1]) * w), None),
        ("rms-normalize weight", "(sum (* (rms-normalize x :weight %s) %s))" % (lit(w[0], "f64"), W),
         lambda x: np.sum(np_rms_norm(x, w[0]) * w), None),
        ("rms-normalize", "(sum (* (rms-normalize x) %s))" % W, lambda x: np.sum(np_rms_norm(x) * w), None),
        ("gelu", "(sum (gelu x))", lambda x: np.sum(np_gelu(x)), None),
        ("gelu-erf", "(sum (gelu-erf x))", lambda x: np.sum(np_gelu_erf(x)), None),
        ("silu", "(sum (silu x))", lambda x: np.sum(x * logistic(x)), None),
        ("var", "(var x)", lambda x: x.var(), None),
        ("matmul", "(sum (* (matmul x %s) %s))" % (lit(w.T, "f64"), lit(w @ w.T, "f64")),
         lambda x: np.sum((x @ w.T) * (w @ w.T)), None),
    ]
    v4, m43 = rand(rng, "f64", (4,)), rand(rng, "f64", (4, 3))
    g34 = rand(rng, "f64", (3, 4))
    idx2 = rng.integers(0, 4, size=(2, 3)).astype(np.int64)
    funcs += [
        ("matmul 1-D left", "(sum (* (matmul %s x) %s))" % (lit(m43[0], "f64"), lit(v4, "f64")),
         lambda x: np.sum((m43[0] @ x) * v4), None),
        ("matmul 1-D right", "(sum (* (matmul x %s) %s))" % (lit(v4, "f64"), lit(g34[:, 0], "f64")),
         lambda x: np.sum((x @ v4) * g34[:, 0]), None),
        ("weak scalar", "(sum (* (+ (* x 2) 1.5) x))", lambda x: np.sum((2 * x + 1.5) * x), None),
        ("slice negative", "(sum (* (slice x [-2 -3] [3 -1]) %s))" % lit(w[-2:, -3:-1] + 1, "f64"),
         lambda x: np.sum(x[-2:, -3:-1] * (w[-2:, -3:-1] + 1)), None),
        ("slice step not dividing", "(sum (* (slice x [0 0] [3 4] [2 3]) %s))" % lit(w[0:3:2, 0:4:3], "f64"),
         lambda x: np.sum(x[0:3:2, 0:4:3] * w[0:3:2, 0:4:3]), None),
        ("gather 2-D ids axis 1", "(sum (* (gather x %s :axis 1) %s))" % (lit(idx2, "i64"), lit(np.take(w, idx2, axis=1), "f64")),
         lambda x: np.sum(np.take(x, idx2, axis=1) * np.take(w, idx2, axis=1)), None),
        ("pad interior", "(sum (* (pad x [0 1] [1 0] :interior [1 1]) %s))" % lit(np_pad(w, [0, 1], [1, 0], [1, 1], 1.0), "f64"),
         lambda x: np.sum(np_pad(x, [0, 1], [1, 0], [1, 1], 0.0) * np_pad(w, [0, 1], [1, 0], [1, 1], 1.0)), None),
        ("where broadcast cond", "(sum (where (> %s 0.0) x (* x x)))" % lit(w[:, :1], "f64"),
         lambda x: np.sum(np.where(w[:, :1] > 0, x, x * x)), None),
        ("logsumexp keepdims axis 0", "(sum (* (logsumexp x :axis 0 :keepdims true) %s))" % lit(w[:1], "f64"),
         lambda x: np.sum(np_logsumexp(x, 0, True) * w[:1]), None),
        ("cross-entropy", "(cross-entropy x %s)" % lit(np.array([0, 3, 1], np.int32), "i32"),
         lambda x: np_cross_entropy(x, np.array([0, 3, 1])), None),
        ("mean var chain", "(sum (* (mean x :axes 1 :keepdims true) (var x :axes 0 :keepdims true)))",
         lambda x: np.sum(x.mean(axis=1, keepdims=True) * x.var(axis=0, keepdims=True)), None),
        ("sum of rank-0 result", "(sum (* x x))", lambda x: np.sum(x * x), None),
    ]
    for name, body, fn, rng_ in funcs:
        x = rand(rng, "f64", (3, 4)) if rng_ is None else rand(rng, "f64", (3, 4), *rng_)
        if name in ("abs", "max elementwise", "min elementwise"):
            x = np.where(np.abs(x - (w if "max" in name else 0.1 if "min" in name else 0)) < 0.05, x + 0.2, x)
        add(Case("grad %s" % name, "((grad (lambda (x) %s)) %s)" % (body, lit(x, "f64")), fd_grad(fn, x), "f64", fd))

    # Analytic gradients in f32.
    # softmax + cross-entropy w.r.t. the logits: (softmax(l) - onehot(t)) / N.
    for shape in ((6, 5), (2, 3, 4)):
        l = rand(rng, "f32", shape) * 2
        t = rng.integers(0, shape[-1], size=shape[:-1]).astype(np.int32)
        n = int(np.prod(shape[:-1]))
        want = (np_softmax(wide(l)) - (t[..., None] == np.arange(shape[-1]))) / n
        add(Case("grad cross-entropy %s" % list(shape), "((grad (lambda (l) (cross-entropy l %s))) %s)" % (lit(t, "i32"), lit(l, "f32")),
                 want, "f32", composite_tol("f32", 4 * shape[-1])))
    # value-and-grad: (loss, gradient).
    l = rand(rng, "f32", (4, 3))
    t = rng.integers(0, 3, size=(4,)).astype(np.int32)
    add(Case("value-and-grad cross-entropy", "((value-and-grad (lambda (l) (cross-entropy l %s))) %s)" % (lit(t, "i32"), lit(l, "f32")),
             [np_cross_entropy(wide(l), t), (np_softmax(wide(l)) - (t[:, None] == np.arange(3))) / 4], ["f32", "f32"],
             [composite_tol("f32", 12), composite_tol("f32", 12)]))
    # normalize (layer-norm without weight): d/dx sum(g * LN(x)) = (1/s) (g - mean(g) - y mean(g y)) per row.
    x = rand(rng, "f32", (3, 16))
    gw = rand(rng, "f32", (3, 16))
    xw, gw64 = wide(x), wide(gw)
    mu = xw.mean(-1, keepdims=True)
    s = np.sqrt(((xw - mu) ** 2).mean(-1, keepdims=True) + np.float64(np.float32(1e-5)))
    y = (xw - mu) / s
    want = (gw64 - gw64.mean(-1, keepdims=True) - y * (gw64 * y).mean(-1, keepdims=True)) / s
    add(Case("grad normalize analytic", "((grad (lambda (x) (sum (* (normalize x) %s)))) %s)" % (lit(gw, "f32"), lit(x, "f32")),
             want, "f32", composite_tol("f32", 64)))
    # matmul: d/dA sum(G * (A @ B)) = G B^T and d/dB = A^T G, as a pair.
    a, b, gm = rand(rng, "f32", (3, 5)), rand(rng, "f32", (5, 4)), rand(rng, "f32", (3, 4))
    ga, gb = wide(gm) @ wide(b).T, wide(a).T @ wide(gm)
    ta = reduce_tol("f32", 4, np.abs(wide(gm)) @ np.abs(wide(b)).T)
    tb = reduce_tol("f32", 3, np.abs(wide(a)).T @ np.abs(wide(gm)))
    add(Case("grad matmul both operands", "((grad (lambda (a b) (sum (* (matmul a b) %s)))) %s %s)" % (lit(gm, "f32"), lit(a, "f32"), lit(b, "f32")),
             [ga, gb], ["f32", "f32"], [ta, tb]))
    # batched matmul with a broadcast batch axis: the gradient sums over it.
    a, b = rand(rng, "f32", (2, 3, 4)), rand(rng, "f32", (4, 2))
    gb = np.einsum("bik,bij->kj", wide(a), np.ones((2, 3, 2)))
    add(Case("grad matmul broadcast batch", "((grad (lambda (b) (sum (matmul %s b)))) %s)" % (lit(a, "f32"), lit(b, "f32")),
             gb, "f32", reduce_tol("f32", 6, np.einsum("bik,bij->kj", np.abs(wide(a)), np.ones((2, 3, 2))))))
    # scatter-add's gradient w.r.t. updates is a gather; gather's is a scatter-add (repeats add).
    x = rand(rng, "f32", (5,))
    ids = np.array([0, 2, 2, 4, 2], np.int32)
    add(Case("grad gather repeated ids", "((grad (lambda (x) (sum (gather x %s)))) %s)" % (lit(ids, "i32"), lit(x, "f32")),
             np.bincount(ids, minlength=5).astype(np.float32), "f32"))
    u = rand(rng, "f32", (5,))
    wt = rand(rng, "f32", (5,))
    add(Case("grad scatter-add updates", "((grad (lambda (u) (sum (* (scatter-add (zeros [5]) %s u) %s)))) %s)" % (lit(ids, "i32"), lit(wt, "f32"), lit(u, "f32")),
             wt[ids], "f32"))
    # Ties (where NumPy defines nothing; the rules of src/graph/prims): reduce-max splits the
    # gradient evenly among tied maxima; elementwise max gives it to the first operand.
    t = np.array([1.0, 3.0, 3.0, 2.0], np.float32)
    add(Case("grad reduce-max ties split evenly", "((grad (lambda (x) (reduce-max x))) %s)" % lit(t, "f32"),
             np.array([0, 0.5, 0.5, 0], np.float32), "f32"))
    add(Case("grad max tie goes to the first operand", "((grad (lambda (x y) (sum (max x y)))) %s %s)" % (lit(t, "f32"), lit(t, "f32")),
             [np.ones(4, np.float32), np.zeros(4, np.float32)], ["f32", "f32"]))
    # A function of a tensor and a number: the number's gradient is nil, a tensor's is its shape.
    x = rand(rng, "f32", (2, 2))
    add(Case("grad of sum of squares", "((grad (lambda (x) (sum (* x x)))) %s)" % lit(x, "f32"), 2 * wide(x), "f32", elem_tol("f32")))
    return cases

