"""Exact parameter counts at start-up, from kernels an earlier process compiled: what ``symllm count`` runs.

:func:`symllm.arch.resolved.params` builds the component tree and compiles its breakdown (and Meta's ``d_ff``
rounding) once per process; for one count that is most of the command's time after importing SymPy.
:func:`params` gives the same numbers from the same generated code, kept in
:func:`symllm.numbers.cache.cache_dir` (with the arguments' field names) and keyed by

* a hash of symllm's own source and data files (any change to a formula, the spec, the code generator or
  a preset is a miss), with the SymPy and Python versions (:mod:`symllm.numbers.kernels`'s key), and
* the config's fields that are not sizes: every field but the name and the nine sizes a kernel takes
  (``vocab_size`` … ``ffn_dim_multiplier``), of which only whether each is given counts. What decides
  the tree's structure (tying, biases, where ``d_ff`` comes from, any field added later) is in the key.

On a miss the numbers come from :mod:`symllm.arch.resolved` itself (the one source of truth), and the code it
compiled is stored for the next process. So the cache can make a start faster, never a number different.

>>> counts, d_ff = params(load("llama3.1-8b"))
>>> counts["total"], d_ff
(8030261248, 14336)

:func:`answer` does the same for ``symllm count`` with a workload, ``--gpu``, a layout, ``--serve`` or
``--json``: the printed text is kept by everything it is made from (symllm's source and data files, the
resolved config with every field, every option of the command, a checkpoint's bytes), so a count asked
before is printed again without importing SymPy.

:func:`workload` does the same for the numbers of a count at a workload point never asked before (another
``--seq``, ``--batch``, ``--tp``, ``--pp``, another accelerator): the closed forms of a workload depend on the
model and on the workload's shape only (:meth:`~symllm.costs.workloads.Workload.shape`: whether there is a
layout, ZeRO, LoRA, ...), so their kernels' source is kept by the config (every field), that shape, the
accelerator's presence and the weight format, with the config's own numbers; a new point of that shape only
evaluates the kept kernels (:class:`symllm.numbers.runtime.Numbers`, whose :func:`~symllm.numbers.runtime.define`
accepts generated arithmetic only) and runs the numbers' half of the searches
(:func:`symllm.costs.numbered.workload_numbers`).
"""
from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from functools import lru_cache

from symllm.arch.config import SPEC_FIELDS, ModelConfig, load  # noqa: F401  (load: the doctest)
from symllm.errors import SymllmError
from symllm.numbers.cache import cache_get, cache_put, key as cache_key
from symllm.numbers.runtime import Numbers, compiled, define

__all__ = ["params", "workload", "workload_of", "evaluator", "answer", "answer_key", "keep_answer", "SIZE_FIELDS"]

#: the config fields kernels take as numbers; the key holds only whether each is given
SIZE_FIELDS = ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim",
               "multiple_of", "ffn_dim_multiplier")


def _key(config: ModelConfig) -> str:
    fields = []
    for fld in dataclasses.fields(config):
        if fld.name in ("name", "derived"):
            continue
        value = getattr(config, fld.name)
        fields.append((fld.name, value is not None if fld.name in SIZE_FIELDS else repr(value)))
    return cache_key(fields)


def _number(config: ModelConfig, binds: list):
    """The number a kernel argument takes: what its symbol binds, as the symbols table says it and the cache
    entry stores it (:attr:`symllm.arch.symbols.SymbolInfo.binds`): a spec's field, read from the config as
    the spec reads it (:data:`symllm.arch.config.SPEC_FIELDS`), or the count of a group of layers.

    >>> cfg = load("llama4-maverick-17b-128e")
    >>> _number(cfg, ["field", "dim"]), _number(cfg, ["group", 1]) == cfg.groups[1][1]
    (5120, True)
    """
    kind, what = binds
    return config.groups[what][1] if kind == "group" else getattr(config, SPEC_FIELDS.get(what, what))


