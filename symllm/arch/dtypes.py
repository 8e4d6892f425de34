"""Bytes per element of every dtype symllm counts, in one table: what a workload may name (weights, KV
cache, activations) and what only the frameworks choose (fp32 statistics and master weights, int64 token
ids). Every byte count in the formulas reads it.

>>> BYTES["bf16"], BYTES["int4"], DTYPES == {k: v for k, v in BYTES.items() if k != "int64"}
(2, Fraction(1, 2), True)
"""
from __future__ import annotations

from fractions import Fraction

__all__ = ["BYTES", "DTYPES", "FP32", "BF16", "INT64", "INT4_SCALE_BYTES"]

#: bytes per element; int4 is completed by its group scales (symllm.costs.workloads.dtype_bytes)
BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": Fraction(1, 2), "int64": 8}
#: the dtypes a workload may name (``--dtype``, ``--kv-dtype``, ``--act-dtype``)
DTYPES = {k: v for k, v in BYTES.items() if k != "int64"}
#: fp32 (master weights, AdamW's moments, normalisation statistics), bf16 (mixed precision's low copies),
#: int64 (token ids and labels)
FP32, BF16, INT64 = BYTES["fp32"], BYTES["bf16"], BYTES["int64"]
#: the bytes of one int4 group scale (fp16)
INT4_SCALE_BYTES = BYTES["fp16"]
