"""What a sweep evaluates and over what: its quantities by name and their closed forms (:func:`quantity_names`),
the config fields and workload axes it may vary (:data:`CONFIG_FIELDS`, :data:`WORKLOAD_AXES`), an axis's values
checked, and a sweep's result and what it dropped (:class:`SweepResult`, :func:`dropped_text`). The sweep
itself is :mod:`symllm.studies.sweeps`.

>>> "params" in quantity_names() and "kv_cache" in quantity_names()
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp

from symllm.costs import phases as costs
from symllm.costs import expert_layout, finetune
from symllm.costs import parallel
from symllm.arch import glossary
from symllm.arch import symbols as S
from symllm.errors import SymllmError
from symllm.validate import short, with_list
from symllm.costs.selective import recompute_of
from symllm.costs.workloads import MEMORY_KINDS, PHASES, TRAINING_MEMORY, Workload, options as workload_options

__all__ = ["quantity_names", "CONFIG_FIELDS", "WORKLOAD_AXES", "SweepResult", "dropped_text", "check_some_valid"]

#: config fields a sweep may vary (Meta's names): those whose meaning says ``axis`` (dim, n_layers, ...)
CONFIG_FIELDS = tuple(e.code for e in glossary.ENTRIES if e.axis)
#: workload fields a sweep may vary: those whose option says ``axis`` (batch, seq, gen, context)
WORKLOAD_AXES = tuple(name for name, (_, opt) in workload_options().items() if opt.axis)

#: each axis's symbol in the closed forms (``dim`` -> d, ``seq`` -> s)
SYMBOL = {k: S.CODE_NAMES[k] for k in CONFIG_FIELDS + WORKLOAD_AXES}


# ---------------------------------------------------------------- quantities

#: the bucket of a ``PHASE_BUCKET`` quantity name -> symllm.costs.phases.flops's ``bucket``
_BUCKETS = {"flops": "matmul", "elementwise": "elementwise"}


def quantity_names() -> list[str]:
    """The quantity names a sweep knows: ``params``; one forward pass of ``s`` new tokens with
    ``context`` cached: ``flops`` (matmuls), ``elementwise``, ``kv_cache_elements``; from
    :mod:`symllm.costs.phases` ``PHASE_flops`` and ``PHASE_elementwise`` (``prefill``, ``decode`` at
    ``context``, ``generation``, ``training``…; ``training`` has matmul FLOPs only) and the memory kinds
    in bytes (``weights``, ``kv_cache``, ``training_states``…). ``NAME:path`` picks one breakdown term
    of ``params``, ``flops`` or ``elementwise`` (e.g. ``params:block/attention/wq``).

    >>> [q for q in quantity_names() if q.startswith("prefill")]
    ['prefill_flops', 'prefill_elementwise']
    """
    names = ["params", "flops", "elementwise", "kv_cache_elements"]
    for phase in PHASES:
        names += [f"{phase}_flops"] + ([f"{phase}_elementwise"] if phase != "training" else [])
    return names + list(MEMORY_KINDS) + list(PARALLEL) + list(_LORA)


#: per-GPU quantities of a parallel layout (symllm.costs.parallel) -> their (group, key) in costs.quantities
PARALLEL = {"params_per_gpu": ("params", "per_gpu"),
             **{f"{kind}_per_gpu": ("memory_per_gpu", kind)
                for kind in costs.PER_GPU_MEMORY + costs.PER_GPU_PEAKS},
             **{f"comm_{kind}": ("comm", kind) for kind in parallel.COMM_KINDS}}
#: LoRA quantities (symllm.costs.finetune; they need --lora-rank): count's params.trainable and memory.lora_*
#: and full fine-tuning's training peak (count's memory.full_finetune_peak; under LoRA, training_peak is LoRA's)
_LORA = ("trainable_params", *finetune.MEMORY_KEYS, "full_finetune_peak")


def quantity_expr(name: str, mdl, work: Workload) -> sp.Expr:
    """The closed form of quantity ``name`` for the model component ``mdl`` (``d_ff`` a symbol) under
    ``work``'s training options, as :func:`symllm.costs.phases.quantities` builds it for ``count``: the logits'
    positions ``s_o`` set by ``work.logits`` (:func:`symllm.costs.phases.logit_rows`).

    >>> from symllm.arch import resolved
    >>> quantity_expr("params", resolved.spec("llama2-7b").model(), Workload()).free_symbols >= {SYMBOL["dim"]}
    True
    """
    return costs.logit_rows(_quantity_form(name, mdl, work), work.logits)


def _quantity_form(name: str, mdl, work: Workload) -> sp.Expr:
    base, _, path = name.partition(":")
    if base == "params" and path == "active":  # what one token uses (count's params.active)
        return mdl.total("active")
    if path and base in ("params", "flops", "elementwise"):
        terms = mdl.breakdown(base)
        if path not in terms:
            raise SymllmError(with_list(f"quantity: no term {short(path, 24)} in {base} (known: ", terms,
                                        see="count --json", near=path))
        return terms[path]
    if not path and name in quantity_names():
        if name in ("params", "flops", "elementwise"):
            return mdl.total(name)
        if name == "kv_cache_elements":
            return mdl.total("kv_cache")
        if name in _LORA or (name == "training_peak" and work.lora_rank is not None):
            # under LoRA the training peak is LoRA's, as count's (symllm.costs.phases.quantities)
            if work.lora_rank is None:
                finetune.closed_forms(mdl, work)  # refuses: LoRA needs a rank
            out = costs.quantities(mdl, work)
            return out["params"]["trainable"] if name == "trainable_params" else out["memory"][name]
        if name in PARALLEL:
            group, key = PARALLEL[name]
            # an engine's own EP layout, or its experts over tp x dp: no training figure per GPU
            unanswered = expert_layout.serves_only(work, parallel.has_experts(mdl))
            if unanswered and (group == "comm" or key in TRAINING_MEMORY):
                raise SymllmError(f"quantity: {name}; {unanswered}")
            out = costs.quantities(mdl, work)[group]
            if key not in out:  # comm_ep: expert parallelism sends nothing in a dense model
                raise SymllmError(with_list(f"quantity: {name} is for a mixture-of-experts model (known here: ",
                                            [f"comm_{k}" for k in out], see="docs/sweeps.md", near=name))
            return out[key]
        if name in MEMORY_KINDS:
            return costs.memory(mdl, name, zero_stage=work.zero_stage, recompute=recompute_of(work), stack=work.stack,
                                optimizer=work.optimizer)
        phase, bucket = name.rsplit("_", 1)
        return costs.flops(mdl, phase, bucket=_BUCKETS[bucket], recompute=recompute_of(work))
    raise SymllmError(with_list(f"quantity: unknown {short(name, 20)} (known: ", quantity_names(),
                                see="docs/sweeps.md", near=name))


# ---------------------------------------------------------------- the sweep

@dataclass
class SweepResult:
    """The rows of a finished sweep, column by column, and what was dropped."""

    #: column name -> values (int64, float64, or object arrays of Python ints past int64)
    columns: dict[str, np.ndarray]
    #: grid (or table) points before anything was dropped
    points: int
    #: points dropped as invalid configs
    invalid: int
    #: valid points the ``where`` filter removed
    filtered: int
    #: why points were dropped: the failed check's field -> (points, the first such point's error line)
    reasons: dict = dataclasses.field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Rows kept."""
        return self.points - self.invalid - self.filtered

    def records(self) -> list[dict]:
        """The rows as dicts of plain Python numbers."""
        names = list(self.columns)
        return [dict(zip(names, r)) for r in zip(*(c.tolist() for c in self.columns.values()))]


