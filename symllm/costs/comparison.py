"""Several models side by side under one workload: their parameters, FLOPs per token, KV cache per
token, every memory kind and, on a named accelerator, whether they fit and their times, each as its roofline bound
and as expected (``symllm count A B C``).

Every number is :func:`symllm.arch.resolved.params`' or :func:`symllm.costs.phases.workload`'s for that
model (per token: divided exactly, a ``Fraction`` where it does not divide); nothing is computed anew.

>>> out = compare(["llama3.1-8b", "llama2-7b"], batch=1, seq=1)
>>> [m["params"] for m in out["models"].values()]
[8030261248, 6738415616]
>>> out["models"]["llama2-7b"]["kv_cache_per_token"]  # 2 L n_kv d_h bytes of bf16: 2*32*32*128*2
524288
"""
from __future__ import annotations

from fractions import Fraction

from symllm.arch import resolved
from symllm.costs import phases
from symllm.errors import SymllmError

__all__ = ["ROWS", "TIMES", "compare"]

#: the times a comparison shows on an accelerator, each as ``workload()["time"]`` has it (the bound) and as its
#: ``expected`` group has it (the key ``expected_`` + this one): count's rows of one model, the same numbers
TIMES = (("prefill_s", "prefill", "seconds"), ("decode_token_s", "decode step", "seconds"),
         ("tokens_per_s", "decode tokens/s", "rate"), ("training_step_s", "training step", "seconds"),
         ("mfu", "training MFU", "share"))

#: the rows of a comparison, in order: key, what it is, its unit (``count`` parameters, ``flops``, ``bytes``,
#: ``flag`` yes/no, ``seconds``, ``rate`` per second, ``share`` of peak); memory rows follow
#: :data:`symllm.costs.phases.MEMORY_KINDS` as ``workload()`` gives them
ROWS = (("params", "parameters", "count"), ("active", "active parameters (per token)", "count"),
        ("flops_per_token", "decode FLOPs per token (at context t)", "flops"),
        ("prefill_flops", "prefill FLOPs (b x s tokens)", "flops"),
        ("kv_cache_per_token", "KV cache per token (bytes)", "bytes"),
        ("weights", "weights", "bytes"), ("kv_cache", "KV cache (b x (s + n) tokens)", "bytes"),
        ("state_cache", "state cache (b sequences)", "bytes"),
        ("training_states", "training states", "bytes"), ("activations", "activations", "bytes"),
        ("inference_peak", "inference peak", "bytes"), ("training_peak", "training peak", "bytes"),
        ("fits", "inference peak fits", "flag"), ("max_batch", "largest batch that fits", "count"),
        ("training_fits", "training peak fits", "flag"),
        *((key, f"{label}, {kind}", unit) for key, label, unit in TIMES
          for key, kind in ((key, "bound"), (f"expected_{key}", "expected"))))


def compare(models, *, vocab_size: int | None = None, **workload) -> dict:
    """Each of ``models`` (preset names, config paths, configs) under one workload (the
    :class:`~symllm.costs.workloads.Workload` fields): ``{"workload": ..., "models": {name: {row: value}}}``
    with the keys of :data:`ROWS` (the fit and time rows only with an accelerator, ``gpu=``; a time is None where
    its peak does not fit).

    >>> row = compare(["llama3.2-1b"], gpu="h100-sxm")["models"]["llama3.2-1b"]
    >>> row["decode_token_s"] < row["expected_decode_token_s"]
    True

    >>> compare(["llama3.2-1b", "llama3.2-1b"])
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: model: llama3.2-1b is given twice
    """
    out: dict = {"workload": None, "models": {}}
    for model in models:
        spec = resolved.spec(model, vocab_size=vocab_size)
        if spec.name in out["models"]:
            raise SymllmError(f"model: {spec.name} is given twice")
        counts, work = resolved.params(spec), phases.workload(spec, **workload)
        w = work["workload"]
        out["workload"] = w
        row = {"params": counts["total"], "active": counts["active"],
               "flops_per_token": _per(work["flops"]["decode_token"], w["batch"]),
               "prefill_flops": work["flops"]["prefill"],
               "kv_cache_per_token": _per(work["memory"]["kv_cache"], w["batch"] * (w["seq"] + w["gen"])),
               **{k: v for k, v in work["memory"].items()}}
        if "time" in work:
            t = work["time"]
            row.update(fits=t["fits"], max_batch=t["max_batch"], training_fits=t["training_fits"])
            row.update({key: t[key] for key, _, _ in TIMES})
            row.update({f"expected_{key}": t["expected"][key] for key, _, _ in TIMES})
        out["models"][spec.name] = row
    return out


def _per(total, n: int):
    """``total / n`` exactly: an int where it divides, else a Fraction."""
    q = Fraction(total) / n
    return q.numerator if q.denominator == 1 else q
