"""Bytes per element of every dtype symllm counts, in one table: what a workload may name (weights, KV
cache, activations) and what only the frameworks choose (fp32 statistics and master weights, int64 token
ids). Every byte count in the formulas reads it.

>>> BYTES["bf16"], BYTES["int4"], DTYPES == {k: v for k, v in BYTES.items() if k != "int64"}
(2, Fraction(1, 2), True)

A dtype is read in any of the spellings people type (:data:`ALIASES`: torch's, as config.json's ``torch_dtype``
writes them, and the safetensors header's) and named symllm's way after (:func:`named`).
"""
from __future__ import annotations

from fractions import Fraction

from symllm.validate import choice, integer

__all__ = ["BYTES", "DTYPES", "COMPUTE_DTYPES", "TORCH_NAMES", "SAFETENSORS_NAMES", "ALIASES", "FP32", "BF16", "INT64",
           "INT4_SCALE_BYTES", "BNB_BLOCK", "OPTIMIZER_STATE", "OPTIMIZERS", "canonical", "named", "dtype_bytes"]

#: bytes per element; int4 is completed by its group scales (dtype_bytes)
BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": Fraction(1, 2), "int64": 8}
#: the dtypes a workload may name (``--dtype``, ``--kv-dtype``, ``--act-dtype``)
DTYPES = {k: v for k, v in BYTES.items() if k != "int64"}
#: the dtypes the matmuls may run in (``--compute-dtype``)
COMPUTE_DTYPES = ("bf16", "fp16", "fp8")
#: torch's name of each (``str(torch.bfloat16)`` less ``torch.``): config.json's ``torch_dtype``, ``mamba_ssm_dtype``;
#: fp8 as float8_e4m3fn, the forward's float8 of TransformerEngine and torchao
TORCH_NAMES = {"fp64": "float64", "fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3fn",
               "int8": "int8", "int64": "int64"}
#: the safetensors header's name of each float dtype (the ``dtype`` of a tensor's entry)
SAFETENSORS_NAMES = {"fp64": "F64", "fp32": "F32", "bf16": "BF16", "fp16": "F16"}
#: every other spelling of a dtype symllm reads (compared case-folded, a ``torch.`` prefix dropped) -> its name:
#: torch's names and aliases (torch.half, torch.float, torch.double), float8's other format, the safetensors names
ALIASES = {**{v: k for k, v in TORCH_NAMES.items()}, **{v.casefold(): k for k, v in SAFETENSORS_NAMES.items()},
           "half": "fp16", "float": "fp32", "double": "fp64", "float8_e5m2": "fp8"}
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


def canonical(value):
    """symllm's name of a dtype spelled any way :data:`ALIASES` knows, in any case; another value as given (for
    the caller's check to refuse as typed).

    >>> canonical("bfloat16"), canonical("torch.float16"), canonical("BF16"), canonical("F32"), canonical("e4m3")
    ('bf16', 'fp16', 'bf16', 'fp32', 'e4m3')
    """
    if not isinstance(value, str):
        return value
    key = value.strip().casefold().removeprefix("torch.")
    return key if key in BYTES else ALIASES.get(key, value)


def named(field: str, value, known=DTYPES) -> str:
    """symllm's name of ``value`` (:func:`canonical`) where it is one of ``known``; else one line naming the
    field and the value as typed.

    >>> named("dtype", "bfloat16"), named("compute_dtype", "FP8", COMPUTE_DTYPES)
    ('bf16', 'fp8')
    >>> named("compute_dtype", "float32", COMPUTE_DTYPES)
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: compute_dtype: unknown 'float32' (known: bf16, fp16, fp8)
    """
    name = canonical(value)
    choice(field, name if name in known else value, known)
    return name


def dtype_bytes(name: str, group_size: int = 128, *, field: str = "dtype") -> int | Fraction:
    """Bytes per element of ``name``, exact; int4 includes one fp16 scale per ``group_size`` weights.
    ``field`` names the option in an error (``kv_dtype``, ``act_dtype``).

    >>> dtype_bytes("bf16"), dtype_bytes("int4"), dtype_bytes("int4", group_size=32)
    (2, Fraction(33, 64), Fraction(9, 16))
    """
    name = named(field, name)
    integer("group_size", group_size)
    if name == "int4":
        return DTYPES[name] + Fraction(INT4_SCALE_BYTES, group_size)
    return DTYPES[name]
