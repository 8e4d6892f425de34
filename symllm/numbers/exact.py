"""Exact numbers from closed forms, SymPy's own way, and the algebra the compiled kernels are printed from.

* :func:`sympy_value`: an expression's value at a point by SymPy itself (``xreplace``): slow, exact, the
  ground truth :mod:`symllm.numbers.kernels`' compiled kernels are held equal to.
* :func:`float_symbol` marks a symbol whose values are IEEE doubles (Meta's ``ffn_dim_multiplier``): a
  rounding of a product holding one truncates a double, in SymPy (a 53-bit ``Float``) as in a kernel.
* :func:`over_common_denominator`: expressions written over one denominator, so that a kernel makes one exact
  division at the end.

>>> from symllm.arch.symbols import d
>>> sympy_value(sp.ceiling(sp.Rational(8, 3) * d), {d: 4096})
10923
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symllm.errors import SymllmError

__all__ = ["sympy_value", "float_symbol", "over_common_denominator", "FLOAT_SYMBOLS"]

#: the symbols whose values are IEEE doubles, each declared by :func:`float_symbol` where it is created (Meta's
#: ``ffn_dim_multiplier``, :data:`symllm.arch.symbols.f`): a rounding of a product holding one truncates a double
FLOAT_SYMBOLS: set = set()


def float_symbol(name: str, **assumptions) -> sp.Symbol:
    """A SymPy symbol whose values are Python floats, as ``sp.Symbol(name, **assumptions)`` (the same
    symbol), recorded in :data:`FLOAT_SYMBOLS` so that the kernels round a product holding it as an IEEE
    double product (the kernels sit below the model's symbols and name none).

    >>> x = float_symbol("x_example", positive=True)
    >>> x == sp.Symbol("x_example", positive=True), x in FLOAT_SYMBOLS
    (True, True)
    """
    symbol = sp.Symbol(name, **assumptions)
    FLOAT_SYMBOLS.add(symbol)
    return symbol


def _sympify_value(value):
    if isinstance(value, float):
        return sp.Float(value, 53)  # exactly the double, rounding like one
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    return sp.sympify(value)


def _to_python(value: sp.Expr):
    if value.is_Integer:
        return int(value)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    if value.is_Float:
        return float(value)
    raise SymllmError(f"evaluate: symbols left unset: {', '.join(sorted(map(str, value.free_symbols)))}")


def sympy_value(expr: sp.Expr, vals: dict) -> int | Fraction | float:
    """The number ``expr`` is at ``vals``, evaluated by SymPy itself: exact, slow, the reference for
    :func:`compile_expr` (:func:`symllm.arch.algebra.substitute` replaces symbols and returns an expression).

    A float value (Meta's ``ffn_dim_multiplier``) times an integer is one IEEE double product, as in
    Meta's ``int(ffn_dim_multiplier * hidden_dim)``: SymPy's own ``Float * Integer`` keeps extra bits
    (``Float(1.9) * 80`` is 151.99999999999999, the double product is 152.0), so those products are
    formed in Python before SymPy sees them.

    >>> from symllm.arch import symbols as S
    >>> sympy_value(S.d * (S.d + 1) / 2, {S.d: 3})
    6
    >>> sympy_value(sp.floor(S.f * S.d), {S.f: 1.9, S.d: 80})
    152
    """
    floats = {k: v for k, v in vals.items() if isinstance(v, float)}
    out = sp.sympify(expr).xreplace({k: _sympify_value(v) for k, v in vals.items() if k not in floats})
    for sym, value in floats.items():
        out = out.replace(
            lambda e: e.is_Mul and sym in e.args and (e / sym).is_Integer,
            lambda e: sp.Float(value * int(e / sym), 53))  # noqa: B023 (used at once)
        out = out.xreplace({sym: _sympify_value(value)})
    return _to_python(out)


def float_valued(arg: sp.Expr) -> bool:
    """Whether ``arg`` has a float (a :data:`FLOAT_SYMBOLS` symbol, ``f``, or a ``Float``) outside any inner
    floor/ceiling, so its rounding must truncate an IEEE double; otherwise it is rational and rounds as integers (a walk
    that rebuilds nothing: substituting the inner roundings re-evaluated every Max and Min around them).

    >>> from symllm.arch import symbols as S
    >>> float_valued(sp.floor(S.f * S.d) + S.d), float_valued(S.f * sp.floor(S.d / 3))
    (False, True)
    """
    todo = [arg]
    while todo:
        e = todo.pop()
        if isinstance(e, (sp.floor, sp.ceiling)):
            continue
        if e.is_Float or e in FLOAT_SYMBOLS:
            return True
        todo.extend(e.args)
    return False


@lru_cache(maxsize=4096)
def common_fraction(arg: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """Numerator and denominator of ``arg`` over one common denominator (cached: a rounding's code and
    its magnitude bound ask for the same one).

    >>> common_fraction(sp.Symbol("x") / 2 + sp.Rational(1, 3))
    (3*x + 2, 6)
    """
    (num,), den = over_common_denominator((arg,))
    return num, den


def over_common_denominator(exprs, expand: bool = False) -> tuple[list, sp.Expr]:
    """``(numerators, denominator)``: ``exprs`` over one positive common denominator, no division left in a
    numerator outside a function's argument (a ``ceiling`` keeps its own), the numerators expanded where
    ``expand`` is set or the denominator is not a number. Where every denominator is an integer or a power of a
    symbol (``N_d``, ``N_e``, ``d_h``: all that symllm's formulas divide by), one walk of the trees finds it
    and the terms it divides are cancelled; otherwise SymPy's ``together`` (much slower on a large model's
    byte counts).

    >>> from symllm.arch import symbols as S
    >>> over_common_denominator([S.d / S.N_d + 1, 2 * S.d / S.N_d])
    ([N_d + d, 2*d], N_d)
    >>> over_common_denominator([S.d * (S.L / S.N_d + 1) / S.d_h ** 2])   # d·L/N_d + d over d_h²: N_d·d_h²
    ([L*d + N_d*d], N_d*d_h**2)
    """
    exprs = [sp.sympify(e) for e in exprs]
    den = _denominator(exprs)
    if den == 1:
        return [sp.expand(e) for e in exprs] if expand else exprs, sp.S.One
    if den is not None and den.is_Integer and not expand:  # a number multiplies through without expanding
        nums = [den * e for e in exprs]  # (n·(...)/2 times 2 is n·(...): expanding it was most of a kernel's build)
        if _denominator(nums) == 1:
            return nums, den
    if den is not None:
        nums = [sp.expand(den * e) for e in exprs]
        if _denominator(nums) == 1:
            common = _common_factor(nums, den)  # what every term still holds of den (a division that cancels)
            if common != 1:
                nums, den = [sp.expand(n / common) for n in nums], den / common
            return nums, den
    parts = [sp.fraction(sp.together(e)) for e in exprs]
    den = sp.lcm([q for _, q in parts]) if len(parts) > 1 else parts[0][1]
    nums = [p * sp.cancel(den / q) for p, q in parts]
    return ([sp.expand(n) for n in nums] if expand else nums), den


def _common_factor(polys, den: sp.Expr) -> sp.Expr:
    """The largest factor of ``den`` (an integer times powers of symbols) that divides every term of the
    expanded ``polys``.

    >>> from symllm.arch import symbols as S
    >>> _common_factor([2 * S.d * S.N_d ** 2 + 4 * S.N_d * S.L], 4 * S.N_d ** 2)
    2*N_d
    """
    number, powers = den.as_coeff_Mul()
    out = sp.Integer(sp.igcd(int(number), *(int(t.as_coeff_Mul()[0]) for p in polys for t in sp.Add.make_args(p))))
    for base, k in (b.as_base_exp() for b in sp.Mul.make_args(powers)):
        have = min(sp.sympify(t.as_powers_dict().get(base, 0)) for p in polys for t in sp.Add.make_args(p))
        if have.is_Integer and have > 0:
            out *= base ** min(int(have), int(k))
    return out


def _denominator(exprs) -> sp.Expr | None:
    """The least common denominator of ``exprs`` outside any function (a ``ceiling``'s own division stays
    inside it) when every denominator there is a power of a symbol or an integer (as the parallel layout's
    ``N_d``, ``N_e`` are): one walk of the trees, where ``together`` would rebuild them; None otherwise.

    >>> from symllm.arch import symbols as S
    >>> _denominator([S.d / S.N_d + sp.Rational(1, 2), sp.ceiling(S.d / S.N_t) / S.N_d ** 2])
    2*N_d**2
    """
    powers: dict = {}
    number = 1
    stack = [sp.sympify(e) for e in exprs]
    while stack:
        e = stack.pop()
        if e.is_Rational:
            number = sp.ilcm(number, e.q)
        elif e.is_Pow and e.exp.is_Integer and e.exp < 0:
            if not e.base.is_Symbol:
                return None
            powers[e.base] = max(powers.get(e.base, 0), -int(e.exp))
        elif e.is_Add or e.is_Mul:
            stack.extend(e.args)
        elif e.is_Pow and not e.exp.is_Integer:
            return None
        elif e.is_Pow:
            stack.append(e.base)
    return sp.Mul(number, *(b ** k for b, k in powers.items()))