@lru_cache(maxsize=64)
def _compiled(key: str, sources: tuple):
    hidden_args, hidden_src, table_args, names, table_src = sources
    hidden = (json.loads(hidden_args), define(hidden_src, "kernel")) if hidden_src else None
    return hidden, json.loads(table_args), tuple(json.loads(names)), define(table_src, "table")


def _from_api(config: ModelConfig) -> tuple[dict, int, tuple]:
    """The counts by :mod:`symllm.arch.resolved`, and the sources of the kernels that made them."""
    from symllm.arch import resolved
    from symllm.arch import symbols as S
    from symllm.arch.specs import hidden_dim_kernel

    spec = resolved.spec(config)
    table = resolved.params_table(spec.structure)
    binds = lambda args: json.dumps([S.SYMBOLS[a].binds for a in args])  # noqa: E731
    if spec.hidden_rule == "explicit":
        hidden = ("", "")
    else:
        kernel = hidden_dim_kernel(spec.hidden_rule)
        hidden = (binds(kernel.args), kernel.source)
    return resolved.params(spec), spec.hidden_dim, (*hidden, binds(table.args), json.dumps(table.names), table.source)


def params(config: ModelConfig) -> tuple[dict, int]:
    """``(symllm.arch.resolved.params(config), ...hidden_dim(config))``, without building a formula when
    an earlier process compiled this config's structure (see the module docstring).

    >>> params(load("llama2-13b"))[0]["lm_head"]
    163840000
    """
    key = _key(config)
    sources = cache_get("count", key)
    if sources is not None and len(sources) == 5:
        try:
            hidden, table_args, names, table = _compiled(key, sources)
            if hidden is None:
                d_ff = config.hidden_dim
            else:
                args, kernel = hidden
                d_ff = kernel(*(_number(config, a) for a in args))
            values = [d_ff if a == ["field", "hidden_dim"] else _number(config, a) for a in table_args]
            counts = dict(zip(names, table(*values), strict=True))
            if type(counts.get("total")) is int and type(d_ff) is int:
                return counts, d_ff
        except Exception:  # noqa: BLE001 (an entry of another shape: computed again below)
            pass
    counts, d_ff, sources = _from_api(config)
    cache_put("count", key, sources)
    return counts, d_ff


def answer_key(command: str, config: ModelConfig, options, *extra) -> str:
    """The cache key of ``command``'s printed answer for ``config`` (every field, what was derived too) and
    its ``options`` (every option, by name) and ``extra`` inputs (a checkpoint's bytes): with
    :func:`symllm.numbers.cache.source_digest`, everything the text is made from.

    >>> cfg = load("llama3.1-8b")
    >>> answer_key("count", cfg, [("seq", 1)]) == answer_key("count", cfg, [("seq", 1)])
    True
    >>> answer_key("count", cfg, [("seq", 1)]) != answer_key("count", cfg.replace(n_layers=31), [("seq", 1)])
    True
    """
    fields = [(fld.name, repr(getattr(config, fld.name)) if fld.name != "derived" else sorted(config.derived))
              for fld in dataclasses.fields(config)]
    return cache_key(command, type(config).__name__, fields, list(options), *extra)


def answer(key: str) -> str | None:
    """The text :func:`keep_answer` stored for ``key``, or ``None`` (not stored, the cache off or untrusted,
    a damaged entry: see :mod:`symllm.numbers.cache`).

    >>> import os, tempfile
    >>> from unittest import mock
    >>> with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"SYMLLM_CACHE_DIR": tmp}):
    ...     k = answer_key("count", load("llama2-7b"), [("json", True)])
    ...     before = answer(k)
    ...     keep_answer(k, "{}\\n")
    ...     before, answer(k)
    (None, '{}\\n')
    """
    hit = cache_get("answer", key)
    return hit[0] if hit is not None and len(hit) == 1 else None


