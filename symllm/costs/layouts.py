"""Which tensor-parallel layout each kind of quantity is in: inference quantities (weights, KV cache, inference peak,
prefill and decode times, serving) in the inference engine's, training quantities (training states, activations,
training peak, bytes sent, the training step's time) in the training engine's, whatever ``--engine`` names
(:func:`kind_layout`), and the output's fields that name them (:func:`tp_layouts`). The engine of each kind's
conventions is chosen beside it (:func:`symllm.costs.figures.engine_for`): an inference engine (MLC, gpt-fast,
lmdeploy, vLLM) trains nothing, so under it a training step is the default training engine's, laid out as that one
lays it out (Megatron-Core's, :func:`kind_layout`).

>>> kind_layout("gpt-fast", "inference"), kind_layout("gpt-fast", "training")
('gpt-fast', 'megatron')
"""
from __future__ import annotations

from symllm.arch.layers import layout_engine
from symllm.costs import figures
from symllm.costs.workloads import tp_layout

__all__ = ["kind_layout", "tp_layouts", "by_kind"]


def kind_layout(engine: str | None, kind: str) -> str | None:
    """The engine whose own layout ``kind`` quantities (:data:`symllm.costs.figures.KINDS`) are in under ``--engine
    engine`` (a name :func:`symllm.costs.parallel.layout` reads): that engine's
    (:func:`symllm.arch.layers.layout_engine`) where it runs ``kind`` work (:func:`symllm.costs.figures.runs`), else
    None, transformers' tp plan: what no ``--engine`` lays out, and what the default engines lay out but for
    DeepSeek-V4's attention, which vLLM splits its own way (an inference layout: no ``--engine`` keeps the plan's).

    >>> kind_layout("mlc", "inference"), kind_layout("hf", "training"), kind_layout("megatron", "training")
    ('mlc', 'hf', 'megatron')
    >>> kind_layout("vllm", "inference"), kind_layout("torchtitan", "inference"), kind_layout(None, "inference")
    ('vllm', None, None)

    A training engine that runs Megatron-Core's ColumnParallelLinear (:func:`symllm.costs.collectives.column_parallel`:
    Megatron, NeMo, and the default training engine) lays the model out as Megatron-Core does (``megatron``: MLA's
    down-projections column-parallel, :data:`symllm.arch.components.latent.DOWN_PROJECTIONS`).

    >>> kind_layout(None, "training"), kind_layout("nemo", "training"), kind_layout("torchtitan", "training")
    ('megatron', 'megatron', None)
    """
    from symllm.costs.collectives import column_parallel

    own = layout_engine(engine) if figures.runs(engine, kind) else None
    return "megatron" if own is None and kind == "training" and column_parallel(engine) == "megatron" else own


def tp_layouts(engine: str | None, declares: dict) -> dict:
    """The output's fields naming each kind's layout (:func:`symllm.costs.workloads.tp_layout` of
    :func:`kind_layout`): ``tp_layout`` the inference quantities', ``training_tp_layout`` the training quantities';
    ``declares`` (:func:`symllm.costs.phases.declares_layout`), by kind, whether that kind's engine lays the model out
    its own way (else the kind is in transformers' plan), or ``{}``: no field (no part declares a split of its own
    under either kind's engine).

    >>> tp_layouts("mlc", {"inference": True, "training": False}), tp_layouts("mlc", {})
    ({'tp_layout': 'mlc', 'training_tp_layout': 'transformers'}, {})
    >>> tp_layouts(None, {"inference": False, "training": True})   # MLA's down-projections under Megatron-Core
    {'tp_layout': 'transformers', 'training_tp_layout': 'megatron'}
    """
    return {f"{'training_' if kind == 'training' else ''}tp_layout":
            tp_layout(kind_layout(engine, kind) if declares[kind] else None, True) for kind in figures.KINDS} \
        if declares else {}


def by_kind(terms, mdl, train) -> dict:
    """The pipeline stages' time terms ``terms(model)`` (:func:`symllm.costs.hardware.stage_times`) of ``mdl``, the
    model as the inference engine lays it out, but for their training ones (``training_*``, ``model_*``: the training
    step's FLOPs, collectives and hand-off), of ``train``, as the training engine lays it out: each kind's terms in
    its own engine's layout.

    >>> t = lambda m: {"stages": ({"decode_flops": m, "training_flops": m},), "training_handoff": m}
    >>> by_kind(t, 1, 2)
    {'stages': ({'decode_flops': 1, 'training_flops': 2},), 'training_handoff': 2}
    """
    def pick(ours: dict, theirs: dict) -> dict:
        return {k: theirs[k] if k.startswith(("training", "model_")) else v for k, v in ours.items()}
    inference = terms(mdl)
    if train is mdl:
        return inference
    training = terms(train)
    return {**pick(inference, training), "stages": tuple(pick(a, b) for a, b in zip(inference["stages"],
                                                                                    training["stages"]))}
