"""Which weight formats each inference engine runs, on which cards, and at which peak their GEMMs run: the twin of
:mod:`symllm.costs.kv_formats` for weights (their bytes: :mod:`symllm.costs.formats`).

An inference engine's entry in efficiency.json declares ``weight_formats``: for a format (a key naming one or more of
:data:`symllm.costs.formats.FORMATS`, space-separated), the CUDA compute capabilities (gpus.json ``sm``, as it spells
them) its kernels run it on, by path:

* ``gemm``: the weights multiply in their own format, the activations quantized to it on the fly, at the card's
  dense peak of :data:`GEMM_DTYPE`'s dtype: NVFP4 (W4A4, FP4 blocks) on FP4 tensor cores (gpus.json ``fp4``), an
  FP8 format (W8A8: activations per tensor, per token or per 1x128 group) on FP8 tensor cores, whatever ``--dtype``
  says (a checkpoint's FP8 weights run FP8 GEMMs under vLLM's, SGLang's and TensorRT-LLM's kernels, not bf16 ones);
* ``weight_only``: the kernel unpacks the weights and multiplies in the activations' dtype (vLLM's Marlin FP4 and FP8
  kernels, SGLang's Marlin FP8): the ``act_dtype`` peak, the weights' stream slowed by efficiency.json's ``dequant``
  for weights of that many bits (:data:`UNPACKED`), as ``--dtype int4`` and ``int8`` are.

A card an engine runs a format it declares on by neither path is refused in one line (:func:`runs`, :func:`refusal`:
:data:`symllm.costs.checks.CHECKS`); without ``--engine``, a card no declaring engine runs it on. A format an engine
does not declare, a training engine, or no card given: neither checked nor priced here (the weights' ``--dtype``).

>>> from symllm.costs.workloads import Workload
>>> b200, h100 = Workload(gpu="b200", weight_format="nvfp4"), Workload(gpu="h100-sxm", weight_format="NVFP4")
>>> b200.matmul_dtype, h100.matmul_dtype, Workload(gpu="h200", weight_format="fp8-block", engine="vllm").matmul_dtype
('fp4', 'bf16', 'fp8')
>>> route("nvfp4", "trtllm", "9.0"), route("nvfp4", "vllm", "9.0"), route("fp8", "vllm", "8.0"), route("awq", None, "")
('none', 'weight_only', 'weight_only', None)
"""
from __future__ import annotations

from functools import lru_cache

__all__ = ["GEMM_DTYPE", "UNPACKED", "declared", "route", "matmul_dtype", "stream_dtype", "runs", "refusal"]

#: the dtype a declared format's ``gemm`` path multiplies in, its activations quantized to it on the fly: NVFP4 (16 E2M1
#: values and one E4M3 scale a block, weights and activations alike: vLLM's ``nvfp4_w4a4``, TensorRT-LLM's and
#: SGLang's ``modelopt_fp4``) on FP4 tensor cores; the FP8 formats (W8A8: vLLM's Fp8LinearMethod and its
#: W8A8BlockFp8LinearOp, SGLang's Fp8LinearMethod, TensorRT-LLM's FP8 QuantAlgos: efficiency.json's ``fp8_gemm_source``
#: and ``weight_formats_source``) on FP8 tensor cores
GEMM_DTYPE = {"nvfp4": "fp4", **{f: "fp8" for f in ("fp8", "fp8-channel", "fp8-block", "w8a8-fp8", "w8a8-fp8-tensor",
                                                     "w8a8-fp8-block")}}

#: a format's row of efficiency.json's ``dequant`` when a weight-only kernel unpacks it (its bits: 4 or 8)
UNPACKED = {f: {"fp4": "int4", "fp8": "int8"}[dtype] for f, dtype in GEMM_DTYPE.items()}


@lru_cache(maxsize=64)
def declared(engine: str) -> dict:
    """An inference engine's ``weight_formats`` by format: ``{format: {"gemm": (sm, ...), "weight_only": (sm, ...)}}``
    (empty for an engine that declares none, or a training engine).

    >>> declared("trtllm")["nvfp4"]
    {'gemm': ('10.0', '12.0'), 'weight_only': ()}
    >>> declared("llama.cpp")
    {}
    """
    from symllm.costs import figures  # (efficiency.json, read on first use)
    entry = figures.engine(engine)
    if entry.get("kind") != "inference":
        return {}
    out = {}
    for names, paths in (entry.get("weight_formats") or {}).items():
        for name in names.split():
            out[name] = {way: tuple(paths.get(way, ())) for way in ("gemm", "weight_only")}
    return out


@lru_cache(maxsize=256)
def _holders(fmt: str, engine: str | None) -> tuple:
    """``(engine, paths)`` of the engines whose declarations name ``fmt``: ``engine``'s, or every one's without it."""
    from symllm.costs import figures
    names = [engine] if engine is not None else [n for n in figures.data()["engines"] if n != "about"]
    return tuple((n, declared(n)[fmt]) for n in names if fmt in declared(n))


