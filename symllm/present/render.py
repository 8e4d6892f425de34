"""Presentation: escaping, the sandboxed Jinja environments and templates, and the filters they print with; the
user's notation is :mod:`symllm.present.notations`, the expression printers and line breaking
:mod:`symllm.present.printers` (their names are offered here too).

This module lays out what it is handed and computes nothing: :mod:`symllm.present.derivation` assembles a
derivation or a report (sub-terms, sums, closed forms, evaluated numbers) and hands plain data to
the templates in ``templates/`` (shipped inside the wheel as ``symllm/templates``). Filters turn an
expression into LaTeX (``tex``) or text (``text``) with the user's notation, format numbers (``num``
for math, ``grouped``, ``human``) and escape user text (``esc``; every plain string a template prints
is escaped for its format anyway).

* Templates ending in ``.tex.j2`` use LaTeX-friendly delimiters: ``<< expr >>``, ``<% stmt %>``,
  ``<# comment #>``; the others (``.md.j2``, ``.txt.j2``) use Jinja's usual ``{{ }}``.
* Every environment is a :class:`jinja2.sandbox.SandboxedEnvironment` with ``StrictUndefined``: a
  missing variable is an error, and user templates (``template_dir``) cannot reach Python internals.
* Notation: a mapping symbol -> LaTeX (keys are symbols, their names ``n_h`` or code names
  ``n_heads``) renames symbols in every output; :func:`symllm.present.notations.load_notation` reads it from
  TOML or JSON; :func:`symllm.present.printers.latex` prints with it.

>>> from symllm.present.printers import latex
>>> latex(2 * S.d * S.d_h * (S.n_h + S.n_kv), {"d": r"d_\\mathrm{model}"})
'2 \\\\, d_\\\\mathrm{model} \\\\, d_h \\\\, \\\\left(n_h + n_{kv}\\\\right)'
>>> render_template("standalone.tex.j2", {"body": Safe("$x$"), "title": "a_b"}).splitlines()[5]
'\\\\title{a\\\\_b}'
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import jinja2
import jinja2.compiler
import jinja2.nodes
import jinja2.runtime
import sympy as sp
from jinja2.sandbox import SandboxedEnvironment, SecurityError
from markupsafe import Markup

from symllm.arch import symbols as S
from symllm.errors import SymllmError
from symllm.files import builtin_templates
from symllm.present.format import LINE_BREAKS, escape_latex, fold_latex, grouped, human, human_bytes
from symllm.present.notations import notation
from symllm.present.printers import (TEXT_WIDTH, SYMBOL_BY_NAME, SYMBOL_NAME_RE, Formula, Safe, display_width,
                                     fold_source, num_text, num_latex, pcol, wrap_markdown)

__all__ = [
    "EXTENSIONS", "environment", "render_template", "standalone", "template_dir", "escape_markdown", "label",
    "math_delimiters",
]

#: the file ending of each format's templates
EXTENSIONS = {"text": "txt", "pretty": "txt", "latex": "tex", "markdown": "md"}


# --------------------------------------------------------------------------- templates, escaping

def template_dir() -> Path:
    """The built-in templates (:func:`symllm.files.builtin_templates`); a broken install missing them is refused.

    >>> (template_dir() / "report.tex.j2").is_file()
    True
    """
    folder = builtin_templates()
    if folder is not None:
        return folder
    raise SymllmError("templates: symllm's built-in templates are missing (a broken install?)")


_MD_RE = re.compile(r"([\\`*_\[\]<>|#$~&{}])")


def escape_markdown(text) -> str:
    """User text made safe for (GitHub-flavoured) Markdown: punctuation with a meaning is escaped.

    >>> print(escape_markdown("my_model | $5 *x*"))
    my\\_model \\| \\$5 \\*x\\*
    """
    return _MD_RE.sub(r"\\\1", LINE_BREAKS.sub(" ", str(text)))


def _finalizer(escape):
    def finalize(value):
        if isinstance(value, (Safe, Markup)):
            return str(value)
        if isinstance(value, Formula):
            value = value.text()
        return escape(value) if escape else value
    return finalize


def _filters(kind: str, names: dict) -> dict:
    def tex(value):
        if isinstance(value, Formula):
            return Safe(value.latex(names))
        if isinstance(value, sp.Basic):
            return Safe(Formula(value).latex(names))
        return Safe(escape_latex(value))

    def text(value):
        return Safe(value.text() if isinstance(value, Formula) else str(value))

    def pretty(value, indent=0, reserve=0):
        out = value.pretty(max(TEXT_WIDTH - indent - reserve, 30)) if isinstance(value, Formula) else str(value)
        return Safe(("\n" + " " * indent).join(out.splitlines()))

    def plain(value):
        return Safe(num_text(value) if isinstance(value, (float, Fraction)) else grouped(value))

    def num(value):
        return Safe(num_latex(value)) if kind in ("latex", "markdown") else plain(value)

    def esc(value):
        if isinstance(value, (Safe, Markup)):
            return Safe(value)
        return Safe({"latex": escape_latex, "markdown": escape_markdown}.get(kind, str)(value))

    @jinja2.pass_context
    def show(ctx, value, indent=0, reserve=0):
        """Text (broken to fit :data:`TEXT_WIDTH` columns after ``indent``, ``reserve`` left on the line
        for what follows) or, for ``pretty``, SymPy's 2-D form."""
        if ctx.get("format") == "pretty":
            return pretty(value, indent, reserve)
        if not isinstance(value, Formula):
            return text(value)
        lines = value.text_lines(max(TEXT_WIDTH - indent - reserve, 30))
        return Safe(("\n" + " " * indent).join(lines))

    def joinlines(items, indent=0, sep=" + "):
        """Plain items joined by ``sep``, broken to fit :data:`TEXT_WIDTH` columns after ``indent``."""
        lines = [""]
        for i, item in enumerate(map(str, items)):
            piece = item if i == 0 else sep.lstrip() + item
            if i and len(lines[-1]) + len(sep) - len(sep.lstrip()) + len(piece) + indent > TEXT_WIDTH:
                lines.append(piece)
            else:
                lines[-1] += ((sep[:len(sep) - len(sep.lstrip())]) if i else "") + piece
        return Safe(("\n" + " " * indent).join(lines))

    #: display math is flush left in one column of ``align`` (``&`` first on every line): a statement's first
    #: line starts with its label, a broken formula goes on ``\\qquad`` in, the next step of a chain on
    #: ``\\quad =``; every line fits the format's width (:func:`display_width`; a label is not an alignment
    #: column that narrows the rest)
    measure, width = display_width(kind)
    nonumber = " \\nonumber" if kind == "latex" else ""
    break_line = nonumber + " \\\\\n&\\qquad "
    break_eq = nonumber + " \\\\\n&\\quad = "
    rest = width - measure("\\qquad ")

    def fold(line, room):
        """Markdown: a display line still wider than ``room`` (an unbreakable nest of ceilings and fractions)
        continued on the next source line (:func:`fold_source`: the typeset math is unchanged)."""
        return fold_source(line, room) if kind == "markdown" else line

    def joined(lines, room):
        return break_line.join(fold(line, room if i == 0 else rest) for i, line in enumerate(lines))

    def texlines(value, tail=None, lead=""):
        """Display math broken across lines that fit the format's width (continuation lines start
        ``&\\qquad``); ``lead``: what precedes it on its first line (``N_{\\mathrm{wq}} =``), whose width
        the first line leaves; ``tail``, a number, follows as `` = tail``."""
        if isinstance(value, sp.Basic):
            value = Formula(value)
        first = width - measure(str(lead) + " = ")
        lines = (value.latex_lines(names, rest, first, measure) if isinstance(value, Formula)
                 else [escape_latex(value)])
        if tail is not None:
            end = num_latex(tail)
            room = first if len(lines) == 1 else rest
            if measure(lines[-1] + " = " + end) <= room:
                lines[-1] += " = " + end
            else:
                return Safe(joined(lines, first) + break_eq + end)
        return Safe(joined(lines, first))

    def packed(parts, lead=""):
        """LaTeX pieces filled into lines as wide as :func:`texlines` allows (the second line, after
        ``lead =``, is narrower), joined by its line break."""
        lines = []
        first = width - measure(str(lead) + " = ")
        for part in parts:
            room = first if len(lines) == 1 else rest
            if lines and measure(lines[-1] + " " + part) <= room:
                lines[-1] += " " + part
            else:
                lines.append(part)
        return Safe(joined(lines, first))

    def texsum(values, lead=""):
        """Formulas joined by ``+`` as display math, broken across lines like :func:`texlines`."""
        parts = []
        for i, value in enumerate(values):
            pieces = (value if isinstance(value, Formula) else Formula(value)).latex_lines(names, rest,
                                                                                            measure=measure)
            parts += [("+ " if i else "") + pieces[0], *pieces[1:]]
        return packed(parts, lead)

    def texjoin(labels, lead=""):
        """LaTeX pieces (the labels of a sum's terms) joined by ``+``, broken like :func:`texlines`."""
        return packed((("+ " if i else "") + label_ for i, label_ in enumerate(map(str, labels))), lead)

    def ttpath(value):
        """A component's path (``block/attention/wq``) in typewriter type, breakable after each ``/`` and
        ``_`` (``shared_experts/`` alone is wider than a two-column paper's narrowest first column)."""
        return Safe(r"\texttt{" + escape_latex(value).replace("/", r"/\allowbreak{}").replace("\\_", r"\_\allowbreak{}")
                    + "}")

    def meaning(value):
        """A symbol's description for LaTeX text, its symbol names (``n_h``, ``d_ff``) as math."""
        parts = SYMBOL_NAME_RE.split(str(value))
        return Safe("".join(f"${names.get(SYMBOL_BY_NAME[p], p)}$" if i % 2 else escape_latex(p)
                            for i, p in enumerate(parts)))

    return {"tex": tex, "text": text, "pretty": pretty, "show": show, "num": num, "esc": esc,
            "mdwrap": lambda value, width=TEXT_WIDTH: Safe(wrap_markdown(value, width)),
            "texlines": texlines, "texsum": texsum, "texjoin": texjoin, "pcol": pcol, "ttpath": ttpath,
            "meaning": meaning, "joinlines": joinlines,
            "grouped": plain, "human": lambda v, flops=False: Safe(human(v, flops)),
            "human_bytes": lambda v: Safe(human_bytes(v)),
            "pct": lambda v, total: Safe(f"{100 * v / total:.2f}" if total else "0.00")}


