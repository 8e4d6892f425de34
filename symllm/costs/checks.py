"""Whether a workload fits a model: the one statement of every workload-vs-model check, for one config
(:func:`check`, which raises) and for a sweep's arrays (:func:`failures`, which gives masks).

What is refused, and why (each a one-line :class:`~symllm.errors.SymllmError` naming its field):

* ``pp``: more pipeline stages than blocks (a stage holds at least one block);
* ``tp``: tensor-parallel ranks that do not divide the query heads, or that neither divide the key/value heads
  nor are a multiple of them (a head split across ranks cannot run attention: docs/parallel.md; a multiple of
  ``n_kv`` holds one key/value head a rank, replicated, as vLLM's ``QKVParallelLinear`` does:
  :func:`symllm.costs.replication.kv_heads_split`; ``plan`` tries only the ``tp`` that pass);
* ``tp`` with tensor-split routed experts (``expert_tp="split"``, the default): ranks that do not divide each
  expert's width (``moe_intermediate_size``): vLLM's and SGLang's ``FusedMoE`` assert
  ``intermediate_size % tp_size == 0``; ``--expert-tp whole`` keeps the experts whole on each rank, and so does
  ``--engine hf`` on a family whose transformers plan keeps them whole (gpt-oss: its default there);
* ``expert_tp``: ``split`` given under ``--engine hf`` on such a family: no transformers run holds them so (the
  layout keeps them whole whatever the workload says, :func:`symllm.arch.specs.hf_plan`: a bare workload's
  default ``split`` is counted whole, as every door counts it);
* ``tp`` on Mamba-2 mixers (Nemotron-H): ranks that do not divide the mixer's heads, or its groups where it has
  more than one (vLLM's ``MambaMixer2`` asserts both, replicating a single group on every rank; Megatron-Core's
  ``MambaMixer`` asserts that the ranks divide both: :mod:`symllm.costs.parallel`);
* ``tp`` under a layout that splits a part declaring whole units of its own (:attr:`symllm.arch.components.Rules.units`,
  read by :func:`split_units`): ranks that do not divide them (vLLM splits DeepSeek-V4's grouped output projection
  by its ``o_groups``: :data:`symllm.arch.components.compressed.VLLM_UNITS`); the layout is the workload's engine's
  (:func:`symllm.arch.layers.layout_engine`), so a part with its own rule needs no check of its own here;
* ``engine``: ``hf`` with ``tp`` above 1 on a model whose family transformers has no tensor-parallel plan for (MPT:
  :attr:`symllm.arch.families.hf.Family.tp_plan` None), which transformers refuses too (``tp_size`` above 1 with no
  ``tp_plan``, transformers 5.23 ``distributed/mixin.py``);
* ``tp`` under an engine that splits a model over GPUs by layers (efficiency.json ``engines``' ``gpu_split``
  ``"layer"``: llama.cpp's default ``--split-mode layer``), whose stages run one after another: ``--pp`` is that;
* ``compute_dtype`` (or ``dtype``) fp8 under an inference engine without FP8 GEMMs, or not known to have them (its
  entry's ``fp8_gemm`` false or null: llama.cpp, whose ggml has no FP8 type; training engines as their recipes say);
* ``kv_format`` (or ``kv_dtype``, where given or a config states it) under an inference engine that cannot hold that
  KV cache (its entry's ``kv_formats``, by option, each with its source: vLLM and SGLang fp8, vLLM's per-token-head
  caches, vLLM and TensorRT-LLM nvfp4, TensorRT-LLM fp8 and per-tensor int8 (``--kv-dtype int8``), lmdeploy's
  ``--quant-policy`` int8/int4 (``--kv-format``), llama.cpp's q8_0 and q4_0; null, not read: the model's own fp32,
  fp16 or bf16 only), a value the other option names for that engine pointed at (a list too long for the line:
  docs/formats.md); none is checked without an engine (as fp8);
* ``kv_format`` (or ``kv_dtype``) on a card or a model its engine cannot hold that cache for (its entry's
  ``kv_format_sm``: the CUDA compute capabilities, gpus.json ``sm``, it holds the format on, by the model's head width:
  vLLM 0.33.0's nvfp4 on 8.x, 9.x, 10.x and 12.x, 10.x only at head width 64, TensorRT-LLM's on 10.x; and
  ``kv_formats_no_mla``: vLLM's nvfp4 on a model that caches an MLA latent, which none of its MLA backends holds);
  without an engine, where no engine that holds the format could (an nvfp4 cache on a T4, an AMD or Apple card);
* ``weight_format`` on a card its engine runs that format on by no path (its entry's ``weight_formats``:
  :mod:`symllm.costs.weight_formats`; TensorRT-LLM's and SGLang's NVFP4 below sm 10, TensorRT-LLM's FP8 on Ampere);
  without an engine, where no engine that declares the format could;
* ``ep``: expert parallelism on a model without routed experts, or ``ep`` ranks that do not divide
  the experts (DeepSpeed-MoE and Megatron-LM refuse it too; :mod:`symllm.costs.parallel`);
* ``stack``: a named software stack (``--stack hf-sdpa``) that does not model a part of the model (a
  sliding window, routed experts): :func:`check_structure`, which reads the component tree, not numbers.

A window in some layers only (Qwen's ``max_window_layers``) is counted at any length: those layers are
a group of their own (:mod:`symllm.arch.layers`).

``symllm.workload``, ``symllm.costs.finetune.lora``, derivations, reports and :class:`symllm.Sweep` all
ask this module, so a sweep drops (or, for a workload that is wrong whatever the grid, refuses) exactly
the points ``symllm count`` refuses, with count's line.

>>> from symllm.arch.resolved import spec
>>> from symllm.costs.workloads import Workload
>>> check(spec("mixtral-8x7b"), Workload(dp=6, ep=3))
Traceback (most recent call last):
...
symllm.errors.SymllmError: ep: 3 expert-parallel ranks do not divide the 8 experts of mixtral-8x7b
>>> import numpy as np
>>> fields = {**model_fields(spec("llama3.2-1b")), **workload_fields(Workload(pp=4)), "n_layers": np.array([2, 16])}
>>> [(f.field, f.ok(fields).tolist()) for f in failures(fields)]
[('pp', [False, True])]
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Mapping

from symllm.arch.layers import LAYOUT_ENGINES, layout_engine
from symllm.costs import weight_formats  # (the weight formats each engine runs: efficiency.json, read on first use)
from symllm.errors import SymllmError
from symllm.validate import ROOM, fitting, listed

__all__ = ["Check", "CHECKS", "check", "check_structure", "past_window", "warn_past_window", "failures",
           "splits_heads", "model_fields", "config_fields", "check_config", "mamba_fields", "workload_fields",
           "split_units"]


@dataclass(frozen=True)
class Check:
    """One workload-vs-model check over named fields (scalars, or numpy arrays of one length)."""

    #: the field its error names
    field: str
    #: the fields it reads (a sweep refuses at once when none of them varies)
    uses: tuple[str, ...]
    #: whether the fields pass: a bool, or a bool array for arrays
    ok: Callable[[Mapping], object]
    #: the one-line error for scalar fields (one point's)
    line: Callable[[Mapping], str]


def _no_experts_ok(f):
    return f["experts"] or f["ep"] == 1


def splits_heads(tp, n_heads, n_kv_heads):
    """Whether ``tp`` tensor-parallel ranks split whole heads: dividing the query heads, and dividing the
    key/value heads or a multiple of them (each rank then holds one key/value head, replicated over ``tp /
    n_kv`` ranks: vLLM's ``QKVParallelLinear``), scalars or arrays; what ``plan`` tries and count, sweeps and
    :func:`symllm.workload` allow.

    >>> splits_heads(3, 32, 8), splits_heads(8, 32, 8), splits_heads(16, 32, 8), splits_heads(4, 48, 6)
    (False, True, True, False)
    """
    return (n_heads % tp == 0) & ((n_kv_heads % tp == 0) | (tp % n_kv_heads == 0))


def _tp_heads_ok(f):
    return f["n_heads"] is None or splits_heads(f["tp"], f["n_heads"], f["n_kv_heads"])


def _hf_whole_experts(f) -> bool:
    """Whether the workload's layout keeps the routed experts whole on every tensor rank whatever ``expert_tp`` says:
    ``--engine hf`` on a family whose transformers plan does (gpt-oss: symllm.arch.specs.hf_plan)."""
    return f.get("engine") == "hf" and f.get("hf_experts") == "whole"


def _expert_ranks(f) -> int:
    """The ranks each routed expert's width is split over: ``tp``, or ``tp × dp`` where vLLM spreads the experts
    over every rank without expert parallelism (``expert_tp="tp_x_dp"``: ``FusedMoE`` asserts the same division)."""
    return f["tp"] * (f.get("dp") or 1) if f.get("expert_tp") == "tp_x_dp" else f["tp"]


def _spread_remedy(f) -> str:
    """What serves a mixture whose experts ``tp × dp`` ranks cannot split: vLLM's expert parallelism over them where
    they divide the experts, else each replica its own server (the experts over ``--tp`` alone)."""
    ranks = _expert_ranks(f)
    return f"--ep {ranks}: experts whole" if f.get("n_experts") and f["n_experts"] % ranks == 0 else \
        "--expert-tp split"


def _expert_width_ok(f):
    if f.get("expert_width") is None or f.get("expert_tp", "split") == "whole" or _hf_whole_experts(f):
        return True
    return f["expert_width"] % _expert_ranks(f) == 0


def _hf_experts_ok(f):
    return not (_hf_whole_experts(f) and f.get("expert_tp") == "split" and f.get("expert_tp_given"))


def _mamba_ok(f):
    heads, groups = f.get("mamba_heads"), f.get("mamba_groups")
    return heads is None or ((heads % f["tp"] == 0) & ((groups % f["tp"] == 0) | (groups == 1)))


def _units(f) -> list:
    """The rows of :func:`split_units` that the layout of either kind of the workload's engine splits (its inference
    and its training quantities': :func:`symllm.costs.layouts.kind_layout`)."""
    from symllm.costs.layouts import kind_layout  # (efficiency.json's engines, read on first use)
    layouts = {kind_layout(f.get("engine"), kind) for kind in ("inference", "training")}
    return [row for row in f.get("split_units") or () if row[0] in layouts]


def _units_ok(f):
    ok = True
    for _, _, units, _ in _units(f):
        ok = ok & (units % f["tp"] == 0)
    return ok


def _units_line(f) -> str:
    engine, name, units, parts = next(row for row in _units(f) if row[2] % f["tp"])
    layout = engine or "transformers' tp plan"  # (the model's name would pass the 100 columns of an error)
    return f"tp: {f['tp']} ranks do not divide {name} {units} ({layout} splits {', '.join(parts)} by it)"


def _hf_plan_ok(f):
    return (f["tp"] == 1) | (f.get("engine") != "hf") | (f.get("hf_plan") is not False)


def _experts_divide_ok(f):
    return f["n_experts"] is None or f["n_experts"] % f["ep"] == 0


def _engine(f) -> dict:
    """The workload's engine's entry (efficiency.json ``engines``; empty with no engine given: today's defaults)."""
    from symllm.costs import figures  # (efficiency.json, read on first use)
    return figures.engine(f["engine"]) if f.get("engine") is not None else {}


def _fp8_ok(f):
    entry = _engine(f)
    return f.get("matmul_dtype") != "fp8" or entry.get("kind") != "inference" or entry.get("fp8_gemm") is True


def _fp8_line(f) -> str:
    name, field = f["engine"], "compute_dtype" if f.get("compute_dtype") else "dtype"
    if _engine(f).get("fp8_gemm") is None:
        return f"{field}: fp8 under {name}: FP8 matmuls not known (not read); use bf16 or fp16"
    return f"{field}: fp8 under {name}: it has no FP8 matmul kernels; use bf16 or fp16"


#: the KV caches every engine's default holds: the model's own dtype (vLLM's and SGLang's ``auto``)
_MODEL_KV = ("fp32", "fp16", "bf16")


def _kv_stated(f) -> tuple:
    """``(option, value)`` of the KV cache a workload states (``--kv-format``, else a ``--kv-dtype`` given or read from
    a config), or ``(None, None)`` where it is the default (the activations' dtype)."""
    for option in ("kv_format", "kv_dtype"):
        if f.get(option) is not None:
            return option, f[option]
    return None, None


def _kv_held(f, option) -> tuple:
    """The values of ``option`` the workload's inference engine holds a KV cache in (efficiency.json ``kv_formats``;
    not known: :data:`_MODEL_KV`)."""
    held = _engine(f).get("kv_formats")
    return tuple(held[option]) if held is not None else _MODEL_KV


def _kv_ok(f):
    option, value = _kv_stated(f)
    return option is None or _engine(f).get("kind") != "inference" or value in _kv_held(f, option)


def _kv_line(f) -> str:
    option, value = _kv_stated(f)
    other = "kv_dtype" if option == "kv_format" else "kv_format"
    if _engine(f).get("kv_formats") is None:
        return f"{option}: {value} under {f['engine']}: KV formats not read; the model's dtype only"
    hint = f"; {value} is --{other.replace('_', '-')} {value}" if value in _kv_held(f, other) else " only"
    start, held = f"{option}: {value} under {f['engine']}: holds ", _kv_held(f, option)
    other_only = [f"{option}: {value} under {f['engine']}{hint}"] if hint != " only" else []
    return fitting(start + ", ".join(held) + hint, *other_only,
                   start + listed(held, ROOM - len(start), see="docs/formats.md", near=value))


def _kv_no_mla(entry, value, f) -> bool:
    """Whether ``entry`` holds the KV format ``value`` on no model caching an MLA latent, and the workload's is one."""
    return bool(f.get("mla")) and value in entry.get("kv_formats_no_mla", ())


def _kv_majors(entry, value, f) -> list | None:
    """The compute capabilities' majors ``entry`` holds ``value`` on for the workload's model's head width
    (``kv_format_sm``; None: any card)."""
    majors = (entry.get("kv_format_sm") or {}).get(value)
    return None if majors is None else majors.get(str(f.get("head_dim")), majors["any"])


def _kv_runs(entry, value, f) -> bool:
    """Whether an inference engine's ``entry`` holds the KV format ``value`` on the workload's card and model (no card
    given: any)."""
    majors = _kv_majors(entry, value, f)
    on_card = majors is None or f.get("gpu") is None or (
        f.get("gpu_sm") is not None and int(f["gpu_sm"].split(".")[0]) in majors)
    return on_card and not _kv_no_mla(entry, value, f)


def _kv_holders(f, option, value) -> list:
    """The inference engines whose entries could hold the stated KV cache: the workload's, or without one every
    engine (:data:`symllm.costs.efficiency.ENGINES`) that runs inference (:func:`symllm.costs.figures.runs`) and whose
    ``kv_formats`` list it."""
    from symllm.costs import efficiency, figures  # (efficiency.json, read on first use)
    if f.get("engine") is not None:
        return [_engine(f)] if figures.runs(f["engine"], "inference") else []
    entries = [figures.engine(n) for n in efficiency.ENGINES if figures.runs(n, "inference")]
    return [e for e in entries if value in (e.get("kv_formats") or {}).get(option, ())]


def _kv_card_ok(f):
    option, value = _kv_stated(f)
    holders = _kv_holders(f, option, value) if option is not None else []
    return not holders or any(_kv_runs(e, value, f) for e in holders)


def _kv_card_line(f) -> str:
    option, value = _kv_stated(f)
    holders = _kv_holders(f, option, value)
    start = f"{option}: {value} " + (f"under {f['engine']}" if f.get("engine") else
                                     f"({', '.join(e['name'] for e in holders)})")
    fit = [e for e in holders if not _kv_no_mla(e, value, f)]
    if not fit:
        return f"{start}: its MLA backends hold none ({f['name']} is MLA)"
    from symllm.costs.accelerators import sm_needed
    card, needs = sm_needed(f["gpu"], f.get("gpu_sm"), sorted({m for e in fit for m in _kv_majors(e, value, f)}))
    width = f" at head width {f['head_dim']}" if any(str(f.get("head_dim")) in e["kv_format_sm"][value]
                                                      for e in fit) else ""
    return f"{start}: {f['gpu']} {card}; it needs sm {needs}{width}"


def _layer_split_ok(f):
    return (f["tp"] == 1) | (_engine(f).get("gpu_split") != "layer")


def _layer_split_line(f) -> str:
    return f"tp: {f['engine']} splits by layers, run in turn (--split-mode layer): give --pp {f['tp']}"


#: every workload-vs-model check, in the order a scalar check reports the first failure
CHECKS = (
    Check("pp", ("pp", "n_layers"), lambda f: f["n_layers"] is None or f["pp"] <= f["n_layers"],
          lambda f: f"pp: {f['pp']} pipeline stages for the {f['n_layers']} blocks of {f['name']}: too many"),
    Check("tp", ("tp", "n_heads", "n_kv_heads"), _tp_heads_ok,
          lambda f: f"tp: {f['tp']} ranks do not divide the {f['n_heads']} query and {f['n_kv_heads']} KV heads "
                    "(a split head cannot run)" if f["n_heads"] % f["tp"] or f["tp"] < f["n_kv_heads"] else
                    f"tp: {f['tp']} ranks are more than the {f['n_kv_heads']} KV heads but not a multiple of them "
                    "(a split head cannot run; a multiple holds one KV head a rank, replicated)"),
    Check("tp", ("tp", "expert_width"), _expert_width_ok,
          # (vLLM without --ep splits each expert over --tp x --dp ranks)
          lambda f: f"tp: {f['tp']} x dp {f['dp']} ranks do not divide an expert's {f['expert_width']} columns "
                    f"({_spread_remedy(f)})" if f.get("expert_tp") == "tp_x_dp" else
                    f"tp: {f['tp']} ranks do not divide the {f['expert_width']} columns of each routed expert of "
                    f"{f['name']} (vLLM, SGLang and Megatron split every expert over the tensor ranks; "
                    "--expert-tp whole keeps them whole)"),
    Check("tp", ("tp", "mamba_heads", "mamba_groups"), _mamba_ok,
          lambda f: f"tp: {f['tp']} ranks do not divide the {f['mamba_heads']} Mamba-2 heads of {f['name']}"
                    if f["mamba_heads"] % f["tp"] else
                    f"tp: {f['tp']} ranks do not divide the {f['mamba_groups']} Mamba-2 groups of {f['name']}"),
    Check("tp", ("tp", "engine", "split_units"), _units_ok, _units_line),
    Check("tp", ("tp", "engine"), _layer_split_ok, _layer_split_line),
    Check("compute_dtype", ("matmul_dtype", "engine"), _fp8_ok, _fp8_line),
    Check("kv_format", ("kv_format", "kv_dtype", "engine"), _kv_ok, _kv_line),
    Check("kv_format", ("kv_format", "kv_dtype", "engine", "gpu", "gpu_sm", "head_dim", "mla"), _kv_card_ok,
          _kv_card_line),
    Check("weight_format", ("weight_format", "engine", "gpu", "gpu_sm"), weight_formats.runs, weight_formats.refusal),
    Check("engine", ("tp", "engine", "hf_plan"), _hf_plan_ok,
          lambda f: f"engine: transformers has no tensor-parallel plan for {f['name']}: hf runs it at tp 1"),
    Check("expert_tp", ("engine", "expert_tp", "hf_experts"), _hf_experts_ok,
          lambda f: f"expert_tp: split (--engine hf: transformers' plan for {f['name']} keeps its routed experts "
                    "whole)"),
    Check("ep", ("ep", "experts"), _no_experts_ok,
          lambda f: f"ep: {f['ep']} expert-parallel ranks need routed experts; {f['name']} has none"),
    Check("ep", ("ep", "n_experts"), _experts_divide_ok,
          lambda f: f"ep: {f['ep']} expert-parallel ranks do not divide the {f['n_experts']} experts of "
                    f"{f['name']}"),
)


def model_fields(model) -> dict:
    """The fields :data:`CHECKS` read from a model: any config (a :class:`~symllm.arch.specs.Spec`, a
    ``ModelConfig``, a preset name or a path): :func:`config_fields` and the whole units its layouts split
    (:func:`split_units`, read off its parts); or a bare component tree (a derivation without a config:
    only whether it has routed experts is known, and the checks of what it does not know pass).

    >>> model_fields("mixtral-8x7b")["n_experts"]
    8
    """
    from symllm.arch.components import Component  # (these load SymPy; this module stays light)
    from symllm.arch.resolved import spec

    if not isinstance(model, Component):
        model = spec(model)
        return {**config_fields(model.config), "split_units": split_units(model)}
    from symllm.costs.parallel import has_experts
    return {"name": "this model", "n_layers": None, "experts": has_experts(model), "n_experts": None,
            "n_heads": None, "n_kv_heads": None, "expert_width": None, "mamba_heads": None, "mamba_groups": None,
            "split_units": None, "hf_plan": None, "hf_experts": None, "head_dim": None, "mla": None}


def config_fields(config) -> dict:
    """The fields :data:`CHECKS` read from a config's own numbers (a ``ModelConfig``, a preset name, a path or a
    config dict: :func:`symllm.arch.catalogue.resolve`), no formula built and no SymPy loaded: every field of
    :func:`model_fields` but the whole units its layouts split (``split_units``, read off the parts: a check of them
    passes here), what a door that must not load SymPy checks (``count --serve`` and
    :func:`symllm.costs.serving.check`, a count read back from kept kernels: :mod:`symllm.studies.quick`).

    >>> f = config_fields("mixtral-8x7b")
    >>> f["n_experts"], f["expert_width"], f["hf_plan"], "split_units" in f
    (8, 14336, True, False)
    """
    from symllm.arch.catalogue import resolve
    from symllm.arch.families.hf import plan_of  # (the families' registry: no SymPy)
    cfg = resolve(config)
    plan = plan_of(cfg.tp_plan)
    return {"name": cfg.name, "n_layers": cfg.n_layers, "experts": cfg.n_experts is not None,
            "n_experts": cfg.n_experts, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads,
            "expert_width": cfg.hidden_dim if cfg.n_experts else None, **mamba_fields(cfg),
            "hf_plan": plan is not None, "hf_experts": (plan or {}).get("experts"), "head_dim": cfg.head_dim,
            "mla": cfg.kv_lora_rank is not None}


def check_config(config, work) -> None:
    """Refuse, in :func:`check`'s line, a workload that the config's own numbers refuse (:func:`config_fields`: no
    SymPy; ``work`` a :class:`~symllm.costs.workloads.Workload`, the config's stated KV cache and weight format in
    it: :func:`symllm.costs.workloads.with_stated`): what :func:`symllm.costs.serving.check` asks before any number.

    >>> from symllm.costs.workloads import Workload
    >>> check_config("llama3.2-1b", Workload(pp=17))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: pp: 17 pipeline stages for the 16 blocks of llama3.2-1b: too many
    """
    _refuse({**config_fields(config), **workload_fields(work)})


def _refuse(fields: Mapping) -> None:
    """Raise the first of :data:`CHECKS` that ``fields`` (scalars) fail, in its one line."""
    failed = failures(fields)
    if failed:
        raise SymllmError(failed[0].line(fields))


def split_units(spc) -> tuple:
    """The whole units each layout (no engine: transformers' tp plan, and each of
    :data:`symllm.arch.layers.LAYOUT_ENGINES`) splits the parts of a :class:`~symllm.arch.specs.Spec`'s model into,
    where a part declares them (:meth:`symllm.arch.components.Rules.units_under`): rows of ``(engine, the units'
    config field, its value, the parts' names)``, which tensor ranks must divide under that engine.

    >>> from symllm.arch.resolved import spec
    >>> split_units(spec("deepseek-v4-flash-base"))
    (('vllm', 'o_groups', 8, ('wo_a', 'wo_b')), ('vllm', 'shared_hidden_dim', 2048, ('w1', 'w2', 'w3')))
    >>> split_units(spec("llama3.1-8b"))
    ()
    """
    from symllm.arch.symbols import SYMBOLS  # (SymPy; this module stays light)
    tree, values = spc.model(), spc.values()
    rows = []
    for engine in (None, *LAYOUT_ENGINES):
        parts: dict = {}
        for c in tree.walk():
            units = c.rules.units_under(engine)
            if units is not None and c.name not in parts.setdefault(units, []):
                parts[units].append(c.name)
        rows += [(engine, SYMBOLS[u].code if u in SYMBOLS else str(u), int(u.subs(values)), tuple(names))
                 for u, names in parts.items()]
    return tuple(rows)


def mamba_fields(config) -> dict:
    """The Mamba-2 mixer's heads and groups :data:`CHECKS` read from a config (a ``ModelConfig`` or a
    :class:`~symllm.arch.specs.Spec`): None for a model without Mamba-2 mixers (a config holds their sizes only
    with one: :mod:`symllm.arch.recurrent_sizes`).

    >>> from symllm.arch.resolved import spec
    >>> mamba_fields(spec("nemotron-h-56b")), mamba_fields(spec("llama3.1-8b"))
    ({'mamba_heads': 256, 'mamba_groups': 8}, {'mamba_heads': None, 'mamba_groups': None})
    """
    return {"mamba_heads": config.mamba_heads, "mamba_groups": config.mamba_groups}


def workload_fields(work) -> dict:
    """The fields :data:`CHECKS` read from a :class:`~symllm.costs.workloads.Workload`: its KV cache's as stated
    (``kv_format`` by name, lmdeploy's ``int8/128`` as ``int8``; ``kv_dtype`` None where it is the default,
    the activations' dtype, not stated).

    >>> from symllm.costs.workloads import Workload
    >>> f = workload_fields(Workload(kv_format="int8/128")), workload_fields(Workload(dtype="fp8"))
    >>> [(w["kv_format"], w["kv_dtype"]) for w in f]
    [('int8', None), (None, None)]
    """
    out = {k: getattr(work, k) for k in ("pp", "ep", "tp", "dp", "expert_tp", "engine", "compute_dtype",
                                         "matmul_dtype", "weight_format")}
    kv = None
    if work.kv_format is not None:
        from symllm.costs.kv_formats import check_kv_format  # (the one KV-format rule; loaded once a format is given)
        kv = check_kv_format(work.kv_format)[0]
    from symllm.costs import accelerators  # (the card's catalogue entry: gpus.json, read on first use)
    card = accelerators.of(work)
    return {**out, "expert_tp_given": "expert_tp" not in work.derived, "kv_format": kv,
            "kv_dtype": None if "kv_dtype" in work.derived else work.kv_dtype,
            "gpu": card and card.name, "gpu_sm": card and card.sm}


def check_structure(tree, work) -> None:
    """Refuse, in one line, a named stack (``work.stack``) that does not model every part of the whole
    model ``tree`` (a component tree; a part of one is left to the quantities that read the stack): what
    ``symllm count``, :func:`symllm.workload` and :class:`symllm.Sweep` refuse alike, whichever quantity
    is asked for.

    >>> from symllm.arch.resolved import spec
    >>> from symllm.costs.workloads import Workload
    >>> check_structure(spec("mistral-7b-v0.1").model(), Workload(stack="hf-sdpa"))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: stack: hf-sdpa does not model a sliding window (Mistral v0.1) yet
    """
    from symllm.costs import stacks  # (SymPy; this module stays light)
    from symllm.costs.workloads import COMPONENT_STACKS
    if work.stack not in COMPONENT_STACKS and stacks.is_whole(tree):
        stacks.check_model(work.stack, tree)


def failures(fields: Mapping) -> list[Check]:
    """The checks that ``fields`` fail somewhere (scalars: fail; arrays: fail at some point), in
    :data:`CHECKS` order. A sweep drops the points where ``check.ok(fields)`` is false, each with
    ``check.line`` of that point's fields.

    >>> failures({"name": "m", "n_layers": 2, "experts": False, "n_experts": None, "n_heads": 4, "n_kv_heads": 2,
    ...           "pp": 3, "ep": 1, "tp": 1})[0].field
    'pp'
    """
    out = []
    for c in CHECKS:
        ok = c.ok(fields)
        if not (ok.all() if hasattr(ok, "all") else ok):
            out.append(c)
    return out


def check(model, work) -> None:
    """Refuse, in one line, a workload (:class:`~symllm.costs.workloads.Workload`) that ``model`` (any
    config, or a bare component tree: :func:`model_fields`) does not allow (see the module docstring).

    >>> from symllm.arch.resolved import spec
    >>> from symllm.costs.workloads import Workload
    >>> check(spec("llama3.2-1b"), Workload(pp=17))
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: pp: 17 pipeline stages for the 16 blocks of llama3.2-1b: too many
    """
    _refuse({**model_fields(model), **workload_fields(work)})
    from symllm.arch.components import Component
    from symllm.costs.workloads import COMPONENT_STACKS
    if work.stack not in COMPONENT_STACKS:  # (the component stacks model every part: no tree to build)
        if not isinstance(model, Component):
            from symllm.arch.resolved import spec
            model = spec(model).model(work.attention)
        check_structure(model, work)


def past_window(model, tokens: int) -> int | None:
    """The positions ``model`` (any config; a bare component tree knows none) runs to when ``tokens`` is past
    them, else None: those it was trained for, or where its config states RoPE scaling, those the scaling reaches
    (its ``scaled_positions`` where more: :func:`symllm.arch.families.hf.rope_scaling`).

    >>> past_window("llama3.1-8b", 131073), past_window("llama3.1-8b", 131072)
    (131072, None)
    """
    config = _config(model)
    stated = [w for w in (getattr(config, k, None) for k in ("max_positions", "scaled_positions")) if w is not None]
    window = max(stated, default=None)  # (a component tree states none)
    return window if window is not None and tokens > window else None


def _config(model):
    if isinstance(model, (str, dict, os.PathLike)):  # a preset name, a config dict or a path (a Spec or a
        from symllm.arch.catalogue import resolve    # ModelConfig as it is; the reader loads no SymPy)
        model = resolve(model)
    return getattr(model, "config", model)


def warn_past_window(model, tokens: int) -> None:
    """Warn (:class:`~symllm.errors.ContextWarning`, one line) when ``tokens`` (a workload's ``seq + gen``; a
    sweep's largest) is past the positions the model runs to (:func:`past_window`): flagged, not refused. Past
    the trained positions of a config that states no RoPE scaling, scaling can run it; past those a config's
    RoPE scaling reaches, the line says so. ``count``, ``plan``, ``sweep`` and :func:`symllm.workload` ask it."""
    window = past_window(model, tokens)
    if window is not None:
        import warnings
        from symllm.errors import ContextWarning
        scaling = getattr(_config(model), "rope_scaling", None)
        warnings.warn(ContextWarning(f"seq + gen: {tokens:,} > {window:,} " + (
            f"positions its RoPE scaling ({scaling}) reaches (counted)" if scaling else
            "trained positions (counted: RoPE scaling can run it)")), stacklevel=3)