def route(fmt: str | None, engine: str | None, sm: str | None) -> str | None:
    """The path ``engine`` (None: any engine declaring it) runs weights in ``fmt`` by on a card of compute capability
    ``sm``: ``"gemm"``, ``"weight_only"``, ``"none"`` (declared, but not on that card: refused), or None (not declared,
    or no format: not checked).

    >>> route("nvfp4", None, "10.0"), route("nvfp4", None, None), route("fp8-block", "trtllm", "8.9")
    ('gemm', 'none', 'none')
    """
    holders = _holders(fmt, engine) if isinstance(fmt, str) and fmt in UNPACKED else ()
    if not holders:
        return None
    for way in ("gemm", "weight_only"):
        if any(sm in paths[way] for _, paths in holders):
            return way
    return "none"


def _route_of(work) -> tuple:
    """``(card, path)``: a workload's accelerator (:func:`symllm.costs.accelerators.of`) and :func:`route` of its
    weight format (stored as :func:`symllm.costs.formats.check_format` spells it), its engine and that card (no
    format, one no engine declares, or no card: None)."""
    if work.weight_format not in UNPACKED:
        return None, None  # (nothing to look up)
    from symllm.costs import accelerators
    card = accelerators.of(work)
    return card, None if card is None else route(work.weight_format, work.engine, card.sm)


def matmul_dtype(work) -> str:
    """The dtype a workload's matmuls run in, where no ``compute_dtype`` is given: its format's :data:`GEMM_DTYPE` on
    the ``gemm`` path of a card with that dtype's tensor cores (whatever ``--dtype`` says), the activations' dtype on a
    ``weight_only`` path, else the weights' (:func:`symllm.costs.accelerators.compute_dtype`).

    >>> from symllm.costs.workloads import Workload
    >>> matmul_dtype(Workload(gpu="a100-80gb", weight_format="fp8-block", act_dtype="fp16"))
    'fp16'
    >>> matmul_dtype(Workload(gpu="h200", weight_format="fp8-block", engine="sglang"))
    'fp8'
    """
    from symllm.costs import accelerators
    card, way = _route_of(work)
    if way == "gemm" and getattr(card, GEMM_DTYPE[work.weight_format]) is not None:
        return GEMM_DTYPE[work.weight_format]
    if way == "weight_only":
        return work.act_dtype
    return accelerators.compute_dtype(work.dtype, work.act_dtype)


def stream_dtype(work) -> str:
    """The row of efficiency.json's ``dequant`` a workload's weight stream reads: its format's :data:`UNPACKED` on a
    ``weight_only`` path, else its ``dtype`` (``--dtype int4`` and ``int8``: theirs; any other: none).

    >>> from symllm.costs.workloads import Workload
    >>> h100, b200 = Workload(gpu="h100-sxm", weight_format="nvfp4"), Workload(gpu="b200", weight_format="nvfp4")
    >>> stream_dtype(h100), stream_dtype(b200)
    ('int4', 'bf16')
    """
    _, way = _route_of(work)
    return UNPACKED[work.weight_format] if way == "weight_only" else work.dtype


def _stated(f) -> tuple:
    """``(format, engine, sm, gpu)`` of a check's fields."""
    return f.get("weight_format"), f.get("engine"), f.get("gpu_sm"), f.get("gpu")


def runs(f) -> bool:
    """Whether the workload's engine (or, without one, any engine declaring it) runs its weight format on its card
    (:data:`symllm.costs.checks.CHECKS`' fields; no card or no declaration: True)."""
    fmt, engine, sm, gpu = _stated(f)
    return gpu is None or route(fmt, engine, sm) != "none"


def refusal(f) -> str:
    """The one line refusing a weight format on a card (:func:`runs` false), naming the capabilities it needs.

    >>> refusal({"weight_format": "nvfp4", "engine": "trtllm", "gpu": "h100-sxm", "gpu_sm": "9.0"})
    'weight_format: nvfp4 under trtllm: h100-sxm is sm 9.0; it needs sm 10.0 or 12.0'
    """
    from symllm.costs import accelerators
    from symllm.validate import fitting
    fmt, engine, sm, gpu = _stated(f)
    holders = _holders(fmt, engine)
    under = f" under {engine}" if engine else ""
    card, needs = accelerators.sm_needed(gpu, sm, sorted({s for _, paths in holders for way in paths.values()
                                                          for s in way}, key=float))
    every = f" ({', '.join(n for n, _ in holders)})" if not engine else ""
    return fitting(f"weight_format: {fmt}{under}{every}: {gpu} {card}; it needs sm {needs}",
                   f"weight_format: {fmt}{under}: {gpu} {card}; needs sm {needs}",
                   f"weight_format: {fmt}{under}: not on {gpu}; needs sm {needs}")