def keep_answer(key: str, text: str) -> None:
    """Store ``text``, the answer printed for ``key`` (:func:`answer_key`), for the next process."""
    cache_put("answer", key, (text,))


def _encode(value):
    """A number of a workload entry as JSON (exact: ints and Fractions as digits, floats by ``repr``)."""
    if type(value) is bool:
        return ["b", int(value)]
    if type(value) is int:
        return ["i", str(value)]
    if type(value) is float:
        return ["f", repr(value)]
    if type(value) is Fraction:
        return ["q", str(value.numerator), str(value.denominator)]
    raise TypeError(type(value).__name__)


def _decode(item):
    kind, *text = item
    if kind == "b":
        return bool(text[0])
    if kind == "i":
        return int(text[0])
    if kind == "f":
        return float(text[0])
    if kind == "q":
        return Fraction(int(text[0]), int(text[1]))
    raise ValueError(kind)


def _workload_key(config: ModelConfig, work) -> str:
    from symllm.costs import accelerators
    return answer_key("workload", config, [("shape", work.shape()), ("gpu", accelerators.of(work) is not None),
                                           ("weight_format", work.weight_format)])


def workload(config: ModelConfig, given: dict) -> tuple[dict, dict]:
    """``(symllm.costs.phases.workload(config, **given), symllm.arch.resolved.resolved_config(config))``, without
    building a formula where an earlier process kept this config's kernels for a workload of this shape (see
    the module docstring); computed, and the kernels kept, otherwise.

    >>> cfg = load("llama3.1-8b")
    >>> out, resolved = workload(cfg, {"seq": 4096, "gpu": "h100-sxm"})
    >>> out["memory"]["kv_cache"] == 2 * 32 * 8 * 128 * 2 * 4096, out["time"]["fits"], resolved["hidden_dim"]
    (True, True, 14336)
    """
    from symllm.costs.workloads import Workload
    return workload_of(config, Workload.of(**given))


def workload_of(config: ModelConfig, work) -> tuple[dict, dict]:
    """:func:`workload` of a :class:`~symllm.costs.workloads.Workload`: what ``--serve`` evaluates at the
    points it reads (vLLM's profile run, one token, a decode step at each concurrency; :func:`evaluator`). A
    context past the model's window is counted with the same :class:`~symllm.errors.ContextWarning` as the
    formulas give; a named stack's check of the model's parts (``--stack hf-sdpa``) passed when the kernels
    were kept (a refused workload keeps none), and the stack is in the workload's shape.

    >>> from symllm.costs.workloads import Workload
    >>> kv = workload_of(load("llama3.1-8b"), Workload(seq=1000, stack="hf-sdpa"))[0]["memory"]["kv_cache"]
    >>> kv == 2 * 32 * 8 * 128 * 2 * 1000
    True
    """
    from symllm.costs import checks
    from symllm.costs.numbered import named_values, workload_numbers
    from symllm.costs.workloads import with_stated

    work = with_stated(work, config)
    fields = {**checks.config_fields(config), **checks.workload_fields(work)}  # (the units split: below)
    key = _workload_key(config, work) if not checks.failures(fields) else None  # else: refused, as computed
    hit = cache_get("workload", key) if key is not None else None
    if hit is not None and len(hit) == 1:
        try:
            base, codes, fmt, beta_w, groups, forms, resolved, declares, units = _read_workload(hit[0])
            if checks.failures({**fields, "split_units": units}):  # the whole units its layout splits: read off the
                raise ValueError("split_units")                      # model's parts, kept with its kernels
            vals = {**base, **named_values(work, codes)}
            if fmt is not None:  # β_w: the format's exact bytes over the model's weights, not the dtype's
                vals["beta_w"] = beta_w
            ev = Numbers(forms, vals)
            out = workload_numbers(work, ev, groups, fmt, window=config.max_positions, declares=declares)
        except (ValueError, KeyError, TypeError, AttributeError, SymllmError):
            pass  # an entry of another shape, or a layout the model refuses: computed (or refused) below
        else:
            checks.warn_past_window(config, work.seq + work.gen)  # flagged, as the formulas flag it
            return out, resolved
    return _keep_workload(config, work, key)


