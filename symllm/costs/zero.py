"""Training states and ZeRO sharding, once: the bytes per parameter each optimizer layout keeps, and which
of its parts each ZeRO stage shards over the data-parallel ranks.

ZeRO (Rajbhandari et al., arXiv:1910.02054) stage 1 shards the optimizer states over the ``N_d``
data-parallel ranks, stage 2 the gradients too, stage 3 the weights too. Mixed-precision Adam keeps
bf16 weights and gradients (2 + 2 bytes) and fp32 master weights and two moments (12 bytes): ``16N`` at
stage 0, ``16⌈N/N_d⌉`` at stage 3 (a shard is rank 0's ``⌈N/N_d⌉`` parameters: DeepSpeed pads the flat
partition to a whole number per rank).

>>> from symllm.arch import symbols as S
>>> training_states(S.N, 1)
4*N + 12*ceiling(N/N_d)
>>> training_states(S.N, 0, FP32_ADAMW)
16*N
"""
from __future__ import annotations

import sympy as sp

from symllm import validate
from symllm.arch import symbols as S
from symllm.arch.dtypes import BF16, FP32

__all__ = ["PARTS", "MIXED_PRECISION_ADAM", "FP32_ADAMW", "QLORA_ADAMW", "sharded", "training_states"]

#: the parts of the training states, in the order ZeRO's stages shard them
PARTS = ("optimizer", "gradients", "weights")
#: bytes per parameter of mixed-precision Adam: bf16 weights and gradients, fp32 master weights and
#: the two moments (the fused and eager stacks' training states)
MIXED_PRECISION_ADAM = {"weights": BF16, "gradients": BF16, "optimizer": 3 * FP32}
#: fp32 weights and gradients (autocast's low copies are temporaries) and AdamW's two fp32 moments:
#: transformers' Trainer under autocast, and PEFT's LoRA adapters (upcast to fp32)
FP32_ADAMW = {"weights": FP32, "gradients": FP32, "optimizer": 2 * FP32}
#: QLoRA's adapters: bf16 weights and gradients (the paper's computation dtype), 32-bit paged AdamW moments
QLORA_ADAMW = {"weights": BF16, "gradients": BF16, "optimizer": 2 * FP32}


def sharded(part: str, zero_stage: int) -> bool:
    """Whether ZeRO stage ``zero_stage`` shards ``part`` (:data:`PARTS`) over the data-parallel ranks.

    >>> [sharded("gradients", z) for z in range(4)]
    [False, False, True, True]
    """
    return validate.zero_stage(zero_stage) > PARTS.index(validate.choice("part", part, PARTS))


def training_states(N: sp.Expr, zero_stage: int = 0, layout: dict = MIXED_PRECISION_ADAM,
                    ranks: sp.Expr = S.N_d) -> sp.Expr:
    """Bytes one data-parallel rank holds of the training states of ``N`` parameters: ``layout``'s
    bytes per parameter of each part (any of :data:`PARTS`), whole, or over ``ranks`` where ZeRO stage
    ``zero_stage`` shards that part.

    >>> training_states(S.N, 3), training_states(S.N, 2, {"weights": 4, "optimizer": 8})
    (16*ceiling(N/N_d), 4*N + 8*ceiling(N/N_d))
    """
    kept = sum(b for part, b in layout.items() if not sharded(part, zero_stage))
    return kept * N + (sum(layout.values()) - kept) * sp.ceiling(N / ranks)
