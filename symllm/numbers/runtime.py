r"""What generated kernels run with: their helpers and :func:`define`, which turns kernel source back into a
function. No SymPy: ``symllm count`` runs kernels an earlier process generated without importing it.

Kernel source is data to this module, not code: :func:`define` accepts only the shape of code that
:mod:`symllm.numbers.kernels` generates (one function of named numbers returning arithmetic on them, calls
to the helpers below, number literals) and refuses anything else, so an entry read back from the cache
(:mod:`symllm.numbers.cache`) can at worst give wrong numbers (which its digest catches), never run other
code.

>>> define("def k(d):\n    return _exact_div(d, 2)\n", "k")(3)
Fraction(3, 2)
>>> define("def k(d):\n    return __import__('os')\n", "k")
Traceback (most recent call last):
...
ValueError: kernel source: Call of __import__ is not generated code
"""
from __future__ import annotations

import ast
import math
import sys
import types
from fractions import Fraction
from functools import lru_cache

__all__ = ["define", "HELPERS", "SCALAR_HELPERS", "Numbers", "compiled", "joined"]


def lazy_numpy():
    """numpy, imported on first use: scalar evaluation (``symllm count``) never pays for it.

    >>> lazy_numpy().__name__
    'numpy'
    """
    import numpy
    return numpy


def is_array(x) -> bool:
    """Whether ``x`` is a numpy array (never imports numpy: nothing is one before numpy is loaded).

    >>> is_array(3), is_array(lazy_numpy().arange(3))
    (False, True)
    """
    np = sys.modules.get("numpy")  # nothing is an array before numpy is imported
    return np is not None and isinstance(x, np.ndarray)


@lru_cache(maxsize=None)
def object_ufunc(fn):
    """``fn`` over an array element by element, as Python objects (exact integers and Fractions stay exact).

    >>> object_ufunc(math.floor)(lazy_numpy().array([1.5, -0.5], dtype=object)).tolist()
    [1, -1]
    """
    return lazy_numpy().frompyfunc(fn, 1, 1)


def _floor(x):
    if is_array(x):
        np = lazy_numpy()
        return object_ufunc(math.floor)(x) if x.dtype == object else np.floor(x).astype(np.int64)
    return math.floor(x)


def _ceil(x):
    if is_array(x):
        np = lazy_numpy()
        return object_ufunc(math.ceil)(x) if x.dtype == object else np.ceil(x).astype(np.int64)
    return math.ceil(x)


def _extreme(name: str, builtin):
    """``max``/``min`` of scalars, element-wise (NumPy's ``maximum``/``minimum``) when any is an array."""
    def fold(*xs):
        if any(map(is_array, xs)):
            out = xs[0]
            for x in xs[1:]:
                out = getattr(lazy_numpy(), name)(out, x)
            return out
        return builtin(xs)
    return fold


_max = _extreme("maximum", max)
_min = _extreme("minimum", min)


def _max1(x):
    return lazy_numpy().maximum(x, 1.0) if is_array(x) else max(x, 1.0)


def _exact_div(num, den):
    if is_array(num) or is_array(den):
        np = lazy_numpy()
        q = num // den
        rest = num - q * den
        if not np.any(rest):
            return q
        if np.asarray(num).dtype.kind == "f":  # a float expression: no exact value to keep
            return num / den
        # exact everywhere: Python ints where the division is exact, Fractions where it is not
        shape = np.broadcast_shapes(np.shape(num), np.shape(den))
        out = np.broadcast_to(q, shape).astype(object)
        at = np.nonzero(np.broadcast_to(rest, shape))
        out[at] = [Fraction(a) / Fraction(b) for a, b in zip(np.broadcast_to(num, shape)[at].tolist(),  # ints
                                                             np.broadcast_to(den, shape)[at].tolist())]  # or Fractions
        return out
    q, r = divmod(num, den)
    return q if r == 0 else Fraction(num, den)


#: the names generated code may use besides its own arguments
HELPERS = {"_Fraction": Fraction, "_floor": _floor, "_ceil": _ceil, "_max": _max, "_min": _min,
           "_max1": _max1, "_inf": math.inf, "_exact_div": _exact_div}

def _scalar_div(num, den):
    q, r = divmod(num, den)
    return q if r == 0 else Fraction(num, den)