def _kind_of(name: str) -> str:
    return {"tex": "latex", "md": "markdown"}.get(name.rsplit(".", 2)[-2] if name.count(".") >= 2 else "", "text")


class _Exceeded(Exception):
    """A user template went over its budget (:data:`MAX_OUTPUT`, :data:`TIME_LIMIT`, :data:`MEMORY_LIMIT`)."""


class _OverTime(_Exceeded):
    pass


class _OverMemory(_Exceeded):
    pass


#: the most characters a user template may produce
MAX_OUTPUT = 16 << 20
#: the seconds a user template may run
TIME_LIMIT = 30.0
#: the bytes of memory a user template may add to the process while it runs
MEMORY_LIMIT = 512 << 20
#: a format width of 7 digits or more ("%9999999d", "{:>9999999}"): a string of megabytes from a few characters
_WIDE_FORMAT = re.compile(r"\d{7,}")


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, with every ``~`` concatenation's result checked by the sandbox (a
    string doubled in a loop through ``namespace()`` grew without bound)."""

    def visit_Concat(self, node, frame):
        self.write("environment.checked(")
        super().visit_Concat(node, frame)
        self.write(")")

    def buffer(self, frame):
        """A macro's, ``{% set %}`` block's or ``{% call %}``'s output gathers in a :class:`_Buffer` (a
        macro looping over a large string built gigabytes before the join)."""
        frame.buffer = self.temporary_identifier()
        self.writeline(f"{frame.buffer} = environment.buffer()")


class _Buffer(list):
    """The output of a block, which refuses to hold more than :data:`MAX_OUTPUT` characters."""

    __slots__ = ("size",)

    def __init__(self):
        super().__init__()
        self.size = 0

    def _count(self, items) -> None:
        self.size += sum(len(x) for x in items if isinstance(x, str))
        if self.size > MAX_OUTPUT:
            raise SecurityError(f"a block's output would exceed {MAX_OUTPUT:,} characters")

    def append(self, item):
        self._count((item,))
        super().append(item)

    def extend(self, items):
        items = tuple(items)
        self._count(items)
        super().extend(items)


class _Sandbox(SandboxedEnvironment):
    """Jinja's sandbox, which also refuses what would take unbounded time or memory in one step:
    arithmetic (``{{ 10 ** 10 ** 10 }}``), repetition and concatenation (``"x" * 10 ** 12``, ``x ~ x``,
    ``x + x``), formatting (``"%9999999d"``) and calls or filters with a huge count or width
    (``"x".ljust(10 ** 9)``, ``"x"|center(10 ** 9)``): results and arguments are limited to
    :data:`LIMIT` bits or items. ``range()`` is Jinja's (at most 100,000 items). What no single step
    shows (loops inside loops, a list grown item by item) is bounded by :func:`_budget` around the render."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"**", "*", "<<", "+", "%"})
    LIMIT = 1 << 20

    buffer = _Buffer

    def checked(self, value):
        """A result that must stay within :data:`LIMIT` items (a concatenation)."""
        if isinstance(value, (str, bytes, list, tuple)) and len(value) > self.LIMIT:
            raise SecurityError(f"the result would exceed {self.LIMIT:,} characters or items")
        return value

    def _check_args(self, what: str, args, kwargs) -> None:
        for value in (*args, *kwargs.values()):
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > self.LIMIT:
                raise SecurityError(f"{what}: an argument over {self.LIMIT:,} (a width or count that large "
                                    "would exhaust memory)")

    def call_binop(self, context, operator, left, right):
        ints = isinstance(left, int) and isinstance(right, int)
        if operator == "**" and ints and right > 0 and abs(left) > 1:
            big = left.bit_length() * right > self.LIMIT
        elif operator == "<<" and ints:
            big = left != 0 and right > self.LIMIT
        elif operator == "*" and ints:
            big = left.bit_length() + right.bit_length() > self.LIMIT
        elif operator == "*" and isinstance(left, int) != isinstance(right, int):  # "x" * n, [0] * n
            seq, n = (right, left) if isinstance(left, int) else (left, right)
            big = isinstance(seq, (str, list, tuple)) and len(seq) * n > self.LIMIT
        elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            big = len(left) + len(right) > self.LIMIT
        elif operator == "%" and isinstance(left, str):
            big = bool(_WIDE_FORMAT.search(left))
        else:
            big = False
        if big:
            raise SecurityError(f"{operator}: the result would exceed {self.LIMIT:,} bits or items")
        return self.checked(super().call_binop(context, operator, left, right))

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 -- Jinja's signature
        if __obj is not __self.globals.get("range"):  # Jinja's own range() says MAX_RANGE itself
            __self._check_args(getattr(__obj, "__name__", "call"), args, kwargs)
        bound = getattr(__obj, "__wrapped__", __obj)  # the sandbox hands str.format out wrapped
        if isinstance(getattr(bound, "__self__", None), str) and _WIDE_FORMAT.search(bound.__self__) and \
                getattr(bound, "__name__", "") in ("format", "format_map"):
            raise SecurityError(f"format: a width over {__self.LIMIT:,}")
        return __self.checked(super().call(__context, __obj, *args, **kwargs))


