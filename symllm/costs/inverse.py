"""Inverse questions: the largest batch, the largest context and the fewest GPUs that fit an accelerator.

A per-GPU peak (:func:`symllm.costs.phases.quantities`' ``memory_per_gpu``) is, for the fused and eager
stacks and the HF stacks, a sum of polynomials in the batch ``b`` and the prompt ``s`` and of ``Max``es of
such polynomials. Every coefficient is a count of bytes, so each polynomial grows with its variable, and
``peak(x) <= M`` holds exactly when every candidate of the ``Max`` (:func:`candidates`: the sums of one
argument of each ``Max``) stays within ``M``. Each candidate of degree 1 or 2 in ``x`` is solved for
``p(x) = M`` in closed form, once per expression (:func:`solution`, cached: one per model structure and
workload shape); the answer is the floor of the smallest root, evaluated at the config's numbers and
then checked exactly: the peak at the answer fits, at the answer + 1 it does not (:func:`largest` moves it
by one where a square root's float rounding put it one off). Where no closed form exists (a window's
``Min``, a ceiling of ``s/N_t`` under sequence parallelism, a degree above 2) :func:`largest` searches
the integers exactly instead (secants through exact values, each guess kept inside the bracket of what
fits and what does not, then bisection; doubling where no guess passes the answer), the same predicate
deciding.

>>> largest(S.b * 3 + 10, S.b, {}, 100)   # 3b + 10 <= 100
30
>>> sol = closed_form(S.beta_w * S.N + sp.Max(S.b * S.s * S.V, 3 * S.b * S.s * S.d_ff), S.b)
>>> sol == sp.floor(sp.Min((M_gpu - S.N * S.beta_w) / (S.V * S.s), (M_gpu - S.N * S.beta_w) / (3 * S.d_ff * S.s)))
True
"""
from __future__ import annotations

import itertools
from functools import lru_cache

import sympy as sp

from symllm.arch import symbols as S
from symllm.numbers.kernels import evaluate
from symllm.costs.search import largest_numbers, largest_of  # (the numbers' half)

__all__ = ["M_gpu", "candidates", "solution", "closed_form", "largest", "LAYOUT_RANKS", "solve_forms",
           "largest_fitting"]

#: the accelerator's memory, bytes (what :func:`solution` solves the peak against)
M_gpu = sp.Symbol("M_gpu", positive=True)
#: the ranks a layout family may grow (:func:`symllm.studies.plans.fewest_gpus`)
LAYOUT_RANKS = ("tp", "pp", "dp")
#: the most distributed terms :func:`candidates` expands a product of Maxes into
_MAX_CANDIDATES = 256


def candidates(expr: sp.Expr, x: sp.Symbol) -> list[sp.Expr] | None:
    """Expressions whose largest is ``expr`` wherever every term is non-negative (byte counts): a ``Max``
    holding ``x`` becomes its arguments, a sum of them every sum of one argument each. None where ``x``
    sits in anything else than sums, products and powers (a ceiling, a ``Min``), or there are too many.

    >>> candidates(S.b + sp.Max(S.b * S.s, 2 * S.b), S.b) == [3 * S.b, S.b * S.s + S.b]
    True
    >>> candidates(sp.ceiling(S.b / 2), S.b) is None
    True
    """
    out = _candidates(expr, x)
    return None if out is None else sorted((sp.expand(c) for c in out), key=sp.default_sort_key)


def _candidates(e, x):
    if not e.has(x):
        return [e]
    if e == x:
        return [e]
    if isinstance(e, sp.Max):
        out = []
        for a in e.args:
            got = _candidates(a, x)
            if got is None:
                return None
            out.extend(got)
        return out if len(out) <= _MAX_CANDIDATES else None
    if isinstance(e, (sp.Add, sp.Mul)):
        parts = [_candidates(a, x) for a in e.args]
        if any(p is None for p in parts):
            return None
        if sp.prod(len(p) for p in parts) > _MAX_CANDIDATES:
            return None
        op = sp.Add if isinstance(e, sp.Add) else sp.Mul
        return [op(*combo) for combo in itertools.product(*parts)]
    if isinstance(e, sp.Pow) and e.exp.is_Integer and e.exp > 0:
        base = _candidates(e.base, x)
        return None if base is None or len(base) > 1 else [base[0] ** e.exp]
    return None


def _coefficients(p: sp.Expr, x: sp.Symbol) -> tuple | None:
    """``(c0, c1, c2)`` with ``p = c0 + c1·x + c2·x²``, none of them holding ``x``; None for any other ``p``."""
    p = sp.expand(p)
    cs = tuple(p.coeff(x, k) for k in range(3))
    if any(c.has(x) for c in cs) or sp.expand(p - cs[0] - cs[1] * x - cs[2] * x ** 2) != 0:
        return None
    return cs


