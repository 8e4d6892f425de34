"""Memory per component: what each part of the model holds of each memory kind, the numbers behind a
breakdown plot (:func:`symllm.present.plots.memory`). Each part's bytes are its own closed form
(:func:`symllm.costs.phases.memory` of the component) times how often it occurs, evaluated for the
workload; the rules stay in :mod:`~symllm.costs.phases`.

>>> m = memory_by_component("llama3.1-8b", seq=1024)
>>> m["block/feed_forward"]["weights"] == 32 * 3 * 4096 * 14336 * 2
True
>>> sum(part["kv_cache"] for part in m.values()) == 2 * 32 * 8 * 128 * 1024 * 2
True
"""
from __future__ import annotations

from symllm.arch import resolved
from symllm.costs import phases
from symllm.costs.workloads import COMPONENT_STACKS, Workload
from symllm.errors import SymllmError
from symllm.numbers.kernels import evaluate
from symllm.validate import short, with_list

__all__ = ["KINDS", "memory_by_component"]

#: the memory kinds that add up over components (a peak does not: it is a maximum over moments)
KINDS = ("weights", "kv_cache", "activations", "training_states")


def memory_by_component(config, work: Workload | None = None, *, kinds=KINDS, **options) -> dict:
    """``{part: {kind: bytes}}`` for the model's parts two levels down (``embedding``,
    ``block/attention``, ``block/feed_forward``, ``norm``, ``lm_head``; a model with blocks of several
    kinds has a row per kind of block), each summed over the blocks that hold it. Exact ints (a
    ``Fraction`` where bytes are not whole). Activations are those a training forward saves without
    recomputation (``--recompute`` keeps checkpoints of whole blocks: refused here); the stacks are the
    components' own (``fused``, ``eager``).

    >>> m = memory_by_component("llama3.2-1b", kinds=("weights",))
    >>> m["embedding"]["weights"], m["lm_head"]["weights"]
    (525336576, 0)
    """
    work = Workload.of(work, **options)
    for kind in kinds:
        if kind not in KINDS:
            raise SymllmError(with_list(f"kind: {short(kind, 20)} does not add up over components (one of: ", KINDS,
                                        see="shares.KINDS", near=kind))
    if work.stack not in COMPONENT_STACKS:
        raise SymllmError(f"stack: memory per component is modelled for {', '.join(COMPONENT_STACKS)}, "
                          f"not {work.stack}")
    if work.recompute != "none" and "activations" in kinds:
        raise SymllmError("recompute: activations per component are those saved without recomputation")
    spec = resolved.spec(config)
    vals = {**spec.values(), **work.values()}
    out = {}
    for child in phases.model_of(spec, work).children:
        parts = [(f"{child.name}/{g.name}", child.repeat * g.repeat, g) for g in child.children] \
            if child.children else [(child.name, child.repeat, child)]
        for path, repeat, comp in parts:
            out[path] = {kind: evaluate(repeat * phases.memory(comp, kind, attention=work.attention,
                                                               zero_stage=work.zero_stage, stack=work.stack),
                                        vals) for kind in kinds}
    return out
