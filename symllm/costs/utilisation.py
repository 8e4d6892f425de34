"""Utilisation: the one rule for a fraction of peak (:func:`of_peak`: FLOPs done in a time by some accelerators
over their dense peak in the compute dtype), and the model-FLOPs utilisation of a measured training run
(:func:`mfu`): its tokens per second times the model's training FLOPs per token
(:func:`symllm.costs.phases.workload`'s ``training_step``, nothing recomputed) over the accelerator's peak
(docs/conventions.md, "MFU"). The MFU symllm predicts for a workload, bound and expected, is the ``time``
group's (:func:`symllm.costs.hardware.roofline`, :mod:`symllm.costs.efficiency`) and a plan's
(:mod:`symllm.studies.plans`), each through :func:`of_peak`.
"""
from __future__ import annotations

from fractions import Fraction

from symllm._lazy import module
from symllm.costs import accelerators
from symllm.errors import SymllmError

# read on first use: hardware and efficiency, which phases and workloads import, time with of_peak
phases, workloads = module("symllm.costs.phases"), module("symllm.costs.workloads")

__all__ = ["of_peak", "mfu"]


def of_peak(flops, seconds, gpus, peak):
    """The fraction of peak: ``flops`` done in ``seconds`` by ``gpus`` accelerators over their dense peak
    ``peak`` FLOP/s each (MFU with model FLOPs, nothing recomputed; HFU with the FLOPs run, recomputation
    included). Exact for Fractions, element-wise for arrays.

    >>> of_peak(Fraction(3), Fraction(1, 2), 2, 4)
    Fraction(3, 4)
    """
    return flops / (seconds * gpus * peak)


def mfu(config, tokens_per_second: float, peak_flops, *, seq: int, attention: str = "dense",
        dtype: str = "bf16") -> float:
    """Model-FLOPs utilisation: achieved training matmul FLOP/s over the hardware peak.

    Achieved = ``tokens_per_second`` × training FLOPs per token at sequence length ``seq`` (3 × the
    forward's matmul FLOPs; recomputation is not model FLOPs, so never counted). ``peak_flops`` is the
    peak FLOP/s, or an accelerator's name in :data:`symllm.costs.accelerators.GPUS`: its peak dense FLOP/s for
    matmuls in ``dtype`` (bf16 unless given; :func:`symllm.costs.accelerators.peak_flops`).

    >>> round(mfu("llama3.1-8b", 4000, 989e12, seq=8192), 3)
    0.234
    >>> round(mfu("llama3.1-8b", 4000, "h100-sxm", seq=8192), 3)
    0.234
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
    work = workloads.Workload.of(batch=1, seq=seq, attention=attention)
    per_token = Fraction(phases.workload(config, work)["flops"]["training_step"], work.seq)
    return float(of_peak(per_token * Fraction(tokens_per_second), 1, 1, Fraction(peak_flops)))
