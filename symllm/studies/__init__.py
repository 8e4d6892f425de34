"""Studies over the costs, the layer above :mod:`symllm.costs`: many configs and workloads at once, the best
layout, answers kept from an earlier process.

Modules: :mod:`~symllm.studies.sweeps` (quantities over grids and tables of configs, ``symllm sweep``;
:mod:`~symllm.studies.grids`: its quantities and axes, :mod:`~symllm.studies.tables`: the tables it reads and
writes),
:mod:`~symllm.studies.plans` (the largest batch and context, the fewest GPUs, ``symllm plan``;
:mod:`~symllm.studies.served`: its serving rows as the engine serves them; :mod:`~symllm.studies.ranks`: its rows
ranked by the expected time; :mod:`~symllm.studies.layout_forms`: the closed forms it evaluates over its layouts),
:mod:`~symllm.studies.quick` (``symllm count`` without building a formula).
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in ("sweeps", "grids", "tables", "plans", "served",
                                                                    "ranks", "layout_forms", "quick")})
