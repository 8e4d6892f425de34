"""A workload's numbers without SymPy: its symbols' values (:func:`values`; by name: :func:`named_values`,
:func:`named`) and the groups of :func:`symllm.costs.phases.workload` from evaluated closed forms
(:func:`workload_numbers`), what a count runs on the formulas and on the kernels an earlier count kept
(:mod:`symllm.studies.quick`). The workload itself, its fields and checks, is :mod:`symllm.costs.workloads`.
"""
from __future__ import annotations

from symllm.costs import accelerators, expert_layout, hardware
from symllm.costs.replication import ReplicatedKV
from symllm.costs.layouts import tp_layouts
from symllm.costs.workloads import TRAINING_MEMORY, Workload, symbol_codes

__all__ = ["named_values", "workload_numbers", "grouped", "values", "named", "format_bytes", "weight_format_group",
           "unanswered"]


def named_values(work: Workload, codes=None) -> dict:
    """:meth:`Workload.values` by symbol name (``codes``: :func:`symllm.costs.workloads.symbol_codes`, or the table
    a stored entry kept), with the accelerator's ``P`` and ``B_mem``: no SymPy once ``codes`` is given.

    >>> from symllm.costs.workloads import Workload
    >>> v = named_values(Workload(batch=2, gpu="a100-40gb"))
    >>> v["b"], v["beta_w"], v["P"], v["B_mem"]
    (2, 2, 312000000000000, 1555000000000)
    """
    out = {name: getattr(work, code) for name, code in (symbol_codes() if codes is None else codes)}
    accelerator = accelerators.of(work)
    if accelerator is not None:  # P and B_mem (symllm.costs.accelerators.values)
        out["P"] = accelerators.peak_flops(accelerator, work.matmul_dtype)
        out["B_mem"] = accelerators.gpu(accelerator).bandwidth
    return out


def workload_numbers(work: Workload, ev, groups: tuple, fmt: dict | None, *, window: int | None = None,
                     declares: dict | None = None, largest: bool = True) -> dict:
    """:func:`symllm.costs.phases.workload` from the numbers of :func:`symllm.costs.phases.workload_forms` (``ev``:
    a :class:`symllm.numbers.runtime.Numbers`), the groups' names in order, the ``weight_format`` group but its
    ``dtype_weights_bytes`` (None: no format) and the model's window: no SymPy. What
    :func:`symllm.costs.phases.workload` runs, and what a count read back from stored kernels runs
    (:mod:`symllm.studies.quick`). A ``tp`` that is a multiple of the key/value heads above them holds one
    key/value head a rank, replicated (:func:`symllm.costs.replication.kv_heads_split`). ``declares``: where a
    part of the model declares its own split under an engine of the workload's, by kind whether that kind's engine
    lays it out so (:func:`symllm.costs.phases.declares_layout`; None or ``{}``: none); then ``tp_layout`` and
    ``training_tp_layout`` name the layouts the inference and the training per-GPU figures are in
    (:func:`symllm.costs.layouts.tp_layouts`). ``largest``: :func:`symllm.costs.hardware.roofline_numbers`'."""
    n_kv, experts = ev.vals.get("n_kv"), bool(ev.vals.get("n_e"))  # (routed experts: serves_only's)
    if type(n_kv) is int and work.tp > n_kv:  # one KV head a rank, replicated (symllm.costs.replication)
        ev = ReplicatedKV(ev, work.tp)
    laid = tp_layouts(work.engine, declares or {})
    out = {"workload": work.to_dict(), **laid, **{group: {} for group in groups}}
    if "*" in ev.forms:  # the groups' forms joined into one function (symllm.numbers.runtime.compiled)
        pairs = ev.table().items()
    else:
        pairs = ((name, ev(name)) for name in ev.forms if name.partition(".")[0] in groups)
    for name, value in pairs:
        group, _, key = name.partition(".")
        out[group][key] = value
    # in an inference engine's own expert-parallel layout no training figure is answered (it serves only)
    return unanswered(_with_format_and_time(out, work, ev, fmt, window, largest), work, experts)


#: the time's figures of a training step (``time`` and ``time.expected``), beside every ``training_*`` key
_TRAINING_TIMES = ("mfu", "hfu", "gpu_hours", "cost")


