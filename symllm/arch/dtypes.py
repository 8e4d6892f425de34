"""Bytes per element of every dtype symllm counts, in one table: what a workload may name (weights, KV
cache, activations) and what only the frameworks choose (fp32 statistics and master weights, int64 token
ids). Every byte count in the formulas reads it.

>>> BYTES["bf16"], BYTES["int4"], DTYPES == {k: v for k, v in BYTES.items() if k != "int64"}
(2, Fraction(1, 2), True)
"""
from __future__ import annotations

from fractions import Fraction

from symllm.validate import choice, integer

__all__ = ["BYTES", "DTYPES", "FP32", "BF16", "INT64", "INT4_SCALE_BYTES", "BNB_BLOCK", "OPTIMIZER_STATE", "OPTIMIZERS",
           "dtype_bytes"]

#: bytes per element; int4 is completed by its group scales (dtype_bytes)
BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": Fraction(1, 2), "int64": 8}
#: the dtypes a workload may name (``--dtype``, ``--kv-dtype``, ``--act-dtype``)
DTYPES = {k: v for k, v in BYTES.items() if k != "int64"}
#: fp32 (master weights, AdamW's moments, normalisation statistics), bf16 (mixed precision's low copies),
#: int64 (token ids and labels)
FP32, BF16, INT64 = BYTES["fp32"], BYTES["bf16"], BYTES["int64"]
#: the bytes of one int4 group scale (fp16)
INT4_SCALE_BYTES = BYTES["fp16"]
#: values per absmax block of bitsandbytes' block-wise 8-bit optimizers (``blocksize=256``)
BNB_BLOCK = 256
#: bytes per parameter each optimizer keeps of its own state (symllm.costs.zero; Adafactor's factored second
#: moment is per row and column, not per parameter: zero.factored_elements): AdamW's two fp32 moments (foreach,
#: fused or single-tensor), bitsandbytes' two uint8 moments with an fp32 absmax per block, SGD's fp32 momentum
OPTIMIZER_STATE = {"adamw": 2 * FP32, "adamw-fused": 2 * FP32, "adamw-single": 2 * FP32,
                   "adamw-8bit": 2 + Fraction(2 * FP32, BNB_BLOCK), "adafactor": 0, "sgd-momentum": FP32, "sgd": 0}
#: the optimizers ``--optimizer`` takes (``adamw``: torch's foreach AdamW, the default)
OPTIMIZERS = tuple(OPTIMIZER_STATE)


def dtype_bytes(name: str, group_size: int = 128, *, field: str = "dtype") -> int | Fraction:
    """Bytes per element of ``name``, exact; int4 includes one fp16 scale per ``group_size`` weights.
    ``field`` names the option in an error (``kv_dtype``, ``act_dtype``).

    >>> dtype_bytes("bf16"), dtype_bytes("int4"), dtype_bytes("int4", group_size=32)
    (2, Fraction(33, 64), Fraction(9, 16))
    """
    choice(field, name, DTYPES)
    integer("group_size", group_size)
    if name == "int4":
        return DTYPES[name] + Fraction(INT4_SCALE_BYTES, group_size)
    return DTYPES[name]
