"""Utilisation: the one rule for a fraction of peak (:func:`of_peak`: FLOPs done in a time by some accelerators
over their dense peak in the compute dtype), the one definition of its numerator (:func:`step_flops`: model
FLOPs for MFU, hardware FLOPs for HFU, the attention core over its causal pairs), and the model-FLOPs
utilisation of a measured training run (:func:`mfu`) (docs/conventions.md, "MFU"). The MFU symllm predicts for
a workload, bound and expected, is the ``time`` group's (:func:`symllm.costs.hardware.roofline`,
:mod:`symllm.costs.efficiency`) and a plan's (:mod:`symllm.studies.plans`), each :func:`step_flops` through
:func:`of_peak`.
"""
from __future__ import annotations

from fractions import Fraction

from symllm._lazy import module
from symllm.costs import accelerators
from symllm.errors import SymllmError

# read on first use: hardware and efficiency, which phases and workloads import, time with of_peak
phases, workloads = module("symllm.costs.phases"), module("symllm.costs.workloads")

__all__ = ["of_peak", "step_flops", "mfu"]


def of_peak(flops, seconds, gpus, peak):
    """The fraction of peak: ``flops`` done in ``seconds`` by ``gpus`` accelerators over their dense peak
    ``peak`` FLOP/s each (MFU with model FLOPs, nothing recomputed; HFU with the FLOPs run, recomputation
    included). Exact for Fractions, element-wise for arrays.

    >>> of_peak(Fraction(3), Fraction(1, 2), 2, 4)
    Fraction(3, 4)
    """
    return flops / (seconds * gpus * peak)


def step_flops(spec, recompute: bool | str = False):
    """The numerator of every MFU and HFU, declared once: the closed form of a training step's matmul FLOPs of
    ``spec``'s whole model (a :class:`symllm.arch.specs.Spec`) over ``b`` sequences of ``s`` tokens, every
    position's logits, **the attention core over its causal pairs** (``s(s+1)/2`` a sequence, a window's or a
    sparse selection's as its mask keeps them; Megatron-LM's convention, where PaLM's counts the whole rectangle:
    docs/conventions.md), whatever convention a workload's FLOP counts take (``--attention``). ``recompute``
    False: **model FLOPs** (MFU's: the forward and backward of what has a backward, a part that runs forward only
    once, nothing recomputed); a recomputation policy (:func:`symllm.costs.selective.policy`): **hardware FLOPs**
    (HFU's: what that policy runs, its recomputed forward or linears too).

    >>> import sympy as sp
    >>> from symllm.arch.resolved import spec
    >>> from symllm.costs.phases import flops
    >>> llama = spec("llama3.2-1b")
    >>> sp.factor(flops(llama.model(), "training") - step_flops(llama))  # the dense rectangle's masked pairs
    6*L*b*d_h*n_h*s*(s - 1)
    >>> sp.factor(step_flops(llama, True) / step_flops(llama))  # full recomputation: a fourth pass
    4/3
    """
    return phases.flops(spec.model("causal"), "training", recompute=recompute)


def mfu(config, tokens_per_second: float, peak_flops, *, seq: int, dtype: str = "bf16") -> float:
    """Model-FLOPs utilisation of a measured training run: achieved model FLOP/s over the hardware peak.

    Achieved = ``tokens_per_second`` × :func:`step_flops` (model FLOPs) per token at sequence length ``seq``
    (3 × the forward's matmul FLOPs, the attention core over its causal pairs; recomputation is not model
    FLOPs, so never counted). ``peak_flops`` is the peak FLOP/s, or an accelerator's name in
    :data:`symllm.costs.accelerators.GPUS`: its peak dense FLOP/s for matmuls in ``dtype`` (bf16 unless given;
    :func:`symllm.costs.accelerators.peak_flops`).

    >>> round(mfu("llama3.1-8b", 4000, 989e12, seq=8192), 3)
    0.208
    >>> round(mfu("llama3.1-8b", 4000, "h100-sxm", seq=8192), 3)
    0.208
    >>> mfu("llama3.1-8b", 4000, 989e12, seq=None)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: seq: mfu needs the training sequence length, got None
    """
    if isinstance(peak_flops, str):
        peak_flops = accelerators.peak_flops(peak_flops, dtype)
    if not tokens_per_second > 0 or not peak_flops > 0:
        raise SymllmError(f"mfu: tokens_per_second and peak_flops must be positive, got "
                          f"{tokens_per_second!r}, {peak_flops!r}")
    if seq is None:  # Workload reads None as "not given" (2048); MFU needs the run's own length
        raise SymllmError("seq: mfu needs the training sequence length, got None")
    from symllm.numbers.kernels import evaluate

    spec, work = phases.resolved_workload(config, workloads.Workload.of(batch=1, seq=seq))
    step = evaluate(step_flops(spec).subs(dict(spec.model().definitions)), {**spec.values(), **work.values()})
    per_token = Fraction(step, work.seq)
    return float(of_peak(per_token * Fraction(tokens_per_second), 1, 1, Fraction(peak_flops)))
