"""SymPy's ``Max``, ``Min``, ``subs``, ``factor`` and ``expand``, without their cost on large closed forms.

``Max(*args)`` asks SymPy's assumptions whether ``a >= b`` holds for every pair of arguments, first of
the difference as it is and then of its ``factor_terms``; on the byte counts of a memory peak (sums of
dozens of products of positive symbols) that took most of a cold ``symllm.workload()`` and much of the
test suite's time, and ``subs`` pays it again for every ``Max`` it rebuilds. :func:`maximum` and
:func:`minimum` drop an argument when the difference is of one sign term by term (each term a
coefficient times a product known to be nonnegative; a product of counts is at least 1, so ``W - 1 >= 0``),
expanded if need be, or once divided by its one term of the other sign (``2·d_h·s - d_h`` is
``d_h·(2·s - 1)``); :func:`substitute` and :func:`rename` rebuild an expression with them. On the closed
forms symllm builds they give SymPy's own expressions (compared on every call while composing 8 presets
under 6 stacks and layouts, and by tests/test_algebra.py); elsewhere an argument neither can order stays
(or one SymPy cannot order goes), which changes no value. :func:`factored` and :func:`expanded` give
``sp.factor`` and ``sp.expand`` of a report's collected forms without that search, factoring through the
gcd of a form linear in some symbol (SymPy's results on the 265 forms of every preset's reports).
"""
from __future__ import annotations

import sympy as sp
from sympy.core.mul import _keep_coeff

__all__ = ["expanded", "factored", "maximum", "minimum", "rename", "substitute"]


def _nonnegative(e: sp.Expr) -> bool:
    """Whether ``e >= 0`` follows from its shape and its symbols' assumptions alone (a product, sum or
    power of such, a rounding, a ``Max`` with one such argument, a ``Min`` of such), without SymPy's
    assumption system on the whole expression.

    >>> from symllm.arch import symbols as S
    >>> _nonnegative(S.b * sp.ceiling(S.V / S.N_t) * sp.Max(4, S.beta_a)), _nonnegative(S.d - S.s)
    (True, False)
    """
    if e.is_Number:
        return bool(e >= 0)
    if e.is_Symbol:
        return bool(e.is_nonnegative)
    if e.is_Mul or e.is_Add or isinstance(e, (sp.floor, sp.ceiling, sp.Min)):
        return all(_nonnegative(a) for a in e.args)
    if e.is_Pow:
        return _nonnegative(e.base) or bool(e.exp.is_even)
    if isinstance(e, sp.Max):
        return any(_nonnegative(a) for a in e.args)
    return bool(e.is_nonnegative)


def _at_least(e: sp.Expr) -> int:
    """A lower bound of a nonnegative ``e`` from its shape: 1 for a product of positive integers (a count
    of layers, heads, tokens), else 0.

    >>> from symllm.arch import symbols as S
    >>> _at_least(S.W * S.s ** 2), _at_least(S.beta_a * S.s)
    (1, 0)
    """
    factors = sp.Mul.make_args(e)
    one = all((f.base if f.is_Pow and f.exp.is_positive and f.exp.is_integer else f).is_Symbol for f in factors)
    return int(one and all(f.is_integer and f.is_positive for f in factors))


def _signs(d: sp.Expr) -> int:
    """The sign ``d`` provably has from its terms: 1, -1, or 0 for neither (a term not a coefficient times
    a nonnegative product, or terms of both signs)."""
    if d.is_Number:
        return 1 if d >= 0 else -1
    low = high = sp.S.Zero  # bounds of d from the terms: sum of (coefficient x lower bound) per sign
    pos = neg = False
    for t in sp.Add.make_args(d):
        if t.is_Number:
            low, high = low + t, high + t
            continue
        coeff, rest = t.as_coeff_Mul()
        if not _nonnegative(rest):
            return 0
        if coeff > 0:
            pos, low = True, low + coeff * _at_least(rest)
        else:
            neg, high = True, high + coeff * _at_least(rest)
    if not neg and low >= 0:
        return 1
    if not pos and high <= 0:
        return -1
    return 0


