"""The closed forms a derivation or a report shows, kept between processes: collected (and factored) totals and
the numbers of a workload, stored in :func:`symllm.numbers.cache.cache_dir` as ``srepr`` and rebuilt node by node
(only SymPy classes called on literals), so a warm ``symllm derive`` or ``report`` builds no formula twice.
Presentation assembles them (:mod:`symllm.present.derivation`, :mod:`symllm.present.reports`); nothing here
lays anything out.

>>> from_srepr("Mul(Integer(2), Symbol('d'))")
2*d
"""
from __future__ import annotations

import ast
import json
from fractions import Fraction

import sympy as sp

from symllm.costs import checks
from symllm.costs import numbered
from symllm.costs import phases as costs
from symllm.arch.components import collected
from symllm.numbers.cache import cache_get, cache_put, key as cache_key
from symllm.numbers.kernels import TableKernel, fingerprint
from symllm.costs.workloads import Workload



# --------------------------------------------------------------------------- cached between processes

def _mul(*args, **options):
    """``Mul`` as ``srepr`` wrote it, but a negative coefficient is one number again: ``srepr`` writes
    ``-2*L`` as ``Mul(Integer(-1), Integer(2), L)``, which unevaluated prints ``-1*2*L``."""
    if len(args) > 1 and args[0] == -1 and args[1].is_Number:
        args = (-args[1], *args[2:])
    return sp.Mul(*args, **options)


#: what an ``srepr`` read back may call: SymPy's own expression classes (``Symbol``, ``Integer``, ``Mul``, ...),
#: never a function (``sympify``, ``parse_expr``, ``lambdify`` would evaluate strings)
_SREPR_CALLS = frozenset(name for name, value in vars(sp).items()
                         if isinstance(value, type) and issubclass(value, sp.Basic))
_SREPR_NODES = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.Tuple, ast.List,
                ast.UnaryOp, ast.USub)


def from_srepr(text: str) -> sp.Basic:
    """The expression whose ``srepr`` is ``text``, rebuilt node by node as it was (no evaluation, so the
    tree, and what it prints, is the one ``srepr`` was taken of). ``text`` is data: only calls of SymPy's
    expression classes on literals are accepted (ValueError otherwise), so a cache entry can at worst
    give a wrong formula, which its digest catches (:mod:`symllm.numbers.cache`).

    >>> from_srepr("Mul(Integer(2), Symbol('d'))")
    2*d
    >>> from_srepr("Symbol('d').__class__")
    Traceback (most recent call last):
    ...
    ValueError: srepr: Attribute is not an expression's srepr
    """
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _SREPR_NODES):
            raise ValueError(f"srepr: {type(node).__name__} is not an expression's srepr")
        if isinstance(node, ast.Name) and node.id not in _SREPR_CALLS:
            raise ValueError(f"srepr: {node.id!r} is not a SymPy expression class")
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            raise ValueError("srepr: a call of something other than a SymPy expression class")
    with sp.evaluate(False):
        out = eval(compile(tree, "<srepr>", "eval"),  # noqa: S307
                   {**{k: getattr(sp, k) for k in _SREPR_CALLS}, "Mul": _mul, "__builtins__": {}})
    if not isinstance(out, sp.Basic):
        raise TypeError(type(out).__name__)
    return out


def collected_cached(total: sp.Expr) -> sp.Expr:
    """:func:`symllm.arch.components.collected` of ``total`` (a ``factor``, tens of milliseconds), kept in
    :func:`symllm.numbers.cache.cache_dir` by the ``srepr`` of ``total`` and a hash of symllm's source files,
    so a report's closed forms are factored once, not in every process. A miss or a damaged entry
    factors again.

    >>> from symllm.arch import symbols as S
    >>> collected_cached(2 * S.d * S.d_h * S.n_h + 2 * S.d * S.d_h * S.n_kv)
    2*d*d_h*(n_h + n_kv)
    """
    key = cache_key(fingerprint(total))
    hit = cache_get("collected", key)
    if hit is not None and len(hit) == 1:
        try:
            return from_srepr(hit[0])
        except Exception:  # noqa: BLE001 (a damaged entry: factored again below)
            pass
    out = collected(total)
    cache_put("collected", key, (sp.srepr(out),))
    return out


def workload_numbers(spec, work: Workload) -> dict:
    """:func:`symllm.costs.phases.workload` of ``spec`` and ``work``, from a table kernel an earlier process
    compiled when :func:`symllm.numbers.cache.cache_dir` holds one for this structure and these training
    options (building the closed forms is most of a report's time); keyed like :mod:`symllm.studies.quick`'s
    entries. On a miss the kernel is compiled from the closed forms and stored (one kernel for the whole
    table: evaluating each quantity on its own compiled each a second time). The groups are the
    composed quantities' (no ``time`` or ``weight_format``: the report reads those elsewhere).

    >>> from symllm.arch import resolved
    >>> w = workload_numbers(resolved.spec("llama3.1-8b"), Workload.of(seq=4096))
    >>> w == costs.workload("llama3.1-8b", seq=4096)
    True
    """
    key = cache_key(spec.shape(), work.shape())
    checks.check(spec, work)
    vals = numbered.values(spec, work)  # β_w of a weight format included
    hit = cache_get("workload", key)
    table = None
    if hit is not None and len(hit) == 3:
        try:
            by_name = {sym.name: sym for sym in vals}
            table = TableKernel.from_source(tuple(by_name[a] for a in json.loads(hit[0])), tuple(json.loads(hit[1])),
                                            hit[2])
        except Exception:  # noqa: BLE001 (a damaged entry: compiled again below)
            table = None
    if table is None:
        exprs = costs.quantities(costs.model_of(spec, work), work)
        table = TableKernel({f"{group}/{k}": e for group, terms in exprs.items() for k, e in terms.items()})
        cache_put("workload", key, (json.dumps([a.name for a in table.args]), json.dumps(table.names), table.source))
    numbers = {"workload": work.to_dict(), "flops": {}, "memory": {}}
    for name, v in table(vals).items():
        group, k = name.split("/", 1)
        numbers.setdefault(group, {})[k] = v.numerator if type(v) is Fraction and v.denominator == 1 else v
    return numbers
