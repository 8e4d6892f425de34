"""Numbers from the closed forms: exact Python ints for one config, integer-safe compiled kernels.

Two ways to evaluate, which the tests hold equal:

* :func:`symllm.numbers.exact.sympy_value` — SymPy itself (``xreplace``): slow, exact, the ground truth for the
  kernels.
* :func:`compile_expr` — a cached Python function of the expression's free symbols. Its code is
  integer-safe: ``floor``/``ceiling`` of a rational become ``//`` on integers (``lambdify`` would print
  ``Rational(8, 3)*d`` as ``(8/3)*d`` and let a float land on the wrong side of an integer), and a
  rational total is one exact division at the end. Called with Python ints it returns exact Python
  ints (no overflow, ever); with numpy arrays it runs vectorised (:meth:`Kernel.vector`) and never
  wraps around: a float64 magnitude bound of every intermediate value, evaluated first from the
  inputs' largest magnitudes, decides whether int64 is safe; where it is not, those points are
  computed exactly with Python ints in an object array (``overflow="widen"``, the default) or a
  :class:`~symllm.errors.SymllmError` is raised (``overflow="raise"``).

Meta's ``int(ffn_dim_multiplier * hidden)`` truncates an IEEE double product; ``f`` is therefore a
Python float in kernels and a 53-bit SymPy ``Float`` in :func:`~symllm.numbers.exact.sympy_value`, whose products
round exactly like doubles, so both agree with the model Meta's code builds.

>>> from symllm.arch.symbols import d, m, f
>>> k = compile_expr(m * sp.ceiling(sp.floor(f * sp.floor(sp.Rational(8, 3) * d)) / m))   # Meta's d_ff
>>> k(d=4096, m=1024, f=1.3)
14336
>>> k(d=34, m=1, f=0.7)     # Meta's float product truncates to 62; exact rationals would give 63
62
"""
from __future__ import annotations

import keyword
import math
import operator
import types
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symllm.errors import SymllmError
from symllm.validate import plural
from symllm.numbers.cache import cache_get, cache_put, source_digest
from symllm.numbers.codegen import NoBound, bound_code, exact_code, fingerprint
from symllm.numbers.exact import common_fraction, float_symbol, over_common_denominator  # noqa: F401
from symllm.numbers.runtime import (SCALAR_HELPERS, Numbers, is_array, lazy_numpy, object_ufunc, python_number, define,
                                   joined)

__all__ = ["compile_expr", "evaluate", "evaluated", "sources", "table", "Kernel", "TableKernel",
           "INT64_SAFE"]

#: points per block of :meth:`Kernel.vector`: 2**14 int64 temporaries (128 KiB each) stay in the CPU cache
BLOCK = 1 << 14

#: a kernel runs in int64 only where its magnitude bound stays below this (2**62: a factor 2 of
#: headroom under 2**63 absorbs the bound's own float64 rounding)
INT64_SAFE = float(2 ** 62)

class _Miss(Exception):
    """A kernel reader (:meth:`Kernel._reader`) was handed a dict of another layout or value types."""


def _magnitude(x) -> float:
    """The largest ``|x|`` of a number or array, as a float (inf when too big for one)."""
    try:
        if is_array(x):
            if not x.size:
                return 0.0
            if x.dtype == object:  # (a 0-d one too: numpy unwraps abs() of it to the bare object)
                return float(max(abs(v) for v in x.flat))
            # two read-only reductions: abs(x) would first write a whole array (as costly as a kernel op)
            hi, lo = float(x.max()), float(x.min())
            if hi != hi:  # NaN
                return math.inf
            return hi if hi >= -lo else -lo
        return float(abs(x))
    except (OverflowError, TypeError):
        return math.inf


_PLAIN = frozenset({int, float, bool})


def _all_ints(x) -> bool:
    """Whether an object array holds only (Python or numpy) integers: exact in int64 once bounded."""
    np = lazy_numpy()
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in x.flat)


def _whole(x):
    """A Fraction that is whole as its int (what :func:`evaluate` gives), anything else as it is."""
    return x.numerator if type(x) is Fraction and x.denominator == 1 else x


