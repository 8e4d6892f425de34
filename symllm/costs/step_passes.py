"""A training step's memory-bound passes outside its forward and backward, where an engine runs them on the
compute stream: the optimizer's update of a rank's parameters and FSDP2's copy of each gathered layer out of
its all-gather buffer. The engines' ``train_factor`` figures were read from a forward and backward alone (no
optimizer, no FSDP: ``engines.hf`` in efficiency.json), so these passes are not in them; each engine that
sources them says so in efficiency.json (``optimizer_bytes``, ``fsdp_copy_out_bytes``, each with its source),
and the others add nothing. Passes FSDP2 runs on its own streams (the all-gather's copy-in, the
reduce-scatter's ``chunk_cat``) run beside the compute and are not counted. Op checkpointing
(``--selective-ac op``: :mod:`symllm.costs.selective`) reruns in backward every element-wise op of a block's
forward (norms, RoPE, SiLU, the products, the residual adds), passes the measured forward and backward did once:
:func:`op_recompute_s` (``op_recompute_bytes``, measured under torch's dispatcher).
"""
from __future__ import annotations

from fractions import Fraction

from symllm.costs.figures import data

__all__ = ["step_passes_s", "op_recompute_s"]


def step_passes_s(train: dict, *, shard, params, gathers, rate) -> Fraction:
    """Seconds a step spends on its optimizer's update of ``shard`` parameters (the rank's share of the
    optimizer states: of the parameters that get a gradient, torch's AdamW and gradient clip skipping a ``None``
    ``.grad``; :meth:`~symllm.arch.components.base.Component.trained`) at the engine's ``optimizer_bytes`` a
    parameter, and on ``gathers`` copy-outs of the rank's ``params`` all-gathered parameters (every one) at its
    ``fsdp_copy_out_bytes`` a parameter (bytes read and written), at ``rate`` bytes/s (a bf16 stream's share of
    the card's bandwidth); 0 for an engine without them.

    >>> titan = {"optimizer_bytes": 80, "fsdp_copy_out_bytes": 4}
    >>> step_passes_s(titan, shard=1000, params=8000, gathers=2, rate=10 ** 6)  # (80 000 + 64 000) bytes
    Fraction(18, 125)
    >>> step_passes_s({}, shard=1000, params=8000, gathers=2, rate=10 ** 6)
    Fraction(0, 1)
    """
    moved = (Fraction(train.get("optimizer_bytes", 0)) * shard
             + Fraction(train.get("fsdp_copy_out_bytes", 0)) * params * gathers)
    return moved / rate


def op_recompute_s(*, rows, layers, d, d_ff, q, kv, rate, tp: int = 1, sp: bool = False) -> Fraction:
    """Seconds op checkpointing's rerun of a block's element-wise forward takes for ``rows`` tokens through
    ``layers`` blocks of width ``d``, gated MLP ``d_ff``, attention ``q`` (``n_h·d_h``) and ``kv``
    (``n_kv·d_h``): ``op_recompute_bytes`` a token a layer (bytes read and written, linear in the widths) at
    ``rate`` bytes/s; the widths a tensor-parallel rank splits over ``tp`` ranks (``d`` only under ``sp``).

    >>> float(op_recompute_s(rows=1, layers=1, d=4096, d_ff=14336, q=4096, kv=1024, rate=10 ** 6))  # bytes
    0.565248
    """
    per = data()["op_recompute_bytes"]
    token = (Fraction(per["d"] * d, tp if sp else 1)
             + Fraction(per["d_ff"] * d_ff + per["qkv"] * (q + kv), tp))
    return rows * layers * token / rate
