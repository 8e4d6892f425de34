"""A component's FLOPs in one phase (:mod:`symllm.costs.phases`' conventions): the forward, the prefill
(``t = 0``), one decode step (``s = 1`` at context ``t``), training, and the ``generation`` phase's ``n`` decode
steps after a prefill of ``s``, ``Σ_{t=s}^{s+n-1} step(t)``, summed in closed form.

>>> _decode_sum(2 * S.t)
n*(n + 2*s - 1)
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from symllm.arch import symbols as S
from symllm.arch.algebra import factored
from symllm.arch.components import Component, SlidingPairs, WindowPairs, expand_windows
from symllm.errors import SymllmError

__all__ = ["phase_flops"]  # the phases' helper: symllm.costs.phases is the public face


@lru_cache(maxsize=256)
def phase_flops(comp: Component, bucket: str, phase: str, recompute: bool | str) -> sp.Expr:
    """The closed-form ``bucket`` FLOPs (``matmul`` or ``elementwise``) of ``comp`` in ``phase`` (``forward``,
    ``prefill``, ``decode`` summed over the generated tokens, ...), ``recompute`` as
    :func:`symllm.costs.selective.policy` reads it; :func:`symllm.costs.phases.flops` is its face.

    >>> from symllm.arch.components import model
    >>> phase_flops(model().child("lm_head"), "matmul", "prefill", False)
    2*V*b*d*s_o
    """
    forward = comp.total("flops" if bucket == "matmul" else "elementwise")
    step = forward.subs({S.s: 1, S.s_o: 1})  # one decode step at context t: its one position's logits
    if phase == "forward":
        return expand_windows(forward)
    if phase == "prefill":
        return expand_windows(forward.subs(S.t, 0))
    if phase == "decode":
        return expand_windows(step)
    if phase == "generation":
        total = forward.subs(S.t, 0) + _decode_sum(step)
        if total.has(WindowPairs):  # the prefill's P(s) cancels the decode steps' -P(s): collect them
            terms = sp.collect(sp.expand(total), sorted(total.atoms(WindowPairs), key=sp.default_sort_key),
                               evaluate=False)
            total = sum((factored(c) * a for a, c in terms.items()), sp.S.Zero)
        return expand_windows(total)
    if bucket != "matmul":
        raise SymllmError("bucket: training FLOPs are counted for the matmul bucket only")
    # training: the loss reads every position's logits; a part that runs forward only (Rules.no_grad: DeepSeek
    # Sparse Attention's indexer, DeepSeek-V4's) runs its forward (again under recomputation) but no backward:
    # 2 passes fewer
    whole = forward.subs({S.t: 0, S.s_o: S.s})
    gradless = 2 * comp.gradless("flops").subs({S.t: 0, S.s_o: S.s})
    if recompute == "op":  # torchtitan's selective op checkpointing: three passes and the recomputed linears
        from symllm.costs.selective import recomputed_flops
        return expand_windows(3 * whole - gradless + recomputed_flops(comp))
    return expand_windows((4 if recompute else 3) * whole - gradless)


_i = sp.Dummy("i", integer=True, nonnegative=True)  # summation index over decode steps


def _first_difference(low: sp.Min) -> sp.Expr:
    """``Min(u, v)`` (``u`` the one with the context ``t``) as ``P(u) - P(u - 1)``, ``P`` the sum of
    ``min(j, v)`` over ``j ≤ x`` (:class:`SlidingPairs`): summed over decode steps, it telescopes."""
    (u,), v = [a for a in low.args if a.has(S.t)], [a for a in low.args if not a.has(S.t)]
    v = sp.Min(*v)
    return SlidingPairs(u, v) - SlidingPairs(u - 1, v)


def _decode_sum(step: sp.Expr) -> sp.Expr:
    """``Σ_{t=s}^{s+n-1} step(t)``: the ``n`` decode steps after a prefill of ``s``, in closed form.

    Polynomial terms are summed by SymPy; a window's pairs ``P(t + a)`` (and a ``Min`` over ``t``,
    rewritten as a first difference) telescope: ``Σ_t [P(t + a + 1) - P(t + a)] = P(s + n + a) - P(s + a)``.

    >>> _decode_sum(S.t + 1)
    n*(n + 2*s + 1)/2
    >>> expand_windows(_decode_sum(sp.Min(S.t + 1, S.W))).subs({S.s: 3, S.n: 6, S.W: 5})
    29
    >>> sum(min(t + 1, 5) for t in range(3, 3 + 6))
    29
    """
    step = sp.expand(step.replace(lambda e: isinstance(e, sp.Min) and e.has(S.t), _first_difference))
    windows = sorted((a for a in step.atoms(WindowPairs) if a.has(S.t)), key=sp.default_sort_key)
    rest = step.subs({a: 0 for a in windows})
    total = _summed_steps(sp.expand(rest))
    groups: dict = {}  # (class, window) -> {shift a of P(t + a): its coefficient}
    for a in windows:
        x, w = a.args
        shift, coeff = x - S.t, step.coeff(a)
        if not shift.is_Integer or coeff.has(S.t):
            raise SymllmError(f"generation: cannot sum {a} over decode steps")  # not produced by the components
        groups.setdefault((type(a), w), {})[int(shift)] = coeff
    for (pairs, w), coeffs in groups.items():
        carried = sp.S.Zero  # Σ_a c_a P(t+a) = Σ_a C_a [P(t+a+1) - P(t+a)], C_a = -Σ_{a' ≤ a} c_a'
        for a in range(min(coeffs), max(coeffs) + 1):
            carried -= coeffs.get(a, 0)
            total += carried * (pairs(S.s + S.n + a, w) - pairs(S.s + a, w))
        if carried != 0:
            raise SymllmError("generation: a window's pairs do not telescope over decode steps")
    return total


def _summed_steps(step: sp.Expr) -> sp.Expr:
    """``Σ_{t=s}^{s+n-1} step(t)`` for a polynomial ``step`` (expanded), as ``factor`` writes it.

    A step linear in ``t``, ``A + B·t`` with ``B`` one term, sums to ``n·(2A - B + 2B·s + B·n)/2``; the
    sum's only factors are ``n``, the terms' common monomial ``g`` (it divides ``B``, so it is the content
    of the part linear in ``s`` and ``n``) and that part divided by ``g`` (a primitive polynomial of degree
    one in ``s`` and ``n``: irreducible). Written so, it is the expression ``sp.factor`` gives (when every
    coefficient is positive: no sign to normalise) without factoring a polynomial of dozens of terms (most of
    a cold generation phase); any other step goes through SymPy's ``summation``, factored by
    :func:`~symllm.arch.algebra.factored` (``sp.factor``'s own form, found faster).

    >>> _summed_steps(2 * S.d * S.t + 4 * S.d)
    d*n*(n + 2*s + 3)
    >>> _ == sp.factor(sp.summation((2 * S.d * S.t + 4 * S.d).subs(S.t, S.s + _i), (_i, 0, S.n - 1)))
    True
    """
    slope = step.coeff(S.t)
    const = step.subs(S.t, 0)
    if sp.expand(const + slope * S.t) == step and slope != 0:
        part = sp.expand(2 * const - slope + 2 * slope * S.s + slope * S.n)
        terms = sp.Add.make_args(part)
        if all(t.as_coeff_Mul()[0].is_Integer for t in terms):
            if len(sp.Add.make_args(slope)) == 1:
                common = _monomial_gcd(terms)
                rest = sp.Add(*(t / common for t in terms))
            else:
                common = sp.factor(sp.gcd(sp.expand(2 * const - slope), slope))  # a factor of the (short) slope
                rest = sp.expand(sp.quo(part, common))
            sign = -1 if sp.Poly(rest).LC() < 0 else 1  # factor's normal form: a positive leading coefficient
            return sp.Mul(S.n, sp.Rational(sign, 2), common, sign * rest)
    return factored(sp.summation(sp.expand(step.subs(S.t, S.s + _i)), (_i, 0, S.n - 1)))


def _monomial_gcd(terms) -> sp.Expr:
    """The greatest common divisor of ``terms`` (integer coefficients times products of powers): the
    coefficients' gcd times each base to its least power.

    >>> _monomial_gcd((6 * S.d ** 2 * S.L, 4 * S.d * S.L * S.s, 2 * S.d * S.L))
    2*L*d
    """
    powers = [t.as_powers_dict() for t in terms]
    coeffs = [t.as_coeff_Mul()[0] for t in terms]
    common = {b for b in powers[0] if not b.is_Number}
    for p in powers[1:]:
        common &= {b for b in p if not b.is_Number}
    return sp.Mul(sp.igcd(*coeffs), *(b ** min(p[b] for p in powers) for b in sorted(common, key=sp.default_sort_key)))