def _bounded_filter(env: _Sandbox, name: str, func):
    """Jinja's own filter ``func`` with its counts and widths checked (``center(10 ** 9)``,
    ``replace(x, y)`` that multiplies a string, ``format`` with a huge width) and its result bounded."""
    @functools.wraps(func)
    def bounded(*args, **kwargs):
        values = [a for a in args if not isinstance(a, (jinja2.runtime.Context, jinja2.nodes.EvalContext,
                                                         jinja2.Environment))]
        env._check_args(f"|{name}", values[1:], kwargs)
        if name == "format" and values and isinstance(values[0], str) and _WIDE_FORMAT.search(values[0]):
            raise SecurityError(f"|format: a width over {env.LIMIT:,}")
        if name == "replace" and len(values) >= 3 and all(isinstance(v, str) for v in values[:3]):
            text, old, new = values[:3]
            if (len(text) // max(len(old), 1) + 1) * len(new) + len(text) > env.LIMIT:
                raise SecurityError(f"|replace: the result could exceed {env.LIMIT:,} characters")
        return env.checked(func(*args, **kwargs))
    return bounded


@contextlib.contextmanager
def _budget(name: str):
    """Run a user template's render with a watchdog: past :data:`TIME_LIMIT` seconds, or once the
    process holds :data:`MEMORY_LIMIT` bytes more than when it started, the render is stopped by an
    exception raised in its thread (loops inside loops, a list grown item by item: what no single
    sandboxed step shows). The watchdog reads the memory from ``/proc/self/statm`` (Linux; elsewhere
    only the time is watched)."""
    import ctypes
    import threading
    import time

    def resident() -> int | None:
        try:
            with open("/proc/self/statm", "rb") as fh:
                return int(fh.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            return None

    target, start, base = threading.get_ident(), time.monotonic(), resident()
    lock, stop, fired = threading.Lock(), threading.Event(), []

    def raise_in_render(exc) -> None:
        with lock:
            if not stop.is_set():
                fired.append(exc)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(exc))

    def watch() -> None:
        while not stop.wait(0.02):
            if time.monotonic() - start > TIME_LIMIT:
                return raise_in_render(_OverTime)
            now = resident()
            if base is not None and now is not None and now - base > MEMORY_LIMIT:
                return raise_in_render(_OverMemory)

    watchdog = threading.Thread(target=watch, name=f"symllm template budget ({name})", daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        with lock:
            stop.set()
            if fired:  # raised but maybe not delivered yet: never let it land after the render
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), None)
        watchdog.join()


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