def _cached_functions(kind: str, text: str, make, names: tuple) -> tuple[tuple, tuple]:
    """``(sources, functions)``: the source strings ``make()`` generates for an expression whose
    :func:`fingerprint` is ``text`` and the functions ``names`` they define, one per string. The sources are
    read back from the cache (:mod:`symllm.numbers.cache`) when an earlier process stored them, so the first
    ``symllm count`` of a process compiles nothing; otherwise (no entry, a damaged one, or one whose code is
    not of the generated shape) they are generated and stored. The cache can make a start faster, never a
    number different."""
    key = f"{source_digest()}\0{text}"
    sources = cache_get(kind, key)
    if sources is not None and len(sources) == len(names):
        try:
            return sources, tuple(_define(src, name) for src, name in zip(sources, names))
        except ValueError:  # not generated code: generated again below
            pass
    sources = tuple(make())
    functions = tuple(define(src, name, generated_here=True) for src, name in zip(sources, names, strict=True))
    cache_put(kind, key, sources)
    return sources, functions


def _define(source: str, name: str):
    """The function ``name`` that ``source`` defines: kernel source (which may have come from the cache)
    goes through :func:`symllm.numbers.runtime.define`, which accepts generated arithmetic only."""
    return define(source, name)


def _define_here(source: str, name: str, scope: dict):
    """The function ``name`` of ``source`` that this process generated itself (a kernel's reader of one
    dict layout, never read from disk), in ``scope``."""
    namespace = dict(scope)
    exec(compile(source, f"<symllm {name}>", "exec"), namespace)  # noqa: S102 (built here, from checked source)
    return namespace[name]