#: the kernels' helpers for Python-number inputs: what each helper itself does for a non-array (no array
#: checks: a third of a small kernel's time)
SCALAR_HELPERS = {"_floor": math.floor, "_ceil": math.ceil, "_max": lambda *xs: max(xs),
                  "_min": lambda *xs: min(xs), "_max1": lambda x: max(x, 1.0), "_exact_div": _scalar_div}

#: the syntax generated kernels use: arithmetic on names and numbers, tuples of results, helper calls
_NODES = (ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Tuple, ast.BinOp, ast.UnaryOp,
          ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod, ast.USub, ast.UAdd, ast.Call,
          ast.Name, ast.Load, ast.Constant)


def _check(tree: ast.Module, name: str) -> None:
    """Raise ValueError unless ``tree`` is one function ``name`` of the shape kernels are generated in."""
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or body[0].name != name:
        raise ValueError(f"kernel source: not one function {name!r}")
    fn = body[0]
    if fn.decorator_list or fn.returns or len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return):
        raise ValueError("kernel source: not one return statement")
    params = fn.args
    if params.posonlyargs or params.vararg or params.kwonlyargs or params.kwarg or params.defaults:
        raise ValueError("kernel source: not plain arguments")
    own = {a.arg for a in params.args}
    for node in ast.walk(fn.body[0]):
        if not isinstance(node, _NODES):
            raise ValueError(f"kernel source: {type(node).__name__} is not generated code")
        if isinstance(node, ast.Name) and node.id not in own and node.id not in HELPERS:
            raise ValueError(f"kernel source: unknown name {node.id!r}")
        if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in HELPERS
                                           or node.keywords):
            what = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise ValueError(f"kernel source: Call of {what} is not generated code")
        if isinstance(node, ast.Constant) and type(node.value) not in (int, float):
            raise ValueError("kernel source: a constant that is not a number")
    for a in params.args:
        if a.annotation is not None:
            raise ValueError("kernel source: not plain arguments")


def define(source: str, name: str, *, generated_here: bool = False):
    """The function ``name`` that ``source`` (code :mod:`symllm.numbers.kernels` generated) defines, with the
    helpers in scope. Source of any other shape raises ``ValueError`` (a damaged or planted cache entry:
    the caller generates the code again); so does source that is not Python. ``generated_here``: source this
    process printed itself, never read from anywhere, whose shape is not checked again (a tenth of a
    kernel's build; what the cache gives back is always checked)."""
    if not isinstance(source, str):
        raise ValueError("kernel source: not a string")
    try:
        if generated_here:  # compiled straight from the text: building Python's tree of it cost twice as much
            code = compile(source, f"<symllm {name}>", "exec")
        else:
            tree = ast.parse(source, f"<symllm {name}>")
            _check(tree, name)
            code = compile(tree, f"<symllm {name}>", "exec")
    except (SyntaxError, MemoryError, RecursionError) as e:
        raise ValueError(f"kernel source: {type(e).__name__}") from None
    namespace = {**HELPERS, "__builtins__": {}}
    exec(code, namespace)  # noqa: S102 (checked above: generated arithmetic, or generated by this process)
    return namespace[name]


#: the value types a kernel's scalar path takes as they are (anything else: a Fraction, a numpy scalar)
_PLAIN = frozenset({int, float, bool})


def python_number(x):
    """A numpy scalar as the Python number it holds; anything else as it is.

    >>> type(python_number(lazy_numpy().int64(3))), python_number("x")
    (<class 'int'>, 'x')
    """
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.integer):
        return int(x)
    if np is not None and isinstance(x, np.floating):
        return float(x)
    return x


def _twin(fn):
    return types.FunctionType(fn.__code__, {**fn.__globals__, **SCALAR_HELPERS})


def compiled(forms: dict, together=(), *, generated_here: bool = False) -> dict:
    """``name -> (function, its scalar twin, argument names)`` of ``forms`` (``name -> (kernel source, argument
    names)``): each source through :func:`define` (generated arithmetic only; ``generated_here``: source this
    process printed), on first use; the scalar twin runs ``math.floor`` where the kernel's ``_floor`` would (what it
    does for a non-array). The forms named in ``together`` are also joined into one function returning all of them,
    under the name ``"*"`` (with the names and each one's arguments): :meth:`Numbers.table` evaluates them in
    one call. What :class:`Numbers` evaluates; made once per set of forms."""
    out = {name: _Pending(source, tuple(args), generated_here) for name, (source, args) in forms.items()}
    if together:
        out["*"] = joined(forms, together, generated_here=generated_here)
    return out