def _sign(d: sp.Expr, expanded=None) -> int:
    """1 when ``d >= 0`` is proved, -1 when ``d <= 0`` is, 0 when neither is: of ``d`` term by term, of
    ``d`` expanded, and of ``d`` divided by its one term of the other sign (``2·d_h·s - d_h`` is
    ``d_h·(2·s - 1)``: what ``Max`` finds with ``factor_terms``).

    >>> from symllm.arch import symbols as S
    >>> _sign(S.b * S.d * S.s), _sign(-2 * S.d - S.s), _sign(S.d - S.s), _sign(S.W - 1)
    (1, -1, 0, 1)
    >>> _sign(S.b * S.s * (S.d + 3 * S.d_ff) - 3 * S.b * S.d_ff * S.s), _sign(2 * S.d_h * S.s - S.d_h)
    (1, 1)
    """
    sign = _signs(d)
    if sign:
        return sign
    terms = sp.Add.make_args(d)
    if any(f.is_Add for t in terms for f in sp.Mul.make_args(t)):  # products of sums: expand them
        d = sp.expand(d) if expanded is None else expanded()
        sign = _signs(d)
        if sign:
            return sign
        terms = sp.Add.make_args(d)
    split = [t.as_coeff_Mul() for t in terms]
    up = [(c, r) for c, r in split if c > 0]
    down = [(c, r) for c, r in split if c < 0]
    if not up or not down or min(len(up), len(down)) > 1:
        return 0
    (c0, r0), others = (down[0], up) if len(down) == 1 else (up[0], down)
    if not _nonnegative(r0):
        return 0
    inner = [c0]
    for c, r in others:
        q = r / r0
        if q.as_numer_denom()[1] != 1:
            return 0
        inner.append(c * q)
    return _signs(sp.Add(*inner))


def _extreme(cls, args) -> sp.Expr:
    """``cls(*args)`` (``sp.Max`` or ``sp.Min``): nested ones flattened, repeats merged, an argument the
    others provably bound dropped."""
    flat = []
    for e in args:
        e = sp.sympify(e)
        flat.extend(e.args if isinstance(e, cls) else (e,))
    up = 1 if cls is sp.Max else -1
    kept: list = []
    expanded: dict = {}  # each argument expanded once, when a difference needs it

    def ex(e):
        if e not in expanded:
            expanded[e] = sp.expand(e)
        return expanded[e]

    for x in dict.fromkeys(flat):
        beaten = False
        for i, y in enumerate(kept):
            s = _sign(x - y, lambda: ex(x) - ex(y)) * up  # noqa: B023 (called at once)
            if s > 0:
                kept[i] = None
            elif s < 0:
                beaten = True
                break
        kept = [k for k in kept if k is not None]
        if not beaten:
            kept.append(x)
    return kept[0] if len(kept) == 1 else cls(*kept, evaluate=False)


def maximum(*args) -> sp.Expr:
    """``Max(*args)``, as SymPy writes it, without its pairwise search on large arguments.

    >>> from symllm.arch import symbols as S
    >>> maximum(S.b * S.s * S.V, 3 * S.b * S.s * S.d_ff, S.b * S.s * (S.d + 3 * S.d_ff), 0)
    Max(V*b*s, b*s*(d + 3*d_ff))
    >>> maximum(4, S.beta_a) == sp.Max(4, S.beta_a), maximum(S.d, 2 * S.d), maximum(3)
    (True, 2*d, 3)
    """
    return _extreme(sp.Max, args)


def minimum(*args) -> sp.Expr:
    """``Min(*args)``, as SymPy writes it, without its pairwise search on large arguments.

    >>> from symllm.arch import symbols as S
    >>> minimum(S.W, 1), minimum(S.W, S.n + S.s)
    (1, Min(W, n + s))
    """
    return _extreme(sp.Min, args)


def substitute(expr: sp.Expr, mapping: dict) -> sp.Expr:
    """``expr.subs(mapping)`` for symbols as keys, every ``Max`` and ``Min`` rebuilt by :func:`maximum` /
    :func:`minimum`; the keys are applied one after another in the order ``subs`` applies them.

    >>> from symllm.arch import symbols as S
    >>> substitute(sp.Max(S.d * S.s, S.V) + S.d, {S.d: 2 * S.d_h, S.V: S.d_h})
    2*d_h*s + 2*d_h
    >>> _ == (sp.Max(S.d * S.s, S.V) + S.d).subs({S.d: 2 * S.d_h, S.V: S.d_h})
    True
    """
    mapping = {sp.sympify(k): sp.sympify(v) for k, v in mapping.items()}
    out = sp.sympify(expr)
    if not all(k.is_Symbol for k in mapping):
        return out.subs(mapping)
    if not any(v.free_symbols & mapping.keys() for v in mapping.values()):  # one after another = all at once
        return _rebuild(out, mapping, {})
    for key in sorted(mapping, key=sp.default_sort_key):  # subs' order for keys of one node each
        out = _rebuild(out, {key: mapping[key]}, {})
    return out