class Kernel:
    """A compiled, integer-safe function of an expression's free symbols (keyword arguments by
    symbol name). Build one with :func:`compile_expr`, which caches it.

    Called with numbers it returns exact Python numbers; called with any numpy array it runs
    :meth:`vector`.

    >>> from symllm.arch import symbols as S
    >>> import numpy as np
    >>> k = Kernel(6 * S.d * S.L * S.s)
    >>> k(d=4096, L=32, s=10**14)          # Python ints: exact, whatever the size
    78643200000000000000
    >>> k(d=np.array([4096]), L=32, s=10**14)   # would wrap int64: widened to Python ints
    array([78643200000000000000], dtype=object)
    """

    def __init__(self, expr: sp.Expr):
        self.expr = sp.sympify(expr)
        self.args = tuple(sorted(self.expr.free_symbols, key=lambda x: x.name))
        #: the argument names, for fast look-ups
        self.names = frozenset(a.name for a in self.args)
        (self.source, self.bound_source), (self._fn, self._bound) = _cached_functions(
            "kernel", fingerprint(self.expr), self._generate, ("kernel", "bound"))
        #: the same code with scalar helpers (``math.floor`` for ``_floor``: what ``_floor`` does for a
        #: non-array), for inputs that are all Python ints, floats or bools
        self._scalar = types.FunctionType(self._fn.__code__, {**self._fn.__globals__, **SCALAR_HELPERS})
        #: (the keys of the last dict evaluate() read, a getter of this kernel's arguments from its values,
        #: their positions)
        self._layout = None
        #: (keys, the arguments' value types) -> :meth:`_reader` of dicts of that layout (or None)
        self._readers = {}

    def _at(self, vals: dict):
        """``(fn, getter)`` for a dict with the keys of ``vals`` in their order: ``fn(*getter(values))``
        is this kernel on Python numbers, where ``values`` is ``vals.values()``, ``getter`` picking its
        arguments by position. Records the layout: the second time in a row a dict of these keys comes,
        :meth:`_reader` is built for it. Raises KeyError when a symbol is unset."""
        keys = tuple(vals)
        layout = self._layout
        if layout is not None and layout[0] == keys:
            return self._scalar, layout[1]
        where = {k: i for i, k in enumerate(keys)}
        at = [where[a] for a in self.args]  # KeyError: a symbol is unset
        getter = (operator.itemgetter(*at) if len(at) > 1
                  else (lambda t, i=at[0]: (t[i],)) if at else (lambda t: ()))
        self._layout = (keys, getter, at)
        return self._scalar, getter

    def _reader(self, vals: dict):
        """This kernel as a function of a dict with the keys of ``vals`` in their order and, for the
        kernel's arguments, values of the same plain types (int, float, bool) as in ``vals``: what
        :func:`evaluate` calls for every later dict of that layout (every ``Spec.values()`` dict has one).

        The function unpacks the dict's keys and values in one pass each, checks that each argument's
        key sits where it sat in ``vals`` (by identity) and that its value has the type it had, and
        returns the kernel's value; otherwise it raises :class:`_Miss` (a dict of another layout, a
        numpy scalar, a Fraction, ...), and :func:`evaluate` takes the general path, so a number never
        depends on which path computed it. ``None`` where no such function is made (names that could
        clash with the function's own, more than 255 keys, values that are not plain numbers)."""
        keys = tuple(vals)
        at = self._layout[2]
        values = tuple(vals.values())
        names = [a.name for a in self.args]
        if (not keys or len(keys) > 255 or not _PLAIN.issuperset(type(values[i]) for i in at)
                or not all(n.isidentifier() and not n.startswith("_") and not keyword.iskeyword(n) for n in names)):
            return None
        named = dict(zip(at, names))
        unpack_keys = ", ".join(f"_k{i}" for i in range(len(keys)))
        unpack_values = ", ".join(named.get(i, f"_a{i}") for i in range(len(keys)))
        same_keys = " and ".join(f"_k{i} is _K{i}" for i in sorted(at)) or "True"
        same_types = " and ".join(f"_type({n}) is _T{i}" for i, n in zip(at, names)) or "True"
        body = "".join(" " * 8 + line + "\n" for line in self.source.splitlines()[1:])
        source = (f"def kernel_reader(_v):\n    {unpack_keys}, = _v\n    if {same_keys}:\n"
                  f"        {unpack_values}, = _v.values()\n        if {same_types}:\n{body}    raise _Miss\n")
        scope = {**self._scalar.__globals__, "_type": type, "_Miss": _Miss,
                 **{f"_K{i}": keys[i] for i in at}, **{f"_T{i}": type(values[i]) for i in at}}
        return _define_here(source, "kernel_reader", scope)

    def _generate(self) -> tuple[str, str]:
        """The kernel's source and its magnitude bound's source."""
        num, den = common_fraction(self.expr)
        names = ", ".join(a.name for a in self.args)
        try:
            bound = bound_code(num) if den == 1 else f"({bound_code(num)} + {bound_code(den)})"
        except NoBound:
            bound = "_inf"
        return (f"def kernel({names}):\n    return {exact_code(self.expr)}\n",
                f"def bound({names}):\n    return {bound}\n")

    def _ordered(self, kw) -> list:
        missing = [a.name for a in self.args if a.name not in kw]
        if missing:
            raise SymllmError(f"evaluate: symbols left unset: {', '.join(missing)}")
        return [kw[a.name] for a in self.args]

    def __call__(self, **kw):
        try:
            vals = [kw[a.name] for a in self.args]
        except KeyError:
            vals = self._ordered(kw)  # raises, naming what is missing
        return self._call(vals)

    def _call(self, vals: list):
        if not set(map(type, vals)) <= _PLAIN:  # arrays, numpy scalars, Fractions
            if any(map(is_array, vals)):
                return self.vector(**{a.name: v for a, v in zip(self.args, vals)})
            vals = map(python_number, vals)
            out = self._fn(*vals)
            # Fraction inputs (int4 bytes) keep Fraction type even when the value is whole
            return out.numerator if type(out) is Fraction and out.denominator == 1 else out
        return self._fn(*vals)

    def bound(self, **kw) -> float:
        """A float64 upper bound of ``|v|`` over every intermediate value ``v`` of the kernel at
        these inputs (arrays: at their largest magnitudes); ``inf`` when no bound is known."""
        return float(self._bound(*map(_magnitude, self._ordered(kw))))

    def vector(self, overflow: str = "widen", **kw):
        """The kernel over numpy arrays (broadcast together), never wrapping around.

        Integer inputs run in int64 wherever :meth:`bound` (a float64 bound of every intermediate
        value) stays below :data:`INT64_SAFE`; points beyond it are either computed exactly with
        Python ints, the result then being an object array of Python ints (``overflow="widen"``),
        or refused with a :class:`SymllmError` (``overflow="raise"``). ``f`` may be a float array:
        its products are IEEE doubles, truncated as Meta's ``int(ffn_dim_multiplier * hidden)``.
        A result that is not an integer everywhere is an object array of Python ints and (where the
        value is not whole, e.g. int4 bytes) ``Fraction`` objects: exact, never float64.

        >>> from symllm.arch import symbols as S
        >>> import numpy as np
        >>> from symllm.arch.components import meta_hidden_dim
        >>> compile_expr(meta_hidden_dim()).vector(d=np.array([34, 4096]), m=np.array([1, 1024]),
        ...                                        f=np.array([0.7, 1.3]))
        array([   62, 14336])
        >>> compile_expr(S.d ** 3).vector(d=np.array([10, 3 * 10**6]))
        array([1000, 27000000000000000000], dtype=object)
        >>> compile_expr(S.d ** 3).vector(d=np.array([3 * 10**6]), overflow="raise")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        symllm.errors.SymllmError: overflow: d**3 may exceed int64 at 1 of 1 point (overflow='widen' computes
        them exactly)
        """
        if overflow not in ("widen", "raise"):
            raise SymllmError(f"overflow: expected 'widen' or 'raise', got {overflow!r}")
        np = lazy_numpy()
        vals = [np.asarray(v) for v in self._ordered(kw)]
        for a, v in zip(self.args, vals):
            if v.dtype.kind not in "biuf" and v.dtype != object:
                raise SymllmError(f"{a.name}: expected numbers, got an array of {v.dtype}")
        shape = np.broadcast_shapes(*(v.shape for v in vals)) if vals else ()
        if len(shape) == 1 and shape[0] > BLOCK and all(v.ndim == 0 or v.shape == shape for v in vals):
            return self._blocks(vals, shape[0], overflow)
        return self._vector(vals, shape, overflow)

    def _blocks(self, vals, size: int, overflow: str):
        """:meth:`_vector` over blocks of :data:`BLOCK` points: each block's temporaries stay in the CPU
        cache (a long expression over whole arrays streams every one of them through memory), and its
        own magnitude bound decides int64 or Python ints for those points alone."""
        np = lazy_numpy()
        out = None
        for start in range(0, size, BLOCK):
            stop = min(start + BLOCK, size)
            part = self._vector([v if v.ndim == 0 else v[start:stop] for v in vals], (stop - start,), overflow)
            if out is None:
                out = np.empty(size, dtype=part.dtype)
            elif part.dtype != out.dtype:  # a block widened to Python ints (or Fractions): all exact objects
                out, part = out.astype(object), part.astype(object)
            out[start:stop] = part
        return out

    def _vector(self, vals, shape, overflow: str):
        np = lazy_numpy()
        if any(v.dtype == object and not _all_ints(v) for v in vals):  # Fractions (a weight format's bytes)
            out = np.broadcast_to(np.asarray(self._fn(*(np.broadcast_to(v, shape).astype(object) for v in vals)),
                                             dtype=object), shape)  # exact, never float64; whole values as ints
            return np.asarray(object_ufunc(_whole)(out), dtype=object)
        if self._bound(*map(_magnitude, vals)) < INT64_SAFE:
            return self._fast(vals, shape)
        mags = [object_ufunc(_magnitude)(v).astype(np.float64) if v.dtype == object
                else np.abs(v.astype(np.float64)) for v in vals]  # inf past a double's range
        with np.errstate(over="ignore", invalid="ignore"):
            unsafe = ~(np.broadcast_to(np.asarray(self._bound(*mags), dtype=np.float64), shape)
                       < INT64_SAFE)
        count = int(np.count_nonzero(unsafe))
        if overflow == "raise":
            raise SymllmError(f"overflow: {self.expr} may exceed int64 at {count} of "
                              f"{plural(unsafe.size, 'point')} (overflow='widen' computes them exactly)")
        out = np.empty(shape, dtype=object)
        if count < unsafe.size:
            safe = ~unsafe
            out[safe] = self._fast([np.broadcast_to(v, shape)[safe] for v in vals], safe[safe].shape)
        wide = [np.broadcast_to(v, shape)[unsafe].astype(object) for v in vals]
        out[unsafe] = np.broadcast_to(np.asarray(self._fn(*wide), dtype=object), (count,))
        return out

    def _fast(self, vals, shape):
        np = lazy_numpy()
        cast = [v.astype(np.int64, copy=False) if v.dtype.kind in "biu" or (v.dtype == object and _all_ints(v))
                else v.astype(np.float64, copy=False) for v in vals]  # an object array of ints: bounded, so int64
        out = np.asarray(self._fn(*cast))
        return out if out.shape == shape else np.broadcast_to(out, shape).copy()

    def __repr__(self):
        return f"Kernel({self.expr})"


