"""Accelerators by name, and roofline time on them: ``max(FLOPs / peak, bytes moved / bandwidth)``, a bound
the hardware cannot beat.

**The table** (:data:`GPUS`) gives each accelerator's vendor-published peak *dense* (no 2:4 sparsity)
tensor-core FLOP/s in bf16, fp16 and fp8, its memory bandwidth and capacity, and the datasheet each number
is read from. Units, exactly: a TFLOPS is ``10**12`` FLOP/s; bandwidth in TB/s is ``10**12`` bytes/s (GB/s:
``10**9``); memory capacity, which vendors write "80GB", is built from binary-sized DRAM stacks, so it is
taken as GiB (``80 * 2**30`` bytes; ``nvidia-smi`` shows an H100 80GB as 81,559 MiB usable). Where a
datasheet prints only the with-sparsity figure, the dense one is half of it (NVIDIA's footnote: "shown with
sparsity; specifications 1/2 lower without sparsity"). The A100 has no fp8 tensor cores: fp8 is refused
there.

**Which peak**: the matmuls' dtype. bf16 and fp16 weights multiply in their own dtype; fp8 weights in fp8
(fp8 GEMMs, as TransformerEngine and vLLM run fp8 checkpoints); int8 and int4 weights are weight-only
quantisation, dequantised in the kernel and multiplied in the activations' dtype (``act_dtype``, bf16 by
default), so theirs is the ``act_dtype`` peak. fp32 and fp64 matmuls have no entry (the table holds tensor
core peaks): refused with one line.

**Bytes moved** (:func:`bytes_moved`): the bytes a phase must read from or write to device memory at
least once, every intermediate assumed to stay on chip (which is what makes the time a lower bound):

* ``prefill`` (``b`` prompts of ``s`` tokens, nothing cached): the weights read once,
  ``β_w·N_read``; the KV cache written, ``β_kv·K(s)`` (``K``: the model's KV-cache elements); the
  logits written, ``β_a·b·s·V`` (a prefill returns every position's logits, as FLOPs count them).
* ``decode`` (one step of ``b`` sequences at context ``t``): the weights read once, ``β_w·N_read``; the
  cached keys and values read, ``β_kv·K(t)``; the new token's written, ``β_kv·K(1)``; the logits
  written, ``β_a·b·V``.

``N_read`` is the parameters a matmul multiplies by: every parameter (norm weights too), except an
untied embedding table, of which a look-up reads only its tokens' rows (``b·s·d`` elements, left out:
repeated tokens share rows, so no fixed count is a lower bound); tied, the lm_head reads the whole
matrix. Routed experts count the ``k`` a token uses (``active``): a batch usually reads more, so for a
mixture of experts the bound is loose, never wrong. Attention's scores and probabilities never leave
the chip (flash attention), nor do the hidden states between layers.

**FLOPs**: the phase's matmul FLOPs (:func:`symllm.costs.phases.flops`, the workload's attention convention;
``attention="causal"`` is the tighter bound); element-wise work runs beside the tensor cores and is not
counted.

>>> gpu("h100-sxm").bf16, gpu("h100-sxm").bandwidth
(989400000000000, 3350000000000)
>>> peak_flops("a100-80gb", "int4")   # weight-only int4: bf16 matmuls
312000000000000
>>> peak_flops("a100-80gb", "fp8")
Traceback (most recent call last):
...
symllm.errors.SymllmError: dtype: a100-80gb has no fp8 tensor cores (NVIDIA A100 Tensor Core GPU datasheet lists none); use bf16 or fp16
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from symllm._lazy import module
from symllm.errors import SymllmError
from symllm.validate import choice

if TYPE_CHECKING:
    import sympy as sp

    from symllm.arch import symbols as S
else:  # the closed forms' SymPy, imported on first use: a workload (``symllm count``) reads the table without it
    sp, S = module("sympy"), module("symllm.arch.symbols")

__all__ = ["GPU", "GPUS", "GiB", "gpu", "names", "compute_dtype", "peak_flops", "values", "weights_read",
           "bytes_moved", "ridge", "decode_batch", "decode_batch_exists", "roofline"]

#: bytes in a GiB: what a vendor's memory "GB" means (DRAM stacks are binary-sized)
GiB = 2 ** 30
_T = 10 ** 12  # tera: TFLOPS and TB/s
_G = 10 ** 9   # giga: GB/s

_H100 = ("NVIDIA H100 Tensor Core GPU datasheet",
         "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet")
_H100_ARCH = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (dense figures)"
_H200 = ("NVIDIA H200 Tensor Core GPU datasheet", "https://www.nvidia.com/en-us/data-center/h200/")
_A100 = ("NVIDIA A100 Tensor Core GPU datasheet",
         "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_L40S = ("NVIDIA L40S GPU datasheet",
         "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413")
_MI300X = ("AMD Instinct MI300X accelerator data sheet",
           "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
           "amd-instinct-mi300x-data-sheet.pdf")


@dataclass(frozen=True)
class GPU:
    """One accelerator: peak dense FLOP/s per dtype, bandwidth (bytes/s), capacity (bytes), its source.

    >>> g = gpu("mi300x")
    >>> g.bf16, g.fp8, g.bandwidth, g.memory == 192 * GiB
    (1307400000000000, 2614900000000000, 5300000000000, True)
    """

    #: the name ``--gpu`` takes
    name: str
    #: the product as the vendor names it
    title: str
    #: peak dense tensor-core FLOP/s in bf16, fp16 and fp8 (None: no fp8 tensor cores)
    bf16: int
    fp16: int
    fp8: int | None
    #: peak memory bandwidth, bytes/s (10**12 per TB/s)
    bandwidth: int
    #: memory capacity, bytes (the vendor's "GB" read as GiB)
    memory: int
    #: the datasheet's title and address
    source: str
    url: str
    #: how the numbers are read from it (the vendor's own words, dense vs sparse)
    note: str = ""

    def peak(self, dtype: str) -> int:
        """Peak dense FLOP/s of matmuls in ``dtype`` (bf16, fp16, fp8)."""
        if dtype not in ("bf16", "fp16", "fp8"):
            raise SymllmError(f"dtype: roofline time needs bf16, fp16 or fp8 matmuls, got {dtype!r} "
                              f"(the table holds tensor-core peaks only)")
        value = getattr(self, dtype)
        if value is None:
            raise SymllmError(f"dtype: {self.name} has no {dtype} tensor cores ({self.source} lists none); "
                              f"use bf16 or fp16")
        return value


#: name -> GPU: the shipped table (vendor-published numbers; see the module docstring for units)
GPUS: dict[str, GPU] = {g.name: g for g in (
    GPU("h100-sxm", "NVIDIA H100 SXM5 80GB", bf16=989_400 * _T // 1000, fp16=989_400 * _T // 1000,
        fp8=1_978_900 * _T // 1000, bandwidth=3_350 * _G, memory=80 * GiB, source=_H100[0], url=_H100[1],
        note=f"datasheet: BF16/FP16 1,979 and FP8 3,958 TFLOPS with sparsity, 3.35 TB/s, 80GB HBM3; "
             f"dense 989.4 and 1,978.9 TFLOPS from the {_H100_ARCH}"),
    GPU("h100-pcie", "NVIDIA H100 PCIe 80GB", bf16=756 * _T, fp16=756 * _T, fp8=1_513 * _T,
        bandwidth=2_000 * _G, memory=80 * GiB, source=_H100[0], url=_H100[1],
        note=f"datasheet: BF16/FP16 1,513 and FP8 3,026 TFLOPS with sparsity, 2 TB/s, 80GB HBM2e; "
             f"dense 756 and 1,513 TFLOPS from the {_H100_ARCH}"),
    GPU("h200", "NVIDIA H200 SXM 141GB", bf16=989_400 * _T // 1000, fp16=989_400 * _T // 1000,
        fp8=1_978_900 * _T // 1000, bandwidth=4_800 * _G, memory=141 * GiB, source=_H200[0], url=_H200[1],
        note="datasheet: BF16/FP16 1,979 and FP8 3,958 TFLOPS with sparsity (half without), 4.8 TB/s, "
             "141GB HBM3e; the same GH100 compute at the same clocks as the H100 SXM (dense 989.4, 1,978.9)"),
    GPU("a100-40gb", "NVIDIA A100 40GB (SXM4 or PCIe)", bf16=312 * _T, fp16=312 * _T, fp8=None,
        bandwidth=1_555 * _G, memory=40 * GiB, source=_A100[0], url=_A100[1],
        note="datasheet: BF16/FP16 Tensor Core 312 TFLOPS (624 with sparsity), 1,555 GB/s, 40GB HBM2; no FP8"),
    GPU("a100-80gb", "NVIDIA A100 80GB SXM4", bf16=312 * _T, fp16=312 * _T, fp8=None,
        bandwidth=2_039 * _G, memory=80 * GiB, source=_A100[0], url=_A100[1],
        note="datasheet: BF16/FP16 Tensor Core 312 TFLOPS (624 with sparsity), 2,039 GB/s, 80GB HBM2e; no FP8"),
    GPU("a100-80gb-pcie", "NVIDIA A100 80GB PCIe", bf16=312 * _T, fp16=312 * _T, fp8=None,
        bandwidth=1_935 * _G, memory=80 * GiB, source=_A100[0], url=_A100[1],
        note="datasheet: BF16/FP16 Tensor Core 312 TFLOPS (624 with sparsity), 1,935 GB/s, 80GB HBM2e; no FP8"),
    GPU("l40s", "NVIDIA L40S 48GB", bf16=362_050 * _T // 1000, fp16=362_050 * _T // 1000, fp8=733 * _T,
        bandwidth=864 * _G, memory=48 * GiB, source=_L40S[0], url=_L40S[1],
        note="datasheet: BF16/FP16 Tensor 362.05 | 733 TFLOPS and FP8 733 | 1,466 TFLOPS (dense | with "
             "sparsity), 864 GB/s, 48GB GDDR6 with ECC"),
    GPU("mi300x", "AMD Instinct MI300X 192GB", bf16=1_307_400 * _T // 1000, fp16=1_307_400 * _T // 1000,
        fp8=2_614_900 * _T // 1000, bandwidth=5_300 * _G, memory=192 * GiB, source=_MI300X[0], url=_MI300X[1],
        note="data sheet: peak BF16/FP16 1,307.4 TFLOPS and FP8 2,614.9 TFLOPS (dense; twice with sparsity), "
             "5.3 TB/s, 192GB HBM3"),
)}


def names() -> tuple[str, ...]:
    """The accelerator names ``--gpu`` takes, in table order.

    >>> names()[:3]
    ('h100-sxm', 'h100-pcie', 'h200')
    """
    return tuple(GPUS)


def gpu(name) -> GPU:
    """The :class:`GPU` called ``name`` (a GPU is returned as it is).

    >>> gpu("l40s").memory // GiB
    48
    >>> gpu("h100")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: gpu: unknown 'h100' (known: h100-sxm, h100-pcie, h200, a100-40gb, a100-80gb, a100-80gb-pcie, l40s, mi300x)
    """
    if isinstance(name, GPU):
        return name
    return GPUS[choice("gpu", name, GPUS)]


def compute_dtype(dtype: str = "bf16", act_dtype: str | None = None) -> str:
    """The dtype the matmuls run in for weights in ``dtype`` (see the module docstring): the weights' own
    for bf16, fp16 and fp8; ``act_dtype`` (default bf16) for int8 and int4 (weight-only quantisation).

    >>> compute_dtype("fp8"), compute_dtype("int4"), compute_dtype("int8", "fp16")
    ('fp8', 'bf16', 'fp16')
    """
    if dtype in ("int8", "int4"):
        return act_dtype or "bf16"
    return dtype


def peak_flops(name, dtype: str = "bf16", act_dtype: str | None = None) -> int:
    """Peak dense FLOP/s of accelerator ``name`` for weights in ``dtype`` (:func:`compute_dtype` picks the
    matmuls' dtype).

    >>> peak_flops("h100-sxm"), peak_flops("h100-sxm", "fp8"), peak_flops("mi300x", "int8")
    (989400000000000, 1978900000000000, 1307400000000000)
    >>> peak_flops("h100-sxm", "fp32")
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: dtype: roofline time needs bf16, fp16 or fp8 matmuls, got 'fp32' (the table holds tensor-core peaks only)
    """
    return gpu(name).peak(compute_dtype(dtype, act_dtype))


def values(name, dtype: str = "bf16", act_dtype: str | None = None) -> dict:
    """The hardware symbols bound: ``P`` (peak FLOP/s in the matmuls' dtype) and ``B_mem`` (bytes/s).

    >>> values("a100-40gb")
    {P: 312000000000000, B_mem: 1555000000000}
    """
    return {S.P: peak_flops(name, dtype, act_dtype), S.B_mem: gpu(name).bandwidth}


# --------------------------------------------------------------------------- closed forms

def weights_read(mdl) -> sp.Expr:
    """``N_read``: the parameters a forward pass's matmuls read (see the module docstring): the model's
    ``active`` parameters less an untied embedding table.

    >>> from symllm.arch.components import model
    >>> weights_read(model(tied=True)) - model(tied=True).total("params")
    0
    >>> sp.expand(model().total("params") - weights_read(model()))
    V*d
    """
    active = mdl.total("active")
    if mdl.child("lm_head").total("params") == 0:  # tied: the lm_head multiplies by the whole table
        return active
    return active - mdl.child("embedding").total("active")


def bytes_moved(mdl, phase: str) -> sp.Expr:
    """Bytes one ``prefill`` or one ``decode`` step must move to or from device memory (module docstring).

    >>> from symllm.arch.components import model
    >>> sp.expand(bytes_moved(model(tied=True), "decode")).coeff(S.t)
    2*L*b*beta_kv*d_h*n_kv
    >>> sp.expand(bytes_moved(model(), "prefill")).coeff(S.beta_a)
    V*b*s
    """
    kv = mdl.total("kv_cache")  # elements held after b sequences of s new tokens at context t
    weights = S.beta_w * weights_read(mdl)
    if phase == "prefill":
        return weights + S.beta_kv * kv.subs(S.t, 0) + S.beta_a * S.b * S.s * S.V
    if phase == "decode":
        new = kv.subs({S.s: 1, S.t: 0})  # the new token's keys and values, written
        cached = kv.subs(S.s, 1) - new    # those already cached at context t, read
        return weights + S.beta_kv * (cached + new) + S.beta_a * S.b * S.V
    raise SymllmError(f"phase: roofline bytes are for prefill or decode, got {phase!r}")


def ridge() -> sp.Expr:
    """The ridge point, FLOP per byte: the arithmetic intensity above which a kernel is compute-bound.

    >>> ridge(), ridge().subs(values("h100-sxm"))
    (P/B_mem, 19788/67)
    """
    return S.P / S.B_mem


def decode_batch(flops: sp.Expr, moved: sp.Expr) -> sp.Expr:
    """The batch ``b*`` at which a decode step turns compute-bound: FLOPs ``b·f`` (proportional to the
    batch) and bytes ``W + b·k`` (weights, then per sequence) meet, ``b·f / P = (W + b·k) / B_mem``:
    ``b* = W·P / (f·B_mem − k·P)``. Where ``f·B_mem ≤ k·P`` (long contexts: each sequence's cache
    costs more time to read than its FLOPs take) no batch is compute-bound.

    >>> decode_batch(2 * S.N * S.b, S.N * S.beta_w + S.b * S.beta_kv)
    N*P*beta_w/(2*B_mem*N - P*beta_kv)
    """
    per_sequence = sp.expand(flops / S.b)
    if S.b in per_sequence.free_symbols:
        raise SymllmError("flops: a decode step's FLOPs must be proportional to the batch")
    expanded = sp.expand(moved)
    fixed, slope = expanded.subs(S.b, 0), sp.expand(expanded.coeff(S.b))
    if sp.expand(fixed + slope * S.b - expanded) != 0:
        raise SymllmError("bytes: a decode step's bytes must be affine in the batch")
    return fixed * S.P / (per_sequence * S.B_mem - slope * S.P)


def decode_batch_exists(expr: sp.Expr, vals: dict) -> bool:
    """Whether the :func:`decode_batch` closed form ``expr`` has a crossing at ``vals``: its denominator
    ``f·B_mem − k·P`` is positive. Where it is not, each sequence's bytes (mostly its cached keys and values,
    read every step) take at least as long as its FLOPs, so every batch is memory-bound and the formula's
    value (negative, or a division by zero) means nothing.

    >>> from symllm import api
    >>> from symllm.costs.phases import flops
    >>> from symllm.costs.workloads import Workload
    >>> mdl = api.spec("llama3.1-8b").model()
    >>> expr = decode_batch(flops(mdl, "decode"), bytes_moved(mdl, "decode"))
    >>> vals = lambda t: api.values("llama3.1-8b", Workload(context=t, gpu="h100-sxm"))
    >>> decode_batch_exists(expr, vals(16)), decode_batch_exists(expr, vals(2048))
    (True, False)
    """
    from symllm.numbers.kernels import evaluate  # evaluate loads with costs; this module stays light for workload.py

    _, denominator = sp.fraction(sp.together(expr))
    return evaluate(denominator, vals) > 0


def _number(value) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)


def roofline(mdl, work, vals: dict, exprs: dict) -> dict:
    """The ``time`` group of :func:`symllm.costs.phases.workload` for ``work.gpu``: ``mdl`` is the model
    component, ``vals`` symbol -> number (config, workload and :func:`values`), ``exprs`` the closed forms
    of :func:`symllm.costs.phases.quantities` (``flops``: ``prefill``, ``decode_token``; ``memory``:
    ``inference_peak``).

    * ``gpu``, ``title``, ``peak_flops`` (FLOP/s, in ``peak_dtype``: :func:`compute_dtype`),
      ``bandwidth`` (bytes/s), ``capacity`` (bytes), ``ridge`` (``P / B_mem``, FLOP per byte);
    * ``prefill_s`` and ``decode_token_s``: ``max(FLOPs / P, bytes / B_mem)`` with the phase's matmul
      FLOPs (``prefill``: ``b`` prompts of ``s`` tokens; ``decode_token``: one step of the ``b``
      sequences at context ``t``) and its :func:`bytes_moved` (``prefill_bytes``,
      ``decode_token_bytes``, exact); ``prefill_bound`` and ``decode_token_bound`` say which term is
      larger (``compute`` on a tie);
    * ``tokens_per_s``: ``b / decode_token_s``, the batch's generation rate at context ``t``;
    * ``fits``: ``memory.inference_peak <= capacity``; ``max_batch``: the largest ``b`` whose
      inference peak fits (0: not one sequence), by exact search over the closed form (it grows with
      ``b``); ``compute_bound_batch``: the smallest ``b`` whose decode step is compute-bound, the
      ceiling of :func:`decode_batch` (None: no batch is).

    Seconds, rates and the ridge are floats (of exact fractions); bytes are exact.

    >>> from symllm.costs.phases import workload
    >>> t = workload("llama3.1-8b", gpu="h100-sxm")["time"]
    >>> t["decode_token_bound"], t["fits"], round(t["tokens_per_s"]), t["max_batch"]
    ('memory', True, 219, 83)
    """
    from symllm.numbers.kernels import evaluate  # evaluate loads with costs; this module stays light for workload.py

    g = gpu(work.gpu)
    peak = vals[S.P]
    bandwidth = vals[S.B_mem]
    out = {"gpu": g.name, "title": g.title, "peak_flops": peak,
           "peak_dtype": compute_dtype(work.dtype, work.act_dtype), "bandwidth": bandwidth,
           "capacity": g.memory, "ridge": float(Fraction(peak, bandwidth))}
    seconds = {}
    for name, phase, key in (("prefill", "prefill", "prefill"), ("decode_token", "decode", "decode_token")):
        flops = _number(evaluate(exprs["flops"][key], vals))
        moved = evaluate(bytes_moved(mdl, phase), vals)
        compute, memory = flops / peak, _number(moved) / bandwidth
        seconds[name] = max(compute, memory)
        out[f"{name}_bytes"] = moved
        out[f"{name}_s"] = _seconds(seconds[name])
        out[f"{name}_bound"] = "compute" if compute >= memory else "memory"
    out["tokens_per_s"] = float(work.batch / seconds["decode_token"])
    peak_at = exprs["memory"]["inference_peak"]
    out["fits"] = bool(evaluate(peak_at, vals) <= g.memory)
    out["max_batch"] = _largest_batch(lambda batch: evaluate(peak_at, {**vals, S.b: batch}) <= g.memory)
    crossing = decode_batch(exprs["flops"]["decode_token"], bytes_moved(mdl, "decode"))
    out["compute_bound_batch"] = (max(1, math.ceil(evaluate(crossing, vals)))
                                  if decode_batch_exists(crossing, vals) else None)
    return out


def _seconds(value):
    """A time as a float, or the exact Fraction when it is past a float's range (a 300-digit --seq: float()
    raised OverflowError); JSON prints that one as "p/q", the command line in scientific notation.

    >>> _seconds(Fraction(3, 2)), _seconds(Fraction(10 ** 400, 3)) == Fraction(10 ** 400, 3)
    (1.5, True)
    """
    try:
        return float(value)
    except OverflowError:
        return Fraction(value)


def _largest_batch(fits) -> int:
    """The largest ``b >= 1`` with ``fits(b)`` for a predicate that holds up to some batch and fails past
    it (the inference peak grows with the batch); 0 when ``fits(1)`` fails."""
    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
        if high > 2 ** 62:
            raise SymllmError("batch: the inference peak does not grow with the batch; no largest batch")
    while high - low > 1:  # fits(low), not fits(high)
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low
