"""Whether a workload fits a model: the one statement of every workload-vs-model check, for one config
(:func:`check`, which raises) and for a sweep's arrays (:func:`failures`, which gives masks).

What is refused, and why (each a one-line :class:`~symllm.errors.SymllmError` naming its field):

* ``pp``: more pipeline stages than blocks (a stage holds at least one block);
* ``ep``: expert parallelism on a model without routed experts, or ``ep`` ranks that do not divide
  the experts (DeepSpeed-MoE and Megatron-LM refuse it too; :mod:`symllm.costs.parallel`).

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

from dataclasses import dataclass
from typing import Callable, Mapping

from symllm.errors import SymllmError

__all__ = ["Check", "CHECKS", "check", "failures", "model_fields", "workload_fields"]


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


def _experts_divide_ok(f):
    return f["n_experts"] is None or f["n_experts"] % f["ep"] == 0


#: every workload-vs-model check, in the order a scalar check reports the first failure
CHECKS = (
    Check("pp", ("pp", "n_layers"), lambda f: f["n_layers"] is None or f["pp"] <= f["n_layers"],
          lambda f: f"pp: {f['pp']} pipeline stages for the {f['n_layers']} blocks of {f['name']}: too many"),
    Check("ep", ("ep", "experts"), _no_experts_ok,
          lambda f: f"ep: {f['ep']} expert-parallel ranks need routed experts; {f['name']} has none"),
    Check("ep", ("ep", "n_experts"), _experts_divide_ok,
          lambda f: f"ep: {f['ep']} expert-parallel ranks do not divide the {f['n_experts']} experts of "
                    f"{f['name']}"),
)


def model_fields(model) -> dict:
    """The fields :data:`CHECKS` read from a model: any config (a :class:`~symllm.arch.specs.Spec`, a
    ``ModelConfig``, a preset name or a path), or a bare component tree (a derivation without a config:
    only whether it has routed experts is known, and the checks of what it does not know pass).

    >>> model_fields("mixtral-8x7b")["n_experts"]
    8
    """
    from symllm.arch.components import Component  # (these load SymPy; this module stays light)
    from symllm.arch.resolved import spec

    if not isinstance(model, Component):
        model = spec(model)
        return {"name": model.name, "n_layers": model.n_layers, "experts": model.n_experts is not None,
                "n_experts": model.n_experts}
    from symllm.costs.parallel import has_experts
    return {"name": "this model", "n_layers": None, "experts": has_experts(model), "n_experts": None}


def workload_fields(work) -> dict:
    """The fields :data:`CHECKS` read from a :class:`~symllm.costs.workloads.Workload`."""
    return {k: getattr(work, k) for k in ("pp", "ep")}


def failures(fields: Mapping) -> list[Check]:
    """The checks that ``fields`` fail somewhere (scalars: fail; arrays: fail at some point), in
    :data:`CHECKS` order. A sweep drops the points where ``check.ok(fields)`` is false, each with
    ``check.line`` of that point's fields.

    >>> failures({"name": "m", "n_layers": 2, "experts": False, "n_experts": None, "pp": 3, "ep": 1})[0].field
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
    fields = {**model_fields(model), **workload_fields(work)}
    failed = failures(fields)
    if failed:
        raise SymllmError(failed[0].line(fields))
