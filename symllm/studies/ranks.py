"""Plan's ranking (:func:`symllm.studies.plans.plan`): its rows by the expected time a user plans with, the roofline
bound breaking ties and ranking the rows past the best.

A plan row carries its bound (training ``step_s``, serving ``tokens_per_s``: evaluated over every layout at once)
and, for its best :data:`EXPECTED_ROWS`, its expected times (:func:`expected`, ``workload()``'s ``time.expected`` at
the row's layout: :mod:`symllm.costs.efficiency`). Every expected time is at or above its bound (that module's
docstring), so the rows are read in the bound's order and each one's expected time evaluated until the next bound
is past the ``EXPECTED_ROWS``-th best expected time found: no row after it can rank among them, and the best rows
are those of the expected time exactly, with a few evaluations rather than one a layout (:func:`rank`).
"""
from __future__ import annotations

from symllm.costs.workloads import Workload

__all__ = ["EXPECTED_ROWS", "RANKED_BY", "expected", "rank"]

#: the best rows of a plan that carry expected times (``row["expected"]``: symllm.costs.efficiency), ranked by them
EXPECTED_ROWS = 10

#: what a plan of each kind ranks its rows by: (the expected figure, the bound's)
RANKED_BY = {True: ("training_step_s", "step_s"), False: ("tokens_per_s", "tokens_per_s")}

#: a bound past the best expected times by less than this (relative) is still evaluated: the two are computed
#: along different paths (floats over every layout, exact fractions at one), and may differ in the last digits
_ROUNDING = 1e-9


def expected(spc, work: Workload, row: dict, training: bool, evaluate) -> dict:
    """A plan row's expected times: ``workload()``'s at its layout (its ``time.expected``; a serving row's at the
    decode point ``work`` is then: :func:`symllm.studies.served.decode_point`), training with the row's
    micro-batches; the keys its table shows (with ``--tokens``, their ``training_s``, ``gpu_hours`` and ``cost``).
    ``evaluate``: ``work -> symllm.costs.phases.workload(spc, work)``.

    >>> from symllm.arch import resolved
    >>> from symllm.costs.phases import workload
    >>> spc = resolved.spec("llama3.1-8b")
    >>> row = {"tp": 2, "pp": 1, "dp": 1, "batch": 4}
    >>> e = expected(spc, Workload(gpu="h100-sxm", seq=1, context=1100), row, False, lambda w: workload(spc, w))
    >>> sorted(e), e["decode_token_s"] > 0
    (['decode_token_s', 'tokens_per_s'], True)
    """
    layout = {"tp": row["tp"], "pp": row["pp"], "dp": row["dp"], "ep": row.get("ep", 1), "batch": max(1, row["batch"])}
    if training:
        layout.update(sp=row["sp"], zero_stage=row["zero"], recompute=row["recompute"], micro_batches=row["accum"])
    e = evaluate(work.replace(**layout))["time"].get("expected") or {}  # (none: ranked by its bound)
    keys = (("training_step_s", "training_tokens_per_s_per_gpu", "mfu", "training_s", "gpu_hours", "cost")
            if training else ("decode_token_s", "tokens_per_s"))
    return {k: e[k] for k in keys if k in e}


def rank(rows: list, training: bool, expect, best: int = EXPECTED_ROWS) -> list:
    """``rows`` (in the bound's order, best first) ranked: the ``best`` rows of the best expected time first, each
    with its ``row["expected"]`` (``expect(row)``, :func:`expected`'s), by that time (training: step seconds, the
    least first; serving: tokens/s, the most first; ties: the bound's order; a row without that figure by its
    bound), then the others in the bound's order (no expected time). Exact: every expected time is at or above its
    bound, so once a row's bound is past the ``best``-th expected time found, none from it on can be faster (module
    docstring).

    >>> rows = [{"step_s": 1.0, "e": 3.0}, {"step_s": 1.5, "e": 1.6}, {"step_s": 2.0, "e": 2.1}, {"step_s": 4, "e": 5}]
    >>> seen = []
    >>> def expect(r):
    ...     seen.append(r["step_s"]); return {"training_step_s": r["e"]}
    >>> [r["step_s"] for r in rank(rows, True, expect, best=2)], seen  # 4 s is past the 2nd best, 2.1 s: not read
    ([1.5, 2.0, 1.0, 4], [1.0, 1.5, 2.0])
    """
    key, bound = RANKED_BY[training]
    sign = 1 if training else -1  # the least seconds, the most tokens/s
    if best < 1:
        return list(rows)
    timed = []  # (its expected figure signed: less is better, its bound's order, the row)
    for i, row in enumerate(rows):
        if len(timed) >= best and sign * row[bound] * (1 - sign * _ROUNDING) > sorted(timed)[best - 1][0]:
            break  # its bound, and every later row's, is past the best expected times: none of them ranks above
        row["expected"] = expect(row)
        timed.append((sign * row["expected"].get(key, row[bound]), i))  # no expected figure: its bound stands in
    ranked = sorted(timed)
    top = {i for _, i in ranked[:best]}
    for _, i in ranked[best:]:  # read, but not among the best: ranked by the bound, as every row past them
        del rows[i]["expected"]
    return [rows[i] for _, i in ranked[:best]] + [r for i, r in enumerate(rows) if i not in top]