@lru_cache(maxsize=32)
def _read_workload(text: str) -> tuple:
    """A kept workload entry's numbers and kernels, read once per process (``--serve`` under load evaluates
    one shape at many points): ``(values, codes, weight format, its β_w, groups, compiled forms, resolved config,
    whether a part declares an engine's split, the units each layout splits: symllm.costs.checks.split_units)``.
    The forms are generated arithmetic only (:func:`symllm.numbers.runtime.define`), else ``ValueError``."""
    from symllm.costs.numbered import grouped

    data = json.loads(text)
    vals = {name: _decode(v) for name, v in data["vals"].items()}
    codes = data["codes"]
    if not all(code.isidentifier() and not code.startswith("_") for _, code in codes):
        raise ValueError("codes")
    fmt = data["fmt"]
    beta_w = None  # the format's bytes a weight (put in after the workload's values)
    if fmt is not None:
        beta_w = _decode(data["beta_w"])
        fmt = {**fmt, "bytes": _decode(fmt["bytes"]), "bits_per_weight": _decode(fmt["bits_per_weight"])}
    groups = tuple(data["groups"])
    return (vals, codes, fmt, beta_w, groups, compiled(data["forms"], grouped(data["forms"], groups)), data["resolved"],
            dict(data["declares"]), tuple(data["split_units"]))


def evaluator(config: ModelConfig):
    """``work -> symllm.costs.phases.workload(config, work)`` through :func:`workload_of` (kept kernels, no
    SymPy once a workload of each shape was counted): what ``count --serve`` hands
    :func:`symllm.costs.serving.capacity` and :func:`symllm.costs.traffic.under_load`.

    >>> from symllm.costs.workloads import Workload
    >>> evaluator(load("llama3.1-8b"))(Workload(seq=10))["memory"]["kv_cache"]
    1310720
    """
    return lambda work: workload_of(config, work)[0]


def _keep_workload(config: ModelConfig, work, key: str | None) -> tuple[dict, dict]:
    """:func:`workload` computed (the formulas built), its kernels and the config's numbers kept under ``key``."""
    from symllm.arch import resolved as R
    from symllm.arch import symbols as S
    from symllm.costs import checks, numbered, phases
    from symllm.costs.workloads import symbol_codes
    from symllm.numbers.kernels import evaluated, sources

    spec, work = phases.resolved_workload(config, work)
    forms, groups = phases.workload_forms(spec, work)
    vals = numbered.values(spec, work)
    fmt = numbered.weight_format_group(spec, work)
    declares = phases.declares_layout(spec, work)
    out = numbered.workload_numbers(work, evaluated(forms, vals), groups, fmt, window=spec.config.max_positions,
                                  declares=declares)
    resolved = R.resolved_config(config)
    if key is not None:
        try:
            codes = [list(pair) for pair in symbol_codes()]
            named = {sym.name: v for sym, v in spec.values().items()}
            entry = {"vals": {name: _encode(v) for name, v in named.items()}, "codes": codes,
                     "forms": {name: list(pair) for name, pair in sources(forms).items()}, "groups": list(groups),
                     "fmt": None if fmt is None else {**fmt, "bytes": _encode(fmt["bytes"]),
                                                      "bits_per_weight": _encode(fmt["bits_per_weight"])},
                     "resolved": resolved, "declares": declares, "split_units": checks.split_units(spec)}
            if fmt is not None:
                entry["beta_w"] = _encode(vals[S.beta_w])
            text = json.dumps(entry)  # the resolved config prints as JSON (a tuple reads back as a list)
            if json.dumps(json.loads(text)["resolved"]) == json.dumps(resolved):
                cache_put("workload", key, (text,))
        except (TypeError, ValueError):
            pass
    return out, resolved