class _Pending:
    """A form of :func:`compiled` not defined yet: :class:`Numbers` defines it (:func:`define`) on first use (a
    count reads the groups' forms through their joined function only, and defining is most of a count read back)."""

    __slots__ = ("source", "args", "here")

    def __init__(self, source: str, args: tuple, here: bool):
        self.source, self.args, self.here = source, args, here

    def define(self) -> tuple:
        fn = define(self.source, "kernel", generated_here=self.here)
        return fn, _twin(fn), self.args


def joined(forms: dict, names, *, generated_here: bool = False) -> tuple:
    """The forms ``names`` of ``forms`` (``name -> (kernel source, argument names)``) as one function returning
    them all: ``(function, its scalar twin, its arguments, ((name, that form's arguments), ...))``, the entry
    ``"*"`` of :func:`compiled`. The source joins the generated return expressions (checked by :func:`define`
    like any kernel read back)."""
    names = tuple(names)
    args = tuple(sorted({a for n in names for a in forms[n][1]}))
    body = ", ".join(forms[n][0].split("\n    return ", 1)[1].rstrip("\n") for n in names)
    fn = define(f"def kernel({', '.join(args)}):\n    return ({body},)\n", "kernel", generated_here=generated_here)
    return fn, _twin(fn), args, tuple((n, frozenset(forms[n][1])) for n in names)


class Numbers:
    r"""Named closed forms at one point, without SymPy: ``ev("memory.weights")`` is that form's kernel
    (:mod:`symllm.numbers.kernels`' integer-safe code, compiled there or read back through :func:`define`) at
    the values ``vals`` (symbol name -> number), exactly as :func:`symllm.numbers.kernels.evaluate` gives it
    (plain ints and floats run the scalar code; a Fraction input gives a whole result as an int).
    ``ev(name, b=4)`` evaluates with ``b`` put in. ``forms``: :func:`compiled`'s table.

    >>> forms = {"half": ("def kernel(d):\n    return _exact_div(d, 2)\n", ("d",)),
    ...          "sum": ("def kernel(d, e):\n    return d + e\n", ("d", "e"))}
    >>> n = Numbers(compiled(forms, ("half", "sum")), {"d": 8, "e": 1})
    >>> n("half"), n("half", d=3), "half" in n, n.table()
    (4, Fraction(3, 2), True, {'half': 4, 'sum': 9})
    """

    __slots__ = ("forms", "vals")

    def __init__(self, forms: dict, vals: dict):
        self.forms = forms
        self.vals = vals

    def __contains__(self, name) -> bool:
        return name in self.forms

    def __call__(self, name: str, **put):
        entry = self.forms[name]
        if type(entry) is _Pending:
            entry = self.forms[name] = entry.define()
        fn, scalar, args = entry
        vals = self.vals
        try:
            xs = [put[a] if a in put else vals[a] for a in args] if put else [vals[a] for a in args]
        except KeyError:
            from symllm.errors import SymllmError
            missing = [a for a in args if a not in vals and a not in put]
            raise SymllmError(f"evaluate: symbols left unset: {', '.join(missing)}") from None
        for x in xs:
            if type(x) not in _PLAIN:
                out = fn(*map(python_number, xs))
                return out.numerator if type(out) is Fraction and out.denominator == 1 else out
        return scalar(*xs)

    def table(self) -> dict:
        """The forms :func:`compiled` joined (``together``), by name, from one call: the numbers each gives
        alone (a form whose own arguments are plain runs as the scalar code would; one with a Fraction
        argument gives a whole result as an int)."""
        fn, scalar, args, members = self.forms["*"]
        vals = self.vals
        xs = [vals[a] for a in args]
        if all(type(x) in _PLAIN for x in xs):
            return dict(zip((n for n, _ in members), scalar(*xs)))
        other = {a for a, x in zip(args, xs) if type(x) not in _PLAIN}
        return {n: v.numerator if type(v) is Fraction and v.denominator == 1 and not other.isdisjoint(own) else v
                for (n, own), v in zip(members, fn(*map(python_number, xs)))}