@lru_cache(maxsize=1024)
def compile_expr(expr: sp.Expr) -> Kernel:
    """The cached integer-safe kernel of ``expr`` (see the module docstring).

    >>> from symllm.arch import symbols as S
    >>> compile_expr(S.s * (S.s + 1) / 2)(s=10**12)
    500000000000500000000000
    """
    return Kernel(expr)


class TableKernel:
    """Several expressions compiled into one integer-safe function of their symbols, for scalars:
    ``kernel(vals)`` (symbol -> number) gives a dict of name -> exact number. One call evaluates a whole
    breakdown, which is what makes a warm ``symllm.params(cfg)`` cost microseconds.

    >>> from symllm.arch import symbols as S
    >>> k = TableKernel({"wq": S.d * S.n_h * S.d_h, "half": S.d / 2})
    >>> k({S.d: 4096, S.n_h: 32, S.d_h: 128, S.L: 1})
    {'wq': 16777216, 'half': 2048}
    """

    def __init__(self, exprs: dict):
        exprs = {k: sp.sympify(v) for k, v in exprs.items()}
        self.names = tuple(exprs)
        self.args = tuple(sorted(set().union(*(e.free_symbols for e in exprs.values())), key=lambda x: x.name))

        def generate():
            body = ", ".join(exact_code(e) for e in exprs.values())
            return (f"def table({', '.join(a.name for a in self.args)}):\n    return ({body},)\n",)

        text = "\0".join(f"{k}\0{fingerprint(e)}" for k, e in exprs.items())
        (self.source,), (self._fn,) = _cached_functions("table", text, generate, ("table",))

    @classmethod
    def from_source(cls, args: tuple, names: tuple, source: str) -> "TableKernel":
        """The table kernel whose arguments (symbols), names and generated ``source`` an earlier
        :class:`TableKernel` had (its ``args``, ``names``, ``source``): no expression is built.

        >>> from symllm.arch import symbols as S
        >>> k = TableKernel({"wq": S.d * S.n_h})
        >>> TableKernel.from_source(k.args, k.names, k.source)({S.d: 4, S.n_h: 2})
        {'wq': 8}
        """
        self = cls.__new__(cls)
        self.args, self.names, self.source = tuple(args), tuple(names), source
        self._fn = _define(source, "table")
        return self

    def at(self, args: tuple) -> dict:
        """The table at the numbers ``args``, given in the order of :attr:`args` (no dict look-ups).

        >>> from symllm.arch import symbols as S
        >>> k = TableKernel({"wq": S.d * S.n_h})
        >>> k.args, k.at((4, 2))
        ((d, n_h), {'wq': 8})
        """
        return dict(zip(self.names, self._fn(*args)))

    def __call__(self, vals: dict) -> dict:
        try:
            out = self._fn(*[vals[a] for a in self.args])
        except KeyError:
            missing = [a.name for a in self.args if a not in vals]
            raise SymllmError(f"evaluate: symbols left unset: {', '.join(missing)}") from None
        return dict(zip(self.names, out))