def rename(expr: sp.Expr, mapping: dict) -> sp.Expr:
    """``expr.xreplace(mapping)`` for a one-to-one renaming of symbols (to symbols or dummies), a ``Max`` or
    ``Min`` rebuilt as it was: distinct arguments stay distinct, and a pair SymPy could order without the
    symbols' assumptions was ordered when the expression was built, so its pairwise search (what
    ``xreplace`` pays for every one rebuilt) has nothing to find.

    >>> from symllm.arch import symbols as S
    >>> x = sp.Dummy("d")
    >>> e = sp.Max(S.d * S.s, S.V) + S.d
    >>> rename(e, {S.d: x}) == e.xreplace({S.d: x})
    True
    """
    return _rebuild(sp.sympify(expr), mapping, {}, as_built=True)


def _rebuild(e: sp.Expr, mapping: dict, seen: dict, as_built: bool = False) -> sp.Expr:
    """``e`` with ``mapping``'s keys replaced, each node rebuilt once (``seen``) and only where an argument
    changed; a ``Max`` or ``Min`` by :func:`maximum` / :func:`minimum` (:func:`substitute`), or ``as_built``
    with its arguments as they come (:func:`rename`)."""
    if e in mapping:
        return mapping[e]
    if not e.args:
        return e
    hit = seen.get(e)
    if hit is not None:
        return hit
    args = [_rebuild(a, mapping, seen, as_built) for a in e.args]
    if all(a is b for a, b in zip(args, e.args)):
        out = e
    elif as_built and isinstance(e, (sp.Max, sp.Min)):
        out = e.func(*args, evaluate=False)
    elif isinstance(e, sp.Max):
        out = maximum(*args)
    elif isinstance(e, sp.Min):
        out = minimum(*args)
    else:
        out = e.func(*args)
    seen[e] = out
    return out


# --------------------------------------------------------------------------- factor and expand

def _masked(expr: sp.Expr, table: dict) -> sp.Expr:
    """``expr`` with each outermost ``Max`` / ``Min`` replaced by a ``Dummy``: the one of its rebuilt node (its
    arguments :func:`expanded`, then :func:`maximum` / :func:`minimum`), ``table`` mapping each rebuilt node
    to its dummy (one dummy per distinct node). ``sp.expand`` and ``sp.factor`` rebuild every ``Max`` from its
    arguments expanded, through SymPy's search; masked, they treat it as the atom it is in their result."""
    seen: dict = {}

    def walk(e):
        if not e.args:
            return e
        hit = seen.get(e)
        if hit is None:
            if isinstance(e, (sp.Max, sp.Min)):
                node = (maximum if isinstance(e, sp.Max) else minimum)(*(expanded(a) for a in e.args))
                if isinstance(node, (sp.Max, sp.Min)):
                    hit = table.setdefault(node, sp.Dummy("extreme"))
                else:  # one argument bounds the others: it stands in the sum as itself
                    hit = walk(node)
            else:
                args = [walk(a) for a in e.args]
                hit = e if all(a is b for a, b in zip(args, e.args)) else e.func(*args)
            seen[e] = hit
        return hit
    return walk(expr)


def _mask(expr: sp.Expr) -> tuple[sp.Expr, dict]:
    """``(masked, back)``: :func:`_masked` ``expr`` and the dummies' nodes (``masked.xreplace(back)`` unmasks)."""
    expr = sp.sympify(expr)
    if not expr.has(sp.Max, sp.Min):
        return expr, {}
    table: dict = {}
    masked = _masked(expr, table)
    return masked, {v: k for k, v in table.items()}


def expanded(expr: sp.Expr) -> sp.Expr:
    """``sp.expand(expr)``, each ``Max`` / ``Min`` rebuilt by :func:`maximum` / :func:`minimum` (SymPy's search
    on every one rebuilt was most of a report's ``expand``).

    >>> from symllm.arch import symbols as S
    >>> e = S.b * (S.s + 1) * sp.Max(S.d * (S.s + 1), S.V) + S.d * (S.n + 1)
    >>> expanded(e) == sp.expand(e)
    True
    """
    masked, back = _mask(expr)
    return sp.expand(masked).xreplace(back) if back else sp.expand(masked)


