"""Integer-safe Python code of a closed form, which :mod:`symllm.numbers.kernels` compiles and caches:
``floor``/``ceiling`` of a rational as ``//`` on integers, a rational total as one exact division at the end,
a float64 bound on every intermediate value's magnitude (whether int64 is safe), and the exact text that
names an expression (:func:`fingerprint`, the kernel cache's key).

>>> from symllm.arch.symbols import d
>>> exact_code(sp.floor(sp.Rational(8, 3) * d))
'((8*d) // (3))'
"""
from __future__ import annotations

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from symllm.numbers.exact import common_fraction, float_valued

__all__ = ["fingerprint"]

class _IntegerSafePrinter(PythonCodePrinter):
    """Python code whose floor/ceiling of rationals are integer floor divisions."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Rational(self, expr):
        return f"_Fraction({expr.p}, {expr.q})"

    def _print_Half(self, expr):
        return self._print_Rational(expr)

    def _rounding(self, arg, ceil: bool):
        if float_valued(arg):  # IEEE sums depend on their order: SymPy's canonical one, as ever
            return f"_{'ceil' if ceil else 'floor'}({_IntegerSafePrinter().doprint(arg)})"
        num, den = common_fraction(arg)
        num, den = self._print(num), self._print(den)
        return f"(-((-({num})) // ({den})))" if ceil else f"(({num}) // ({den}))"

    def _print_floor(self, expr):
        return self._rounding(expr.args[0], ceil=False)

    def _print_ceiling(self, expr):
        return self._rounding(expr.args[0], ceil=True)

    def _print_Max(self, expr):
        return f"_max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr):
        return f"_min({', '.join(self._print(a) for a in expr.args)})"



class NoBound(Exception):
    """The expression has a node the magnitude bound does not cover (:func:`bound_code`).

    >>> bound_code(sp.sin(sp.Symbol("x")))
    Traceback (most recent call last):
    ...
    symllm.numbers.codegen.NoBound: sin
    """


def bound_code(e: sp.Expr) -> str:
    """Python code for an upper bound, in float64, of ``|v|`` for every intermediate value ``v`` the
    integer-safe code of ``e`` computes, given each symbol bound to its magnitude.

    Monotone in each input magnitude, and each node's bound is at least its children's (products
    take ``max(bound, 1)`` per factor, so no partial product escapes), so the bound at the inputs'
    largest magnitudes covers a whole array.

    >>> bound_code(2 * sp.Symbol("x") + 3)
    '(3.0 + (_max1(2.0)*_max1(x)))'
    """
    if e.is_Symbol:
        return e.name
    if e.is_Integer or e.is_Float:
        return repr(float(abs(e)))
    if e.is_Rational:
        return repr(float(max(abs(e.p), e.q)))
    if e.is_Add:
        return "(" + " + ".join(bound_code(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + "*".join(f"_max1({bound_code(a)})" for a in e.args) + ")"
    if e.is_Pow and e.exp.is_Integer and e.exp > 0:
        return f"_max1({bound_code(e.base)})**{int(e.exp)}"
    if isinstance(e, (sp.floor, sp.ceiling)):
        arg = e.args[0]
        if float_valued(arg):
            return f"({bound_code(arg)} + 1.0)"
        num, den = common_fraction(arg)
        return f"({bound_code(num)} + {bound_code(den)} + 1.0)"
    if isinstance(e, (sp.Max, sp.Min)):
        return "(" + " + ".join(bound_code(a) for a in e.args) + ")"
    raise NoBound(type(e).__name__)


def exact_code(expr: sp.Expr) -> str:
    """Integer-safe Python code of ``expr``: a rational total is one exact division at the end.

    >>> exact_code(sp.Symbol("x") / 3 + 1)
    '_exact_div(3 + x, 3)'
    """
    num, den = common_fraction(expr)
    # terms in the order they are held, not sorted (sorting was most of the printing): exact integer and
    # Fraction sums do not depend on the order, and a kernel's magnitude bound (bound_code) covers every
    # partial sum in any order; an expression with a float outside any rounding keeps SymPy's order
    printer = _IntegerSafePrinter() if float_valued(expr) else _IntegerSafePrinter({"order": "none"})
    return printer.doprint(num) if den == 1 else f"_exact_div({printer.doprint(num)}, {printer.doprint(den)})"


def fingerprint(expr: sp.Basic) -> str:
    """A text naming ``expr`` exactly (the kernel cache's key): each atom's ``srepr``, each other node its
    class and its arguments' texts, sorted where the order is no part of the value (a sum, a product, a max
    or min: an expression rebuilt unevaluated from a cache entry holds them in another order than one
    built evaluated). Two expressions share it only when they are the same up to that order. ``srepr``
    sorts terms by SymPy's printing order, which took a third of a kernel's build.

    >>> from symllm.arch import symbols as S
    >>> fingerprint(2 * S.d + S.V) == fingerprint(sp.Add(S.V, 2 * S.d, evaluate=False))
    True
    >>> fingerprint(S.d - S.V)
    "Add(Mul(Integer(-1),Symbol('V', integer=True, positive=True)),Symbol('d', integer=True, positive=True))"
    """
    memo: dict = {}
    unordered = (sp.Add, sp.Mul, sp.Max, sp.Min)

    def walk(e):
        hit = memo.get(id(e))
        if hit is None:
            if not e.args:
                text = sp.srepr(e)
            else:
                args = [walk(a) for a in e.args]
                text = f"{type(e).__name__}({','.join(sorted(args) if isinstance(e, unordered) else args)})"
            hit = memo[id(e)] = (e, text)  # e held: its id is not reused while the walk runs
        return hit[1]
    return walk(sp.sympify(expr))