#: id(expr) -> (expr, kernel): the same expression object again skips compile_expr's cache look-up,
#: whose equality test walks a large expression (tens of microseconds)
_BY_ID: dict[int, tuple] = {}


def _kernel_for(expr: sp.Basic) -> Kernel:
    hit = _BY_ID.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    kernel = compile_expr(expr)
    if len(_BY_ID) >= 4096:
        _BY_ID.clear()
    _BY_ID[id(expr)] = (expr, kernel)  # holding expr keeps its id from being reused
    return kernel


def evaluate(expr: sp.Expr, vals: dict):
    """``expr`` at ``vals`` (symbol -> number) through its compiled kernel: an exact Python int
    when the value is an integer, a ``Fraction`` when it is not.

    Inputs that are all Python ints, floats or bools take the scalar path: the kernel's code on
    Python numbers (exact: Python ints never overflow). From the second dict of one layout (keys in
    one order, values of the same plain types) on, the kernel reads the dict itself
    (:meth:`Kernel._reader`); anything else takes the general path, which gives the same numbers.

    >>> from symllm.arch import symbols as S
    >>> evaluate(2 * S.d * S.d_h * (S.n_h + S.n_kv), {S.d: 4096, S.d_h: 128, S.n_h: 32, S.n_kv: 8})
    41943040
    >>> evaluate(S.d ** 5, {S.d: 10**6})     # Python ints: exact past int64
    1000000000000000000000000000000
    """
    global _LAST
    last = _LAST
    if last[0] is expr:  # the expression of the last call: no look-up at all
        try:
            return last[1](vals)
        except Exception:  # noqa: BLE001 (another layout, other types, or an error the general path raises)
            pass
    else:
        fast = _FAST.get(id(expr))
        if fast is not None and fast[0] is expr:
            try:
                out = fast[1](vals)
            except Exception:  # noqa: BLE001 (as above)
                pass
            else:
                _LAST = fast
                return out
    return _evaluate(expr, vals)