def unanswered(out: dict, work: Workload, experts: bool = True) -> dict:
    """``out`` (a workload's numbers, :func:`workload_numbers`) with its per-GPU training figures null where
    :func:`symllm.costs.expert_layout.serves_only` gives a reason (``experts``: the model has routed experts), kept
    under ``training.reason``: the training
    states, saved activations and training peak per GPU, the bytes sent a training step, and every training time
    and rate (``training_fits`` left out); the engine's name (``training_engine``) and the whole model's rows kept.

    >>> out = {"memory_per_gpu": {"weights": 1, "training_peak": 2}, "comm": {"dp": -3},
    ...        "time": {"fits": True, "training_fits": False, "mfu": None, "expected": {"training_engine": "megatron"}}}
    >>> unanswered(out, Workload(tp=2, dp=4, ep=8, engine="vllm"))["memory_per_gpu"], out["comm"], out["time"]
    ({'weights': 1, 'training_peak': None}, {'dp': None}, {'fits': True, 'mfu': None, 'expected': \
{'training_engine': 'megatron'}})
    """
    reason = expert_layout.serves_only(work, experts)
    if reason is None:
        return out
    out["memory_per_gpu"] = {k: None if k in TRAINING_MEMORY else v for k, v in out["memory_per_gpu"].items()}
    out["comm"] = dict.fromkeys(out.get("comm", {}))
    if "time" in out:
        t = {k: v for k, v in out["time"].items() if k != "training_fits"}
        for times in (t, t.get("expected") or {}):
            times.update({k: None for k in times
                          if k in _TRAINING_TIMES or (k.startswith("training_") and k != "training_engine")})
        out["time"] = t
    out["training"] = {"reason": reason}
    return out


def grouped(forms, groups: tuple) -> list:
    """The names of ``forms`` in one of ``groups`` (``flops.prefill``: the ``flops`` group), in order: what
    :func:`workload_numbers` reads in one call."""
    return [name for name in forms if name.partition(".")[0] in groups]


def _with_format_and_time(out: dict, work: Workload, ev, fmt: dict | None, window: int | None,
                          largest: bool = True) -> dict:
    if fmt is not None:
        out["weight_format"] = {**fmt, "dtype_weights_bytes": ev("memory.weights", beta_w=work.weight_bytes)}
    if "stage0.layers" in ev:  # an accelerator: fit and time (symllm.costs.hardware)
        out["time"] = hardware.roofline_numbers(work, ev, window=window, largest=largest)
    return out


def values(config, workload: Workload | None = None, **options) -> dict:
    """Symbol -> number for a config, plus a workload's symbols when one is given (a :class:`Workload`
    or its options by name: ``batch``, ``seq``, ``context``, ``gen``, ``dtype``, …); under a
    ``weight_format`` ``β_w`` is its exact bytes over the model's weights (:mod:`symllm.costs.formats`).

    >>> from symllm.arch import symbols as S
    >>> v = values("llama3.1-8b", batch=1, seq=8)
    >>> v[S.d], v[S.n_kv], v[S.f], v[S.s], v[S.t], v[S.d_ff]
    (4096, 8, 1.3, 8, 8, 14336)
    """
    from symllm.arch import resolved, symbols as S  # (SymPy: a count's quick path never asks)
    spec = resolved.spec(config)
    out = spec.values()
    if workload is not None or options:
        work = Workload.of(workload, **options)
        out.update(work.values())
        beta_w = format_bytes(spec, work)
        if beta_w is not None:
            out[S.beta_w] = beta_w
    return out


def named(spec, work: Workload) -> dict:
    """:func:`values` by symbol name (what :class:`~symllm.numbers.runtime.Numbers` reads), the spec's part
    named once per spec."""
    hit = _NAMED.get(id(spec))
    if hit is None or hit[0] is not spec:
        if len(_NAMED) >= 512:
            _NAMED.clear()
        hit = _NAMED[id(spec)] = (spec, {sym.name: v for sym, v in spec.values().items()})  # spec held: id kept
    out = {**hit[1], **named_values(work)}
    beta_w = format_bytes(spec, work)
    if beta_w is not None:
        out["beta_w"] = beta_w
    return out


def format_bytes(spec, work: Workload):
    """``β_w`` under a weight format: the format's exact bytes over the model's weights
    (:func:`symllm.costs.formats.bytes_per_weight`) for the workload's ``weight_format``, else the config's stated
    one (its ``quantization_config``); None without either. The one reading :func:`values` and :func:`named` share.

    >>> from symllm.arch import resolved
    >>> format_bytes(resolved.spec("llama3.1-8b"), Workload()) is None
    True
    """
    fmt = work.weight_format or spec.config.weight_format
    if fmt is None:
        return None
    from symllm.costs import formats
    return formats.bytes_per_weight(spec, fmt)


#: id(spec) -> (spec, its values by symbol name)
_NAMED: dict[int, tuple] = {}


def weight_format_group(spec, work: Workload) -> dict | None:
    """The ``weight_format`` group of :func:`symllm.costs.phases.workload` but its ``dtype_weights_bytes``: the
    format's bytes and where it was read (None: no weight format)."""
    if work.weight_format is None:
        return None
    from symllm.costs import formats
    fmt = formats.weight_bytes(spec, work.weight_format)
    stated = spec.config.weight_format
    source = spec.config.weight_format_source if fmt["format"] == stated else "--weight-format" + (
        f" (overrides the config's {stated}: {spec.config.weight_format_source})" if stated else "")
    return {"format": fmt["format"], "source": source, "bytes": fmt["total"], "bits_per_weight": fmt["bits_per_weight"]}