def dropped_text(reasons: dict) -> str:
    """Why points were dropped (:attr:`SweepResult.reasons`), most frequent check first, a line each: how
    many, and the first such point's error line (within 100 columns, as the error line is).

    >>> print(dropped_text({"head_dim": (1, "head_dim: 3 is odd"), "n_heads": (4, "n_heads: ...")}))
    4 dropped, the first: n_heads: ...
    1 dropped, the first: head_dim: 3 is odd
    """
    ranked = sorted(reasons.items(), key=lambda kv: -kv[1][0])
    return "\n".join(f"{n:,} dropped, the first: {line}" for k, (n, line) in ranked)


def check_some_valid(stats) -> None:
    """Refuse, in one line, a sweep whose every point was invalid (a grid of points ``symllm count``
    refuses, each for a reason of its own), with the most frequent reason's first line: a table of no
    rows for that is a mistake, not a result (a sweep whose rows ``where`` filters out is one).

    >>> check_some_valid(Stats(points=2, invalid=2, reasons={"pp": (2, "pp: 9 pipeline stages ...")}))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: sweep: every point is invalid: pp: 9 pipeline stages ...
    """
    if stats.points and stats.invalid == stats.points:
        first = dropped_text(stats.reasons).splitlines()[0].split(", the first: ", 1)[1]
        raise SymllmError(f"sweep: every point is invalid: {first}")