@lru_cache(maxsize=64)
def _environment(kind: str, user_dir: str | None, names: tuple) -> jinja2.Environment:
    dirs = ([user_dir] if user_dir else []) + [str(template_dir())]
    options = dict(loader=jinja2.FileSystemLoader(dirs), undefined=jinja2.StrictUndefined,
                   autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    if kind == "latex":
        options.update(block_start_string="<%", block_end_string="%>", variable_start_string="<<",
                       variable_end_string=">>", comment_start_string="<#", comment_end_string="#>",
                       finalize=_finalizer(escape_latex))
    elif kind == "markdown":
        options.update(finalize=_finalizer(escape_markdown))
    else:
        options.update(finalize=_finalizer(None))
    env = _Sandbox(**options)
    env.filters.update({name: _bounded_filter(env, name, f) for name, f in env.filters.items()})
    env.filters.update(_filters(kind, dict(names)))
    return env


def environment(kind: str = "latex", template_dir=None, names=None) -> jinja2.Environment:
    """The sandboxed Jinja environment for ``kind`` (``latex``, ``markdown``, ``text``): user
    templates in ``template_dir`` first, then symllm's; ``names`` is the notation.

    >>> env = environment("latex")
    >>> env.from_string("<< x >> and << x|esc >>").render(x="a_b")
    'a\\\\_b and a\\\\_b'
    >>> env.from_string("<< missing >>").render()
    Traceback (most recent call last):
    ...
    jinja2.exceptions.UndefinedError: 'missing' is undefined
    """
    if template_dir is not None and not Path(template_dir).is_dir():
        raise SymllmError(f"template-dir: {str(template_dir)!r} is not a directory")
    names = notation(names) if not isinstance(names, dict) or not all(
        isinstance(k, sp.Symbol) for k in names) else {**S.LATEX, **names}
    key = tuple(sorted(((k.name, v) for k, v in names.items())))
    by_name = {sym.name: sym for sym in S.SYMBOLS}
    return _environment(kind, str(Path(template_dir).resolve()) if template_dir else None,
                        tuple((by_name[k], v) for k, v in key))


def render_template(name: str, context: dict, *, template_dir=None, names=None) -> str:
    """Render the template ``name`` (its ending picks the delimiters and escaping) with ``context``.

    Template errors (undefined variables, sandbox violations, syntax) become one-line SymllmErrors.
    """
    kind = _kind_of(name)
    try:
        template = environment(kind, template_dir, names).get_template(name)
        if template_dir is None:  # symllm's own templates only
            out = template.render(**context)
        else:
            with _budget(name):
                out = _bounded_output(template.generate(**context), name)
        return fold_latex(out, TEXT_WIDTH) if kind == "latex" else out  # LaTeX source within 100 columns
    except _OverTime:
        raise SymllmError(f"template: {name}: took longer than {TIME_LIMIT:g} s (loops inside loops?)") from None
    except _OverMemory:
        raise SymllmError(f"template: {name}: used more than {MEMORY_LIMIT >> 20:,} MiB of memory") from None
    except jinja2.TemplateNotFound as e:
        raise SymllmError(f"template: {e.name!r} not found") from None
    except jinja2.TemplateSyntaxError as e:
        raise SymllmError(f"template: {e.name or name} line {e.lineno}: {_one_line(e.message)}") from None
    except jinja2.TemplateError as e:
        raise SymllmError(f"template: {name}: {_one_line(e.message or e)}") from None
    except SymllmError:
        raise
    except RecursionError:  # a macro that calls itself
        raise SymllmError(f"template: {name}: recursion too deep (a macro calling itself?)") from None
    except Exception as e:  # noqa: BLE001 -- a user template's runtime error: {{ 1/0 }}, {{ none + 1 }}, ...
        raise SymllmError(f"template: {name}: {type(e).__name__}: {_one_line(e)}") from None


def _bounded_output(chunks, name: str) -> str:
    """The pieces a template yields, joined; more than :data:`MAX_OUTPUT` characters is an error."""
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise SymllmError(f"template: {name}: the output would exceed {MAX_OUTPUT:,} characters")
        out.append(chunk)
    return "".join(out)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- layout helpers

def math_delimiters(flavor: str) -> dict:
    """Markdown math delimiters: GitHub's (``$`…`$``, a ```` ```math ```` block) or Jupyter's (``$``, ``$$``).

    >>> math_delimiters("jupyter")["display_open"]
    '$$'
    """
    if flavor == "github":
        return {"open": Safe("$`"), "close": Safe("`$"), "display_open": Safe("```math"),
                "display_close": Safe("```")}
    return {"open": Safe("$"), "close": Safe("$"), "display_open": Safe("$$"), "display_close": Safe("$$")}


def label(letter: str, name: str, of: str | None = None) -> Safe:
    """The LaTeX label of a term, e.g. ``N_{\\mathrm{wq}}``; ``of``: the component a quantity is of, as a
    superscript.

    >>> print(label("F", "lm_head"))
    F_{\\mathrm{lm\\_head}}
    >>> print(label("M", "inference peak", "attention"))
    M_{\\mathrm{inference\\ peak}}^{\\mathrm{attention}}
    """
    def roman(text):
        return escape_latex(text).replace(" ", "\\ ")
    sup = rf"^{{\mathrm{{{roman(of)}}}}}" if of else ""
    return Safe(rf"{letter}_{{\mathrm{{{roman(name)}}}}}{sup}")


def standalone(body: str, title: str, *, template_dir=None, names=None) -> str:
    """A complete LaTeX document around the fragment ``body`` (``standalone.tex.j2``)."""
    return render_template("standalone.tex.j2", {"body": Safe(body), "title": title},
                           template_dir=template_dir, names=names)
