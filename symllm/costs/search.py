"""The numbers' half of :mod:`symllm.costs.inverse`, without SymPy: the largest integer whose peak fits, from a
function giving the peak at a point and the closed form's coefficients as numbers (exact: Fractions, integer
square roots, exact searches). :func:`symllm.costs.inverse.largest` runs it on evaluated closed forms; a count
read back from stored kernels (:mod:`symllm.studies.quick`) runs it on those.
"""
from __future__ import annotations

import math
from fractions import Fraction

from symllm.errors import SymllmError

__all__ = ["largest_of", "largest_numbers"]


def _floor_root(c0: Fraction, c1: Fraction, c2: Fraction, capacity: int) -> int | None:
    """The largest integer ``x`` with ``c0 + c1·x + c2·x² <= capacity`` (coefficients non-negative, not both
    c1 and c2 zero), exactly: integer square roots, then a step either way."""
    rest = capacity - c0
    if rest < 0:
        return -1
    if c2 == 0:
        if c1 <= 0:
            return None
        return math.floor(rest / c1)
    disc = c1 * c1 + 4 * c2 * rest  # a Fraction: its floor's integer square root, then exact steps
    guess = (math.isqrt(math.floor(disc)) - c1) / (2 * c2)
    x = max(-1, math.floor(guess))
    while x >= 0 and c0 + c1 * x + c2 * x * x > capacity:
        x -= 1
    while c0 + c1 * (x + 1) + c2 * (x + 1) ** 2 <= capacity:
        x += 1
    return x


def _search(fits, low: int) -> int:
    """The largest ``x >= low`` with ``fits(x)`` for a predicate that holds up to some ``x`` and fails past
    it; ``low - 1`` when ``fits(low)`` fails (exponential, then binary search)."""
    if not fits(low):
        return low - 1
    good, bad = low, max(2 * low, low + 1)
    while fits(bad):
        good, bad = bad, bad * 2
        if bad > 2 ** 64:
            raise SymllmError("memory: the peak does not grow with the batch or the context; no largest value")
    while bad - good > 1:  # fits(good), not fits(bad)
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    return good


def largest_of(peak, coefficients, capacity: int, low: int = 1) -> int:
    """:func:`symllm.costs.inverse.largest` from numbers, without SymPy: ``peak(x)`` is the expression at ``x``;
    ``coefficients`` is :func:`solution`'s, each ``(c0, c1, c2)`` a triple of functions giving the number (None: no
    closed form).
    What :func:`symllm.costs.inverse.largest` runs, and what a count read back from stored kernels runs
    (:mod:`symllm.studies.quick`).

    >>> largest_of(lambda b: 3 * b + 10, [[lambda: 10, lambda: 3, lambda: 0]], 100)
    30
    """
    def fits(value: int) -> bool:
        return Fraction(peak(value)) <= capacity

    if coefficients is not None:
        answer = None
        for cs in coefficients:
            try:
                c0, c1, c2 = (Fraction(c()) for c in cs)
            except (SymllmError, TypeError):  # a symbol unset: the search decides
                answer = None
                break
            if c1 < 0 or c2 < 0:  # not growing with x: no closed form here
                answer = None
                break
            root = _floor_root(c0, c1, c2, capacity)
            if root is None:
                answer = None
                break
            answer = root if answer is None else min(answer, root)
        if answer is not None:
            answer = max(low - 1, answer)
            if (answer < low or fits(answer)) and not fits(answer + 1):
                return answer
    guided = _secant(lambda value: Fraction(peak(value)), capacity, low)
    return guided if guided is not None else _search(fits, low)


def _secant(peak, capacity: int, low: int, tries: int = 8) -> int | None:
    """The largest ``x >= low`` with ``peak(x) <= capacity`` for a ``peak`` that grows with ``x``: guesses by
    secants through exact values (a ceiling's steps or a window's ``Min`` leave a peak nearly linear or
    quadratic: a few guesses where doubling and bisection take dozens), each kept inside the bracket of
    the largest value known to fit and the smallest known not to, then bisection of that bracket; ``low - 1``
    when ``low`` does not fit, ``None`` when no guess passed the answer (the search decides).

    >>> peak = lambda x: Fraction(3 * x + 10 + (x + 6) // 7)
    >>> _secant(peak, 1000, 1), peak(315), peak(316)   # 945 + 10 + 45 = 1000; 948 + 10 + 46 = 1004
    (315, Fraction(1000, 1), Fraction(1004, 1))
    >>> _secant(lambda x: Fraction(5), 10, 1) is None, _secant(peak, 13, 1)
    (True, 0)
    """
    a, pa = low, peak(low)
    if pa > capacity:
        return low - 1
    good, bad = low, None  # peak(good) <= capacity < peak(bad)
    b = low + 1
    pb = peak(b)
    for _ in range(tries):
        if pb <= capacity:
            good = max(good, b)
        else:
            bad = b if bad is None else min(bad, b)
        if bad is not None and bad - good <= 1:
            return good
        if pb <= pa:
            break
        guess = a + math.floor((capacity - pa) * (b - a) / (pb - pa))
        guess = max(good + 1, guess if bad is None else min(bad - 1, guess))
        if guess > 2 ** 64:
            break
        a, pa, b, pb = b, pb, guess, peak(guess)
    if bad is None:
        return None
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if peak(mid) <= capacity else (good, mid)
    return good


def largest_numbers(ev, capacity: int, gen: int = 0) -> dict:
    """:func:`symllm.costs.inverse.largest_fitting` from named numbers (``ev``: a
    :class:`symllm.numbers.runtime.Numbers` of ``memory_per_gpu.inference_peak``, ``memory_per_gpu.training_peak``
    and their ``solve.*`` coefficients,
    :func:`symllm.costs.inverse.solve_forms`): no SymPy."""
    def ask(kind: str, x: str) -> int:
        name = f"memory_per_gpu.{kind}"
        solved = []
        while f"solve.{kind}.{x}.{len(solved)}.0" in ev:
            j = len(solved)
            solved.append([(lambda c=f"solve.{kind}.{x}.{j}.{k}": ev(c)) for k in range(3)])
        return largest_of(lambda value: ev(name, **{x: value}), solved or None, capacity)

    prompt = ask("inference_peak", "s")
    return {"max_batch": ask("inference_peak", "b"),
            "max_context": prompt + gen if prompt >= 1 else 0,
            "training_max_batch": ask("training_peak", "b"),
            "training_max_seq": ask("training_peak", "s")}