@dataclass
class Stats:
    """A sweep's tally: points seen, invalid and filtered out, and per check the points it dropped with the
    first one's line.

    >>> st = Stats(points=3)
    >>> st.drop("pp", np.array([False, True, True]), lambda i: f"point {i}"); st.reasons
    {'pp': (2, 'point 1')}
    """
    points: int = 0
    invalid: int = 0
    filtered: int = 0
    reasons: dict = dataclasses.field(default_factory=dict)

    def drop(self, field_: str, bad: np.ndarray, example: Callable[[int], str]) -> None:
        """Count the points ``bad`` marks as dropped for ``field_``'s check; keep the first one's line."""
        count = int(np.count_nonzero(bad))
        if count:
            seen, line = self.reasons.get(field_, (0, None))
            self.reasons[field_] = (seen + count, line or example(int(np.argmax(bad))))


class RangeAxis:
    """An integer axis ``range(start, stop, step)`` that is never built: indexing with an array of
    positions computes those values (int64 while they fit, Python ints past that), so an axis of any
    length costs no memory.

    >>> ax = RangeAxis(range(2, 2 * 10**18, 2))
    >>> len(ax), ax[np.array([0, 1, 10**18 - 2])].tolist()
    (999999999999999999, [2, 4, 1999999999999999998])
    """

    def __init__(self, values: range):
        self.range = values
        #: how many values (len() of a range refuses more than sys.maxsize)
        self.count = _range_len(values)

    def __len__(self) -> int:
        return self.count

    def extreme(self) -> int:
        """The largest magnitude on the axis."""
        return max(abs(self.range[0]), abs(self.range[-1]))

    def __getitem__(self, idx):
        if isinstance(idx, slice):  # a table's rows start..stop
            idx = np.arange(*idx.indices(len(self.range)), dtype=np.int64)
        idx = np.asarray(idx)
        r = self.range
        if self.extreme() < 2**62 and self.count < 2**62:
            return r.start + idx.astype(np.int64) * r.step
        return idx.astype(object) * r.step + r.start


def _range_len(values: range) -> int:
    """How many values ``values`` has, however many (``len()`` raises OverflowError past sys.maxsize)."""
    start, stop, step = values.start, values.stop, values.step
    return max(0, (stop - start + step - (1 if step > 0 else -1)) // step)


def axis_extreme(values) -> int:
    """The largest magnitude among an axis's values (a :class:`RangeAxis` without building it).

    >>> axis_extreme(np.array([3, -7, 2])), axis_extreme(RangeAxis(range(1, 10**20)))
    (7, 99999999999999999999)
    """
    if isinstance(values, RangeAxis):
        return values.extreme()
    return max(abs(x) for x in values.tolist()) if len(values) else 0


def axis_values(field: str, raw, work: Workload):
    """One axis's values as an array (a lazy :class:`RangeAxis` for a ``range`` of integers), each
    checked as its field is: a config field is a positive integer (``ffn_dim_multiplier`` a positive
    number); a workload field's smallest value is checked by :class:`Workload` itself.

    >>> axis_values("dim", [4096, 8192], Workload()).tolist(), len(axis_values("seq", range(1, 10**6), Workload()))
    ([4096, 8192], 999999)
    >>> axis_values("dim", [0], Workload())
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: dim: expected integers >= 1, got 0
    """
    if isinstance(raw, range) and raw.step > 0 and raw.stop > raw.start and field != "ffn_dim_multiplier":
        if field in WORKLOAD_AXES:
            work.replace(**{field: raw[0]})
        elif raw[0] < 1:
            raise SymllmError(f"{field}: expected integers >= 1, got {raw[0]!r}")
        return RangeAxis(raw)
    arr = np.asarray(raw).reshape(-1)
    if arr.size == 0:
        raise SymllmError(f"{field}: no values")
    if field == "ffn_dim_multiplier":
        if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr.astype(np.float64))) or np.any(arr <= 0):
            raise SymllmError(f"{field}: expected positive numbers, got {raw!r}")
        return arr.astype(np.float64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
        # 1e30 in a table: exact Python ints past int64 (astype would wrap around with a RuntimeWarning)
        arr = arr.astype(np.int64) if np.all(np.abs(arr) < 2**62) else np.array([int(x) for x in arr.tolist()],
                                                                              dtype=object)
    if arr.dtype.kind not in "iu" and arr.dtype != object:
        raise SymllmError(f"{field}: expected integers, got {raw!r}")
    if arr.dtype == object and not all(isinstance(v, int) and not isinstance(v, bool) for v in arr):
        raise SymllmError(f"{field}: expected integers, got {raw!r}")
    if field in WORKLOAD_AXES:
        work.replace(**{field: int(arr.min())})
    elif arr.min() < 1:
        raise SymllmError(f"{field}: expected integers >= 1, got {next(v for v in arr.tolist() if v < 1)!r}")
    return arr.astype(np.int64, copy=False) if arr.dtype != object and arr.max() < 2**62 else arr
