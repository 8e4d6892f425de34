"""Plan's ranking (:func:`symllm.studies.plans.plan`): its rows by the expected time a user plans with, the roofline
bound breaking ties and ranking the rows past the best.

A plan row carries its bound (training ``step_s``, serving ``tokens_per_s``: evaluated over every layout at once)
and, for its best :data:`EXPECTED_ROWS`, its expected times (:func:`expected`, ``workload()``'s ``time.expected`` at
the row's layout: :mod:`symllm.costs.efficiency`). Every expected time is at or above its bound (that module's
docstring), so the rows are read in the bound's order and each one's expected time evaluated until the next bound
is past the ``EXPECTED_ROWS``-th best expected time found: no row after it can rank among them, and the best rows
are those of the expected time exactly, with a few evaluations rather than one a layout (:func:`rank`). A training
row whose :func:`floors` (a lower bound of its expected step from the closed forms plan evaluates over every layout)
is past them already is passed over unread: its expected time cannot rank among them either.
"""
from __future__ import annotations

import heapq
from fractions import Fraction

import numpy as np

from symllm.costs.workloads import Workload

__all__ = ["EXPECTED_ROWS", "LAYOUT", "RANKED_BY", "expected", "floors", "layout_of", "rank"]

#: the best rows of a plan that carry expected times (``row["expected"]``: symllm.costs.efficiency), ranked by them
EXPECTED_ROWS = 10

#: what a plan of each kind ranks its rows by: (the expected figure, the bound's)
RANKED_BY = {True: ("training_step_s", "step_s"), False: ("tokens_per_s", "tokens_per_s")}

#: what lays a plan row out, its batch and micro-batches aside (a plan shows each layout once: :func:`rank`), by kind;
#: serving's the ranks of a replica (its ``dp`` replicas each hold their own cache: :mod:`symllm.studies.served`)
LAYOUT = {True: ("tp", "pp", "dp", "ep", "sp", "zero", "recompute"), False: ("tp", "pp", "dp", "ep")}


def layout_of(row: dict, training: bool) -> tuple:
    """A plan row's layout (:data:`LAYOUT`), the key its batches fold under.

    >>> layout_of({"tp": 2, "pp": 1, "dp": 4, "ep": 1, "batch": 169}, False)
    (2, 1, 4, 1)
    """
    return tuple(row[k] for k in LAYOUT[training])


#: a bound past the best expected times by less than this (relative) is still evaluated: the two are computed
#: along different paths (floats over every layout, exact fractions at one), and may differ in the last digits
_ROUNDING = 1e-9


