"""Interval arithmetic on compiled index expressions (see ``_tir_walk``), over many columns at once.

A *column* is one assignment of ranges to the loops: for footprints, the loops at
depth >= d span their range while the outer ones stay at their first iteration;
for strides, every loop sits at its min except one moved by one iteration.
:func:`range_matrices` builds the loop bounds per column and :func:`rows_interval`
bounds many expressions at once: affine parts are one matrix product, and the
opaque subtrees (floor division, modulo, min, max, products of variables) are
bounded level by level, each level in one vectorized step. :func:`interval` is the
plain recursive version (scalars or vectors), :func:`stride` the exact per-loop step.
"""

from __future__ import annotations

import numpy as np


def _fold(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a // b if b else 0
    if op == "%":
        return a % b if b else 0
    if op == "min":
        return min(a, b)
    return max(a, b)


def _const(lo, hi) -> bool:
    return type(lo) is int and type(hi) is int and lo == hi


def interval(c, ranges: dict, memo: dict):
    """``(lo, hi)`` of a compiled expression; each bound is an int or a numpy vector over columns.

    ``ranges[k] = (lo_k, hi_k)`` gives each loop's range per column; ``None`` when unknown.
    """
    if type(c) is int:
        return c, c
    key = id(c)
    hit = memo.get(key)
    if hit is not None:
        return hit
    op = c[0]
    if op == "v":
        return ranges[c[1]]
    elif op == "?":
        res = None
    else:
        ia = interval(c[1], ranges, memo)
        ib = interval(c[2], ranges, memo)
        if ia is None or ib is None:
            res = None
        else:
            alo, ahi = ia
            blo, bhi = ib
            if op == "+":
                res = (alo + blo, ahi + bhi)
            elif op == "-":
                res = (alo - bhi, ahi - blo)
            elif op == "*":
                if _const(blo, bhi):
                    res = (alo * blo, ahi * blo) if blo >= 0 else (ahi * blo, alo * blo)
                elif _const(alo, ahi):
                    res = (blo * alo, bhi * alo) if alo >= 0 else (bhi * alo, blo * alo)
                else:
                    p = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
                    res = (np.minimum.reduce(p), np.maximum.reduce(p))
            elif op == "/":
                if _const(blo, bhi) and blo > 0:
                    res = (alo // blo, ahi // blo)
                else:
                    res = None
            elif op == "%":
                if _const(blo, bhi) and blo > 0:
                    m = blo
                    wide = (np.asarray(ahi) - alo + 1 >= m) | (np.asarray(alo) // m != np.asarray(ahi) // m)
                    res = (np.where(wide, 0, np.asarray(alo) % m), np.where(wide, m - 1, np.asarray(ahi) % m))
                else:
                    res = (0, np.maximum(np.abs(blo), np.abs(bhi)) - 1)
            elif op == "min":
                res = (np.minimum(alo, blo), np.minimum(ahi, bhi))
            else:
                res = (np.maximum(alo, blo), np.maximum(ahi, bhi))
    memo[key] = res
    return res


def range_matrices(loops: list, relax: np.ndarray, shifted=None) -> tuple:
    """Loop bounds over columns: ``(low, high)``, int64 ``[n_loops, cols]``.

    Columns: first ``relax.shape[1]`` *region* columns, where loop ``k`` spans its
    whole range if ``relax[k, col]`` and stays at its min otherwise; then one *base*
    column (every loop at its min); then one column per loop ``j`` of ``shifted``
    (default: all loops, in order): loop ``j`` at min + 1, the others at min. A
    difference of such a column and the base is the stride of an index along ``j``.
    """
    n = len(loops)
    n_region = relax.shape[1]
    shifted = list(range(n)) if shifted is None else list(shifted)
    cols = n_region + 1 + len(shifted)
    lo = np.fromiter((lp.lo for lp in loops), dtype=np.int64, count=n)
    ext = np.fromiter((lp.extent for lp in loops), dtype=np.int64, count=n)
    low = np.repeat(lo[:, None], cols, axis=1)
    for j, k in enumerate(shifted):
        low[k, n_region + 1 + j] += 1
    high = low.copy()
    if n_region:
        high[:, :n_region] += (ext - 1)[:, None] * relax.astype(np.int64)
    return low, high


def point(c, lo: list, shifted: int = -1):
    """Value of a compiled expression with every loop ``k`` at ``lo[k]`` (loop ``shifted`` one more).

    None when the expression is unknown.
    """
    if type(c) is int:
        return c
    op = c[0]
    if op == "v":
        k = c[1]
        return lo[k] + 1 if k == shifted else lo[k]
    if op == "?":
        return None
    a = point(c[1], lo, shifted)
    b = point(c[2], lo, shifted)
    if a is None or b is None:
        return None
    return _fold(op, a, b)


def stride(c, lo: list, loop: int, memo: dict, opaque: "OpaqueTerms") -> int:
    """How much a compiled expression grows when ``loop`` goes from its min to min + 1 (0 if unknown).

    Exact for affine expressions (the loop's coefficient); opaque terms are evaluated at the two points.
    """
    if type(c) is int or not (c[4] >> loop) & 1:
        return 0
    lin = _linear(c, memo, opaque)
    if lin is None:
        return 0
    total = 0
    for key, coef in lin[1].items():
        if key == loop:
            total += coef
        elif key < 0:
            node = opaque.nodes[-1 - key]
            if (node[4] >> loop) & 1:
                a, b = point(node, lo, loop), point(node, lo)
                if a is not None and b is not None:
                    total += coef * (a - b)
    return total


class OpaqueTerms:
    """Registry of the opaque subtrees met while linearizing (index -> node)."""

    __slots__ = ("index", "nodes")

    def __init__(self):
        self.index: dict[int, int] = {}
        self.nodes: list = []

    def key(self, node) -> int:
        j = self.index.get(id(node))
        if j is None:
            j = self.index[id(node)] = len(self.nodes)
            self.nodes.append(node)
        return -1 - j


def _linear(c, memo: dict, opaque: OpaqueTerms):
    """``(const, {key: coef})`` with ``c == const + sum(coef * key)``, or None if unknown.

    A key ``k >= 0`` is loop ``k``; a key ``-1 - j`` is the j-th *opaque* subtree
    (floor division, modulo, min, max, products of variables) of ``opaque``.
    """
    if type(c) is int:
        return c, {}
    key = id(c)
    if key in memo:
        return memo[key]
    op = c[0]
    res = None
    if op == "v":
        res = (0, {c[1]: 1})
    elif op == "+" or op == "-":
        la = _linear(c[1], memo, opaque)
        lb = _linear(c[2], memo, opaque)
        if la is not None and lb is not None:
            if op == "+":
                if not lb[1]:
                    res = (la[0] + lb[0], la[1])
                elif not la[1]:
                    res = (la[0] + lb[0], lb[1])
                else:
                    coefs = dict(la[1])
                    for k, v in lb[1].items():
                        coefs[k] = coefs.get(k, 0) + v
                    res = (la[0] + lb[0], coefs)
            else:
                coefs = dict(la[1])
                for k, v in lb[1].items():
                    coefs[k] = coefs.get(k, 0) - v
                res = (la[0] - lb[0], coefs)
    elif op == "*" and (type(c[1]) is int or type(c[2]) is int):
        scale, other = (c[1], c[2]) if type(c[1]) is int else (c[2], c[1])
        lo = _linear(other, memo, opaque)
        if lo is not None:
            res = (lo[0] * scale, {k: v * scale for k, v in lo[1].items()})
    elif op != "?":
        res = (0, {opaque.key(c): 1})
    memo[key] = res
    return res


def _lin_eval(lins: list, bounds: np.ndarray, n_loops: int):
    """Bounds of linear forms (None = unknown) given ``bounds = [low | high]`` of loops then opaque terms.

    Returns ``(lo, hi, known)``; one matrix product when no coefficient is negative.
    """
    n = len(lins)
    width, two_cols = bounds.shape
    cols = two_cols // 2
    const = np.empty((n, 1))
    known = np.ones(n, dtype=bool)
    rows, keys, vals = [], [], []
    negative = False
    all_const = True
    for r, lin in enumerate(lins):
        if lin is None:
            known[r] = False
            const[r, 0] = 0
            continue
        const[r, 0] = lin[0]
        for k, v in lin[1].items():
            rows.append(r)
            keys.append(k if k >= 0 else n_loops - 1 - k)
            vals.append(v)
            if v < 0:
                negative = True
        if lin[1]:
            all_const = False
    if all_const:
        lo = np.repeat(const, cols, axis=1)
        return lo, lo.copy(), known  # two arrays: callers widen hi in place
    coef = np.zeros((n, width))
    coef[rows, keys] = vals
    if not negative:
        both = const + coef @ bounds
        return both[:, :cols], both[:, cols:], known
    pos = np.maximum(coef, 0)
    neg = coef - pos
    lo = const + pos @ bounds[:, :cols] + neg @ bounds[:, cols:]
    hi = const + pos @ bounds[:, cols:] + neg @ bounds[:, :cols]
    return lo, hi, known


def _opaque_bounds(operands: list, bounds: np.ndarray, n_loops: int):
    """Bounds of opaque nodes ``(op, lin_a, lin_b)`` whose operands are already bounded."""
    a_lo, a_hi, a_ok = _lin_eval([o[1] for o in operands], bounds, n_loops)
    kinds = [o[0] for o in operands]
    divisors = [o[2][0] if o[2] is not None and not o[2][1] else 0 for o in operands]
    ok = a_ok.copy()
    if all(k in ("/", "%") for k in kinds) and all(d > 0 for d in divisors):
        d = np.asarray(divisors, dtype=np.float64)[:, None]
        q_lo = np.floor_divide(a_lo, d)
        q_hi = np.floor_divide(a_hi, d)
        if "%" not in kinds:
            return q_lo, q_hi, ok
        wide = (a_hi - a_lo + 1 >= d) | (q_lo != q_hi)
        mod_lo = np.where(wide, 0.0, a_lo - q_lo * d)
        mod_hi = np.where(wide, d - 1, a_hi - q_hi * d)
        if "/" not in kinds:
            return mod_lo, mod_hi, ok
        is_div = np.asarray([k == "/" for k in kinds])[:, None]
        return np.where(is_div, q_lo, mod_lo), np.where(is_div, q_hi, mod_hi), ok
    # general case: floor division / modulo by variables, min, max, products
    b_lo, b_hi, b_ok = _lin_eval([o[2] for o in operands], bounds, n_loops)
    ok &= b_ok
    res_lo = np.zeros_like(a_lo)
    res_hi = np.zeros_like(a_hi)
    for m, (kind, d) in enumerate(zip(kinds, divisors)):
        alo, ahi, blo, bhi = a_lo[m], a_hi[m], b_lo[m], b_hi[m]
        if kind == "/":
            if d > 0:
                res_lo[m] = np.floor_divide(alo, d)
                res_hi[m] = np.floor_divide(ahi, d)
            else:
                ok[m] = False
        elif kind == "%":
            if d > 0:
                q_lo, q_hi = np.floor_divide(alo, d), np.floor_divide(ahi, d)
                wide = (ahi - alo + 1 >= d) | (q_lo != q_hi)
                res_lo[m] = np.where(wide, 0.0, alo - q_lo * d)
                res_hi[m] = np.where(wide, d - 1, ahi - q_hi * d)
            else:
                res_hi[m] = np.maximum(np.abs(blo), np.abs(bhi)) - 1
        elif kind == "min":
            res_lo[m] = np.minimum(alo, blo)
            res_hi[m] = np.minimum(ahi, bhi)
        elif kind == "max":
            res_lo[m] = np.maximum(alo, blo)
            res_hi[m] = np.maximum(ahi, bhi)
        else:  # a product of two variable terms
            p = np.stack([alo * blo, alo * bhi, ahi * blo, ahi * bhi])
            res_lo[m] = p.min(axis=0)
            res_hi[m] = p.max(axis=0)
    return res_lo, res_hi, ok


def rows_interval(exprs: list, low: np.ndarray, high: np.ndarray):
    """Bounds of many compiled expressions over columns: ``(lo [n, cols], hi [n, cols], known [n])``.

    ``low``/``high`` are the loop bounds per column (:func:`range_matrices`). Affine parts
    are matrix products; the opaque subtrees (floor division, modulo, min, max,
    products) are evaluated level by level, each level in one vectorized step.
    """
    n_loops, n_cols = low.shape
    memo: dict = {}
    opaque = OpaqueTerms()
    lins = [_linear(c, memo, opaque) for c in exprs]
    operands = []  # per opaque node: (op, lin_a, lin_b)
    i = 0
    while i < len(opaque.nodes):  # linearizing operands may register nested opaque nodes
        node = opaque.nodes[i]
        operands.append((node[0], _linear(node[1], memo, opaque), _linear(node[2], memo, opaque)))
        i += 1
    n_op = len(operands)
    bounds = np.zeros((n_loops + n_op, 2 * n_cols))  # [low | high] of loops, then opaque terms
    bounds[:n_loops, :n_cols] = low
    bounds[:n_loops, n_cols:] = high
    op_known = np.ones(n_op, dtype=bool)
    if n_op:
        level = [-1] * n_op

        def _level(j: int) -> int:  # 0 when the operands are affine in the loops
            if level[j] < 0:
                _, la, lb = operands[j]
                deps = [-1 - k for lin in (la, lb) if lin is not None for k in lin[1] if k < 0]
                level[j] = 1 + max((_level(d) for d in deps), default=-1)
            return level[j]

        for j in range(n_op):
            _level(j)
        for lev in range(max(level) + 1):
            members = [j for j in range(n_op) if level[j] == lev]
            res_lo, res_hi, ok = _opaque_bounds([operands[j] for j in members], bounds, n_loops)
            for m, j in enumerate(members):
                if not ok[m]:
                    op_known[j] = False
            idx = [n_loops + j for j in members]
            bounds[idx, :n_cols] = res_lo
            bounds[idx, n_cols:] = res_hi
    lo, hi, known = _lin_eval(lins, bounds, n_loops)
    if n_op and not op_known.all():
        bad = {-1 - j for j in np.flatnonzero(~op_known)}
        for r, lin in enumerate(lins):
            if lin is not None and any(k in bad for k in lin[1]):
                known[r] = False
    return lo, hi, known
