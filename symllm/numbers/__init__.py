"""Numbers from closed forms: exact and compiled kernels and the on-disk cache, the layer below
:mod:`symllm.arch` (it knows SymPy expressions and numbers, no model).

Modules: :mod:`~symllm.numbers.kernels` (``compile_expr``, ``evaluate``; over
:mod:`~symllm.numbers.exact`, ``sympy_value`` and common denominators, and :mod:`~symllm.numbers.codegen`,
the kernels' integer-safe code),
:mod:`~symllm.numbers.runtime` (what generated kernels run with; no SymPy), :mod:`~symllm.numbers.cache`
(the on-disk cache and its trust model). What uses the costs over many points (sweeps, plans, ``symllm
count``'s fast path) is :mod:`symllm.studies`.
"""
from symllm._lazy import attributes

__getattr__, __dir__ = attributes(__name__, {m: (m, None) for m in ("kernels", "exact", "codegen", "runtime", "cache")})