@lru_cache(maxsize=256)
def solution(expr: sp.Expr, x: sp.Symbol) -> tuple | None:
    """The largest ``x`` with ``expr <= M_gpu`` in closed form (module docstring), as the coefficients
    ``(c0, c1, c2)`` of each candidate holding ``x`` (:func:`candidates`): the answer is the floor of the
    smallest root of ``c0 + c1·x + c2·x² = M_gpu`` (:func:`closed_form` writes it out). None where there is
    no closed form (a ceiling or a ``Min`` of ``x``, a degree above 2). Cached per expression.

    >>> solution(S.b ** 2 * S.s + S.N, S.b)
    ((N, 0, s),)
    >>> solution(sp.Min(S.s, S.W) * S.b, S.s) is None
    True
    """
    cands = candidates(expr, x)
    if cands is None:
        return None
    out = []
    for c in cands:
        if not c.has(x):
            continue  # a candidate without x: the exact check decides whether anything fits
        cs = _coefficients(c, x)
        if cs is None:
            return None
        out.append(cs)
    return tuple(out) or None


def closed_form(expr: sp.Expr, x: sp.Symbol) -> sp.Expr | None:
    """:func:`solution` written out: ``floor(Min(roots))`` in the model's and workload's symbols and
    ``M_gpu``.

    >>> closed_form(S.b * S.s * S.V + S.N, S.b) == sp.floor((M_gpu - S.N) / (S.V * S.s))
    True
    """
    sol = solution(expr, x)
    if sol is None:
        return None
    roots = [(M_gpu - c0) / c1 if c2 == 0 else (-c1 + sp.sqrt(c1 ** 2 + 4 * c2 * (M_gpu - c0))) / (2 * c2)
             for c0, c1, c2 in sol]
    return sp.floor(sp.Min(*roots))


def largest(expr: sp.Expr, x: sp.Symbol, vals: dict, capacity: int, low: int = 1) -> int:
    """The largest ``x >= low`` (an integer) with ``expr`` at ``vals`` (``x`` put in) ``<= capacity``;
    ``low - 1`` when not even ``low`` fits. The closed form of :func:`solution` where one exists, checked
    exactly at the answer and the answer + 1; otherwise an exact search.

    >>> largest(S.b ** 2 + 1, S.b, {}, 101), largest(S.b ** 2 + 1, S.b, {}, 1)
    (10, 0)
    """
    at = dict(vals)
    at.pop(x, None)  # by hash (comparing every key with != walked SymPy's __eq__)
    sol = solution(expr, x)
    coefficients = None if sol is None else [[(lambda c=c: evaluate(c, at)) for c in cs] for cs in sol]
    return largest_of(lambda value: evaluate(expr, {**at, x: value}), coefficients, capacity, low)


def solve_forms(per_gpu: dict) -> dict:
    """The closed-form coefficients of each inverse question of a layout (:func:`solution` of the per-GPU
    ``inference_peak`` and ``training_peak`` in ``b`` and in ``s``), by name: ``solve.inference_peak.b.0.1`` is
    the first candidate's ``c1``. What :func:`symllm.costs.search.largest_numbers` reads.

    >>> f = solve_forms({"inference_peak": 3 * S.b + 10, "training_peak": S.b * S.s})
    >>> f["solve.inference_peak.b.0.0"], f["solve.inference_peak.b.0.1"], "solve.inference_peak.s.0.0" in f
    (10, 3, False)
    """
    forms = {}
    for kind in ("inference_peak", "training_peak"):
        for x in (S.b, S.s):
            for j, cs in enumerate(solution(per_gpu[kind], x) or ()):
                forms.update({f"solve.{kind}.{x.name}.{j}.{k}": c for k, c in enumerate(cs)})
    return forms


def largest_fitting(per_gpu: dict, vals: dict, capacity: int, gen: int = 0) -> dict:
    """The inverse questions of one layout on one accelerator (:mod:`symllm.costs.inverse`: closed form
    where one exists, checked exactly): ``max_batch`` (the largest ``b`` whose per-GPU inference peak fits;
    0: not one sequence), ``max_context`` (the largest ``s + n`` whose inference peak fits at the workload's
    batch, the ``n`` generated tokens held; 0: none), ``training_max_batch`` and ``training_max_seq`` (the
    training peak's, at the workload's sequence length and batch). ``per_gpu`` is
    :func:`symllm.costs.phases.quantities`' ``memory_per_gpu``.

    >>> from symllm.costs.phases import workload
    >>> t = workload("llama3.1-8b", gpu="h100-sxm", seq=8192)["time"]
    >>> t["max_batch"], t["max_context"], t["training_max_batch"], t["training_max_seq"]
    (36, 299131, 0, 0)
    """
    from symllm.numbers.kernels import evaluated

    forms = {f"memory_per_gpu.{k}": per_gpu[k] for k in ("inference_peak", "training_peak")}
    return largest_numbers(evaluated({**forms, **solve_forms(per_gpu)}, vals), capacity, gen)
