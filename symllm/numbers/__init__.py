"""Numbers from closed forms: exact and compiled kernels, the on-disk cache, ``count``'s fast path, sweeps.

Modules: :mod:`~symllm.numbers.kernels` (``substitute``, ``compile_expr``, ``evaluate``),
:mod:`~symllm.numbers.runtime` (what generated kernels run with; no SymPy), :mod:`~symllm.numbers.cache`
(the on-disk cache and its trust model),
:mod:`~symllm.numbers.quick` (``symllm count`` without building a formula), :mod:`~symllm.numbers.sweeps`,
:mod:`~symllm.numbers.plans` (the largest batch and context, the fewest GPUs, ``symllm plan``).
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in ("kernels", "runtime", "cache", "quick", "sweeps", "plans")})