def factored(expr: sp.Expr) -> sp.Expr:
    """``sp.factor(expr)``, found another way. SymPy factors a multivariate polynomial by Wang's algorithm on
    a dense representation (seconds on a report's peak in twenty symbols). symllm's closed forms are linear in
    some symbol ``x``: ``p = a·x + b`` then factors as ``gcd(a, b)`` (free of ``x``, factored the same way)
    times ``p / gcd(a, b)``, which is irreducible (a factor free of ``x`` would divide both ``a`` and ``b``), so
    the factorisation is complete, and normalised as SymPy normalises its factors (primitive, positive leading
    coefficient in its generators' order) it is SymPy's own (unique factorisation). Gcds run on sparse
    polynomials. A polynomial of no such symbol, or over another domain than the integers, goes to
    ``sp.factor``.

    >>> from symllm.arch import symbols as S
    >>> factored(2 * S.d * S.d_h * S.n_h + 2 * S.d * S.d_h * S.n_kv)
    2*d*d_h*(n_h + n_kv)
    >>> e = S.b * S.s * (S.d + S.n_h * S.s) * sp.Max(S.V, S.d * S.s) / 2 + S.b * S.s * S.V * (S.d + S.n_h * S.s)
    >>> factored(e) == sp.factor(e)
    True
    """
    expr = sp.sympify(expr)
    masked, back = _mask(expr)
    whole = sp.together(masked)
    coeff, powers = sp.S.One, {}
    for arg in sp.Mul.make_args(whole.xreplace(back) if back else whole):
        if arg.is_Number:
            coeff *= arg
            continue
        base, exp = arg.as_base_exp() if arg.is_Pow else (arg, sp.S.One)
        if not exp.is_Integer:
            return sp.factor(expr)
        if base.is_Number:
            coeff *= arg
            continue
        try:
            poly = sp.Poly(base)
        except sp.PolynomialError:
            powers[base] = powers.get(base, 0) + exp
            continue
        if poly.domain != sp.ZZ:
            return sp.factor(expr)
        ring = sp.polys.rings.PolyRing(poly.gens, sp.ZZ, sp.polys.orderings.lex)
        content, prim = ring.from_dict(dict(poly.as_dict())).primitive()
        if prim.LC < 0:
            content, prim = -content, -prim
        factors = _factors(prim, ring)
        if factors is None:
            return sp.factor(expr)
        coeff *= sp.Integer(content) ** exp
        for f, k in factors:
            e = sp.Poly.from_dict(dict(f), *poly.gens, domain=sp.ZZ).as_expr()
            powers[e] = powers.get(e, 0) + k * exp
    return _keep_coeff(coeff, sp.Mul(*(e ** k for e, k in powers.items())))


def _factors(p, ring) -> list | None:
    """The irreducible factors ``(f, multiplicity)`` of a primitive sparse polynomial ``p`` with a positive
    leading coefficient, each primitive with one: its monomial content, symbol by symbol, then
    :func:`_split`; None when a part is linear in no symbol."""
    low = tuple(map(min, zip(*p.itermonoms())))
    out = [(x, k) for x, k in zip(ring.gens, low) if k]
    if any(low):
        p = ring.from_dict({tuple(a - b for a, b in zip(m, low)): c for m, c in p.items()})
    if p.is_ground:
        return out
    rest = _split(p, ring)
    return None if rest is None else out + rest


def _split(p, ring) -> list | None:
    """:func:`_factors` of ``p`` (no monomial content, not a number): ``p = a·x + b`` in the symbol ``x`` of
    degree one that the fewest terms hold (the smallest ``a``, the cheapest gcd), ``p / gcd(a, b)`` irreducible
    and ``gcd(a, b)`` factored again; None when ``p`` is linear in no symbol."""
    best = None
    for i, x in enumerate(ring.gens):
        if p.degree(x) == 1:
            n = sum(1 for m in p.itermonoms() if m[i])
            if best is None or n < best[0]:
                best = (n, x)
    if best is None:
        return None
    x = best[1]
    a = p.diff(x)
    g = a.gcd(p - a * x)
    if g.LC < 0:
        g = -g
    out = [(p.exquo(g), 1)]
    if not g.is_ground:
        rest = _factors(g, ring)
        if rest is None:
            return None
        out.extend(rest)
    return out