def expected(spc, work: Workload, row: dict, training: bool, evaluate) -> dict:
    """A plan row's expected times: ``workload()``'s at its layout (its ``time.expected``; a serving row's at the
    decode point ``work`` is then: :func:`symllm.studies.served.decode_point`), training with the row's
    micro-batches; the keys its table shows (with ``--tokens``, their ``training_s``, ``gpu_hours`` and ``cost``;
    under a TP overlap what of a block it covers, ``tp_overlap``, which :func:`symllm.studies.plans.plan` lifts
    into :attr:`symllm.studies.plans.Plan.tp_overlap`).
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
    keys = (("training_step_s", "training_tokens_per_s_per_gpu", "mfu", "training_s", "gpu_hours", "cost",
             "tp_overlap") if training else ("decode_token_s", "tokens_per_s"))
    return {k: e[k] for k in keys if e.get(k) is not None}  # (a figure not answered: ranked by its bound)


def floors(work: Workload, runs, flops, stages, rows, ep, values: dict, kept: dict | None = None) -> np.ndarray:
    """A lower bound of each training row's expected step (:func:`symllm.costs.efficiency.expected`), over plan's
    rows at once (floats): ``runs`` (its micro-batches' runs through the pipeline, ``m·(1 + bubble)``) times the
    least its busiest stage's GEMMs take, ``(F - E - C) / (η_large·f·P) + E / (η(M·k/n_e)·f·P)``: ``flops`` ``F``
    its training FLOPs; ``stages``, each stage's ``(core, experts, active, params, moe_layers)`` arrays, ``C`` the
    largest core (attention runs its own kernels, of no negative time), ``E`` the routed experts' FLOPs of the
    stage expected reads them from (the least of the stages' bounds is kept), at the GEMM efficiency of their
    ``rows · active / params`` token rows (in a MoE layer their grouped GEMMs' at their widths, as expected reads
    them: :func:`symllm.costs.efficiency.grouped_gemm`); ``η_large`` :func:`symllm.costs.efficiency.gemm` at 16,384
    rows, ``f`` :func:`symllm.costs.efficiency.step_factor`, ``P`` the peak (``values``: plan's numbers by name).
    A MoE layer's experts add its permutations' and router's passes (:func:`symllm.costs.moe_training.moe_training_s`
    without its all-to-alls); under an engine that syncs its dropless MoE layers over ``ep > 1`` ranks, they take at
    least the layers' floor and the micro-batch at least the host's launches (:mod:`symllm.costs.moe_training`).
    Every other term of the expected step (collectives, hand-offs, exposed data-parallel traffic, the optimizer's
    passes, the attention core) is non-negative. ``work``: the rows' recomputation among the plan's workload; zeros
    (no bound) under ``--compute-dtype fp8`` (its bf16 GEMMs at their own peak) and op checkpointing. ``kept``: what
    it read of efficiency.json by the rows' shapes, kept between calls (one plan's).

    >>> from symllm.costs.workloads import Workload
    >>> one = np.array([1.0]); dense = [(one * 0, one * 0, one * 0, one * 0, one * 0)]   # no core, no experts
    >>> values = {"P": 989 * 10 ** 12, "B_mem": 335 * 10 ** 10, "d": 4096}
    >>> low = floors(Workload(gpu="h100-sxm"), one, one * 989e12, dense, one * 4096, one, values)  # 1 s at the peak
    >>> round(float(low[0]), 3)   # 1 / (η_large 0.711 x f 0.740)
    1.9
    """
    from symllm.costs import efficiency
    from symllm.costs.accelerators import gpu
    from symllm.costs.figures import engine_for
    from symllm.costs.moe_training import moe_host_launch_s, moe_layer_floor_s, moe_training_s
    dtype = work.matmul_dtype
    if dtype == "fp8" or work.recompute == "op":
        return np.zeros(len(runs))
    rated = efficiency.card(work, own_peak=True)
    peak = values["P"]
    rate = float(efficiency.step_factor(work, values.get("d"), gpu(rated).bf16 if rated else None, peak,
                                        values["B_mem"]) * peak)
    large = float(efficiency.gemm(dtype, 16384, rated))
    core = np.max([st[0] for st in stages], axis=0)
    layers = np.max([st[4] for st in stages], axis=0).astype(np.int64)
    moe = (layers > 0) & all(x in values for x in ("d", "d_ff", "n_e", "k", "beta_a"))  # expected's MoE terms
    synced = moe & (ep > 1) & bool(engine_for(work.engine, "training").get("moe_host_syncs"))
    kept = {} if kept is None else kept

    def host(a: int, e: int) -> tuple:  # a micro-batch's synced MoE layers: their floor, the host's launches
        if ("host", a, e) not in kept:
            kept["host", a, e] = tuple(float(f(moe_layers=a, n_e=values["n_e"], ep=e, fp8=False))
                                       for f in (moe_layer_floor_s, moe_host_launch_s))
        return kept["host", a, e]

    def eta(m, grouped: bool) -> float:  # the experts' GEMMs of m rows: grouped at their widths in a MoE layer
        if ("eta", m, grouped) not in kept:
            kept["eta", m, grouped] = float(efficiency.grouped_gemm(
                dtype, m, (values["d"], values["d_ff"], m), Fraction(peak, values["B_mem"]), rated) if grouped
                else efficiency.gemm(dtype, m, rated))
        return kept["eta", m, grouped]
    named = efficiency.card(work)
    rate_mem = efficiency.stream(kind=efficiency.memory_kind(named) if named else None) * values["B_mem"]

    def passes(a: int, r: int) -> float:  # a micro-batch's MoE layers' permutations and router (no all-to-all)
        if ("passes", a, r) not in kept:
            kept["passes", a, r] = float(sum(moe_training_s(
                layers=a, rows=r, k=values["k"], d=values["d"], n_e=values["n_e"], act_bytes=values["beta_a"],
                rate=rate_mem, recompute=work.recompute == "full").values()))
        return kept["passes", a, r]
    floor, launch = np.array([host(a, e) if s else (0.0, 0.0) for a, e, s in zip(
        layers.tolist(), ep.tolist(), synced.tolist())]).reshape(-1, 2).T
    least = None
    for _, experts, active, params, _ in stages:
        m = rows * np.where(params > 0, active / np.where(params > 0, params, 1), 1.0)
        grouped = (moe & (experts > 0)).tolist()
        routed = experts / (np.array([eta(x, g) for x, g in zip(m.tolist(), grouped)]) * rate) + np.array(
            [passes(a, r) if g else 0.0 for a, r, g in zip(layers.tolist(), rows.tolist(), grouped)])
        routed = np.where(synced & (experts > 0), np.maximum(routed, floor), routed)
        low = np.maximum((flops - experts - core) / (large * rate) + routed, np.where(synced, launch, 0.0))
        least = low if least is None else np.minimum(least, low)
    return runs * least


def rank(rows: list, training: bool, expect, best: int = EXPECTED_ROWS, floor=None, layout=None) -> list:
    """``rows`` (in the bound's order, best first) ranked, one row a layout (``layout(row)``, its key: a row with each
    of its batches or micro-batch splits; None: each row its own): the ``best`` layouts of the best expected time
    first, each as its best row (the best expected time among its rows) with its ``row["expected"]``
    (``expect(row)``, :func:`expected`'s), by that time (training: step seconds, the least first; serving: tokens/s,
    the most first; ties: the bound's order; a row without that figure by its bound), then the other layouts in the
    bound's order, each as its best row by the bound (no expected time); the other rows of a layout folded into it.
    Exact: every expected time is at or above its bound, so once a row's bound is past the ``best``-th layout's
    expected time found, none from it on can be faster (module docstring), and a row whose bound is past its own
    layout's best expected time found cannot be that layout's best (not read); ``floor(row)``, training only: a
    lower bound of the row's expected step (:func:`floors`; at most its bound where it has no expected figure): the
    rows are read by the larger of the two instead, until it is past that time.

    >>> rows = [{"step_s": 1.0, "e": 3.0}, {"step_s": 1.5, "e": 1.6}, {"step_s": 2.0, "e": 2.1}, {"step_s": 4, "e": 5}]
    >>> seen = []
    >>> def expect(r):
    ...     seen.append(r["step_s"]); return {"training_step_s": r["e"]}
    >>> [r["step_s"] for r in rank(rows, True, expect, best=2)], seen  # 4 s is past the 2nd best, 2.1 s: not read
    ([1.5, 2.0, 1.0, 4], [1.0, 1.5, 2.0])
    >>> seen.clear(); by = lambda r: r["step_s"] < 1.8  # two layouts: 1 s and 1.5 s one, 2 s and 4 s the other
    >>> [r["step_s"] for r in rank(rows, True, expect, best=2, layout=by)], seen  # 4 s: past its layout's 2.1 s
    ([1.5, 2.0], [1.0, 1.5, 2.0])
    >>> rows = [{"step_s": 1.0, "e": 1.2}, {"step_s": 1.1, "e": 3.0}, {"step_s": 1.25, "e": 1.3}]
    >>> seen.clear(); low = lambda r: r["e"] - 0.1  # 1.1 s: its floor, 2.9 s, is past the best, 1.2 s: not read
    >>> [r["step_s"] for r in rank(rows, True, expect, best=1, floor=low)], seen
    ([1.0, 1.1, 1.25], [1.0])
    """
    key, bound = RANKED_BY[training]
    sign = 1 if training else -1  # the least seconds, the most tokens/s
    layout = layout or id
    tops = {}  # each layout read -> (its best signed expected figure: less is better, that row's bound order)
    if best >= 1:
        low = [sign * row[bound] * (1 - sign * _ROUNDING) for row in rows]  # the least each row's figure can be
        order = range(len(rows))  # the bound's order; with floors, by the larger of the two (best rows come sooner)
        if training and floor is not None:
            low = [max(x, floor(row) * (1 - _ROUNDING)) for x, row in zip(low, rows)]
            order = sorted(order, key=low.__getitem__)
        cut = float("inf")  # the best-th best layout's figure, once that many are read
        for i in order:
            if low[i] > cut:
                break  # its least, and every later row's, is past the best layouts' expected times: none ranks above
            row = rows[i]
            at = layout(row)
            if at in tops and low[i] > tops[at][0]:
                continue  # it cannot be its layout's best
            row["expected"] = expect(row)
            figure = (sign * row["expected"].get(key, row[bound]), i)  # no expected figure: its bound stands in
            if at not in tops or figure < tops[at]:
                tops[at] = figure
                if len(tops) >= best:
                    cut = heapq.nsmallest(best, tops.values())[-1][0]
    ranked = [i for _, i in sorted(tops.values())[:best]]
    top = set(ranked)
    for i, row in enumerate(rows):  # read, but not a best layout's best row: ranked by the bound, as every row past
        if i not in top:
            row.pop("expected", None)
    out = [rows[i] for i in ranked]
    shown = {layout(r) for r in out}
    for row in rows:
        at = layout(row)
        if at not in shown:
            shown.add(at)
            out.append(row)
    return out
