"""Numbers from closed forms: exact and compiled kernels, the on-disk cache, ``count``'s fast path, sweeps.

Modules: :mod:`~symllm.numbers.kernels` (``substitute``, ``compile_expr``, ``evaluate``),
:mod:`~symllm.numbers.quick` (``symllm count`` without building a formula), :mod:`~symllm.numbers.sweeps`.
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in ("kernels", "quick", "sweeps")})