#: id(expr) -> (expr, its kernel's reader of dicts of one layout, :meth:`Kernel._reader`); holding
#: expr keeps its id from being reused
_FAST: dict[int, tuple] = {}
#: the entry of :data:`_FAST` the last call used (a sweep or a benchmark evaluates one expression
#: over many dicts)
_LAST: tuple = (object(), None)


def _evaluate(expr, vals: dict):
    """:func:`evaluate` past its fast path: finds the kernel, reads the arguments from ``vals`` and,
    the second time a layout comes, makes the kernel's reader of it for the fast path."""
    global _LAST
    hit = _BY_ID.get(id(expr))
    kernel = hit[1] if hit is not None and hit[0] is expr else _kernel_for(
        expr if isinstance(expr, sp.Basic) else sp.sympify(expr))
    try:
        seen = kernel._layout is not None and kernel._layout[0] == tuple(vals)
        fn, getter = kernel._at(vals)
        values = tuple(vals.values())
    except (KeyError, TypeError, AttributeError):
        try:
            return kernel._call([vals[a] for a in kernel.args])
        except KeyError:
            return kernel(**{k.name: v for k, v in vals.items()})  # names what is missing
    if not _PLAIN.issuperset(map(type, values)):
        return kernel._call([vals[a] for a in kernel.args])
    out = fn(*getter(values))
    if seen and isinstance(expr, sp.Basic):
        at = kernel._layout[2]
        key = (kernel._layout[0], tuple(type(values[i]) for i in at))
        readers = kernel._readers
        reader = readers[key] if key in readers else readers.setdefault(key, kernel._reader(vals))
        if len(readers) > 16:  # layouts keep changing: keep the latest few
            del readers[next(iter(readers))]
        if reader is not None:
            if len(_FAST) >= 4096:
                _FAST.clear()
            _FAST[id(expr)] = _LAST = (expr, reader)
    return out


def _kernels(forms: dict) -> dict:
    return {name: _kernel_for(e if isinstance(e, sp.Basic) else sp.sympify(e)) for name, e in forms.items()}


def table(forms: dict, together=()) -> dict:
    """The closed forms ``forms`` (name -> expression) compiled for :class:`symllm.numbers.runtime.Numbers`
    (:func:`symllm.numbers.runtime.compiled`, ``together`` joined into one function), each through its cached
    kernel's source."""
    kernels = _kernels(forms)
    out = {name: (k._fn, k._scalar, tuple(a.name for a in k.args)) for name, k in kernels.items()}
    if together:
        out["*"] = joined({n: (kernels[n].source, out[n][2]) for n in together}, together, generated_here=True)
    return out


def evaluated(forms: dict, vals: dict, compiled_forms: dict | None = None) -> Numbers:
    """The closed forms ``forms`` (name -> expression) at ``vals`` (symbol -> number) as a
    :class:`symllm.numbers.runtime.Numbers`: each through its compiled kernel, the numbers :func:`evaluate` gives
    (``compiled_forms``: :func:`table` of ``forms``, made before).

    >>> L, d = sp.symbols("L d", integer=True, positive=True)
    >>> n = evaluated({"kv": 2 * L * d}, {L: 32, d: 4096})
    >>> n("kv"), n("kv", L=1)
    (262144, 8192)
    """
    return Numbers(table(forms) if compiled_forms is None else compiled_forms, {sym.name: v for sym, v in vals.items()})


def sources(forms: dict) -> dict:
    """``name -> (kernel source, argument names)`` of the closed forms ``forms``: what
    :class:`symllm.numbers.runtime.Numbers` is made from in a process that builds no formula.

    >>> sources({"two_d": 2 * sp.Symbol("d", integer=True, positive=True)})["two_d"]
    ('def kernel(d):\\n    return 2*d\\n', ('d',))
    """
    return {name: (k.source, tuple(a.name for a in k.args)) for name, k in _kernels(forms).items()}
