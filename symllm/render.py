"""Presentation: escaping, notation, the expression printers, Jinja environments and templates.

This module lays out what it is handed and computes nothing: :mod:`symllm.derivation` assembles a
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
  ``n_heads``) renames symbols in every output; :func:`load_notation` reads it from TOML or JSON.

>>> latex(2 * S.d * S.d_h * (S.n_h + S.n_kv), {"d": r"d_\\mathrm{model}"})
'2 d_\\\\mathrm{model} d_h \\\\left(n_h + n_{kv}\\\\right)'
>>> render_template("standalone.tex.j2", {"body": Safe("$x$"), "title": "a_b"}).splitlines()[4]
'\\\\title{a\\\\_b}'
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import jinja2
import sympy as sp
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.pretty.stringpict import prettyForm
from sympy.printing.str import StrPrinter

from . import symbols as S
from .errors import SymllmError
from .files import read_text, write_atomic
from .format import grouped, human, human_bytes

__all__ = [
    "FORMATS", "EXTENSIONS", "QUANTITIES", "Formula", "Safe", "notation", "load_notation", "environment",
    "render_template", "standalone", "template_dir", "write_atomic", "escape_latex", "escape_markdown",
    "latex", "num_latex", "label", "math_delimiters",
]

#: output formats of derive (report: latex and markdown)
FORMATS = ("text", "pretty", "latex", "markdown")
#: the file ending of each format's templates
EXTENSIONS = {"text": "txt", "pretty": "txt", "latex": "tex", "markdown": "md"}
#: what each quantity is called, and the letter its equations use
QUANTITIES = {"params": ("parameters", "N"), "flops": ("FLOPs", "F"), "memory": ("bytes", "M"),
             "elementwise": ("element-wise FLOPs", "E"), "kv_cache": ("KV-cache elements", "K")}


# --------------------------------------------------------------------------- templates, escaping

def template_dir() -> Path:
    """The built-in templates: ``symllm/templates`` in an installed wheel, ``templates/`` in a checkout.

    >>> (template_dir() / "report.tex.j2").is_file()
    True
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "standalone.tex.j2").is_file():
            return candidate
    raise SymllmError("templates: symllm's built-in templates are missing (a broken install?)")


class Safe(str):
    """Text already in the output's syntax: templates print it as is (everything else is escaped)."""


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))
_MD_RE = re.compile(r"([\\`*_\[\]<>|#$~&{}])")


def escape_latex(text) -> str:
    """User text (a model name, a description) made safe for LaTeX text mode.

    >>> print(escape_latex("my_model 100% & #1 {x}"))
    my\\_model 100\\% \\& \\#1 \\{x\\}
    """
    return _LATEX_RE.sub(lambda m_: _LATEX_SPECIAL[m_.group()], str(text))


def escape_markdown(text) -> str:
    """User text made safe for (GitHub-flavoured) Markdown: punctuation with a meaning is escaped.

    >>> print(escape_markdown("my_model | $5 *x*"))
    my\\_model \\| \\$5 \\*x\\*
    """
    return _MD_RE.sub(r"\\\1", str(text))


def _finalizer(escape):
    def finalize(value):
        if isinstance(value, (Safe, Markup)):
            return str(value)
        if isinstance(value, Formula):
            value = value.text()
        return escape(value) if escape else value
    return finalize


# --------------------------------------------------------------------------- notation

def _symbol_for(key) -> sp.Symbol:
    if isinstance(key, sp.Symbol) and key in S.SYMBOLS:
        return key
    if isinstance(key, str):
        for info in S.SYMBOLS.values():
            if key in (info.symbol.name, info.code, info.latex):
                return info.symbol
    known = ", ".join(sym.name for sym in S.SYMBOLS)
    raise SymllmError(f"notation: unknown symbol {str(key)!r} (known: {known})")


def _balanced(tex: str) -> bool:
    depth = 0
    for i, ch in enumerate(tex):
        if ch in "{}" and (i == 0 or tex[i - 1] != "\\"):
            depth += 1 if ch == "{" else -1
            if depth < 0:
                return False
    return depth == 0


def notation(mapping=None) -> dict[sp.Symbol, str]:
    """Symbol -> LaTeX: symllm's table with ``mapping`` on top (or the file ``mapping`` names, see
    :func:`load_notation`).

    Keys may be symbols, their names (``n_h``) or Meta's code names (``n_heads``); values are LaTeX.

    >>> notation({"n_heads": "h"})[S.n_h], notation()[S.n_kv]
    ('h', 'n_{kv}')
    >>> notation({"x": "y"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: notation: unknown symbol 'x' (known: V, d, L, n_h, ...)
    """
    if isinstance(mapping, (str, Path)):
        return load_notation(mapping)
    out = dict(S.LATEX)
    for key, value in (mapping or {}).items():
        symbol = _symbol_for(key)
        if not isinstance(value, str) or not value.strip() or not _balanced(value):
            raise SymllmError(f"notation: {symbol.name}: expected a LaTeX string with balanced braces, "
                              f"got {value!r}")
        out[symbol] = value.strip()
    return out


def load_notation(path) -> dict[sp.Symbol, str]:
    """A notation file (TOML or JSON, one ``symbol = "LaTeX"`` per line) as a notation mapping.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "paper.json"
    >>> _ = p.write_text('{"d": "d_\\\\\\\\mathrm{model}", "n_h": "h"}')
    >>> load_notation(p)[S.d]
    'd_\\\\mathrm{model}'
    """
    path = Path(path)
    text = read_text(path, "notation")
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            try:
                import tomli as tomllib
            except ImportError:
                raise SymllmError("notation: reading TOML needs Python 3.11+ or tomli; use JSON") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SymllmError(f"notation: {str(path)!r} is not valid TOML ({e})") from None
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise SymllmError(f"notation: {str(path)!r} is not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(raw, dict):
        raise SymllmError(f"notation: {str(path)!r} must map symbols to LaTeX strings")
    return notation(raw)


# --------------------------------------------------------------------------- formulas

class _NamedStrPrinter(StrPrinter):
    def __init__(self, names, **settings):
        super().__init__(settings)
        self._names = names

    def _print_Symbol(self, expr):
        return self._names.get(expr) or super()._print_Symbol(expr)

    _print_Dummy = _print_Symbol


class _NamedPrettyPrinter(PrettyPrinter):
    def __init__(self, names, **settings):
        super().__init__(settings)
        self._names = names

    def _print_Symbol(self, e, bold_name=False):
        if e in self._names:
            return prettyForm(self._names[e])
        return super()._print_Symbol(e, bold_name)

    _print_Dummy = _print_Symbol


class Formula:
    """An expression handed to a template; only the filters (``tex``, ``text``) can look inside.

    ``numbers`` maps stand-in symbols to the numbers they show (a formula with the values
    substituted but not yet evaluated, printed with explicit multiplication dots).

    >>> Formula(S.d * S.n_h).text()
    'd*n_h'
    """

    __slots__ = ("_expr", "_numbers")

    def __init__(self, expr, numbers=None):
        self._expr = sp.sympify(expr)
        self._numbers = dict(numbers or {})

    def latex(self, names=None) -> str:
        """LaTeX with ``names`` (symbol -> LaTeX, see :func:`notation`)."""
        names = dict(names or S.LATEX)
        if self._numbers:
            names.update({k: num_latex(v) for k, v in self._numbers.items()})
            return sp.latex(self._expr, symbol_names=names, mul_symbol="dot")
        return sp.latex(self._expr, symbol_names=names)

    def text(self) -> str:
        """Plain text (SymPy's ``str``)."""
        return _NamedStrPrinter({k: _num_text(v) for k, v in self._numbers.items()}).doprint(self._expr)

    def pretty(self) -> str:
        """Unicode, SymPy's pretty printer (may span several lines)."""
        names = {k: _num_text(v) for k, v in self._numbers.items()}
        return _NamedPrettyPrinter(names, use_unicode=True, wrap_line=False).doprint(self._expr)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return f"Formula({self.text()})"


def _num_text(value) -> str:
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, float):
        return repr(value)
    return str(int(value))


def num_latex(value) -> str:
    """A number for LaTeX math: thousands groups as ``{,}``, fractions as ``\\frac``.

    >>> num_latex(8030261248), num_latex(Fraction(33, 64))
    ('8{,}030{,}261{,}248', '\\\\frac{33}{64}')
    """
    if isinstance(value, Fraction) and value.denominator != 1:
        return rf"\frac{{{num_latex(value.numerator)}}}{{{num_latex(value.denominator)}}}"
    if isinstance(value, float):
        return repr(value)
    return grouped(value).replace(",", "{,}")


def latex(expr, names=None) -> str:
    """LaTeX of ``expr`` in symllm's notation, with ``names`` (a :func:`notation` mapping) on top.

    >>> latex(S.n_kv * S.d_h, {"n_kv": "g"})
    'd_h g'
    """
    return Formula(expr).latex(notation(names))


# --------------------------------------------------------------------------- environments

def _filters(kind: str, names: dict) -> dict:
    def tex(value):
        if isinstance(value, Formula):
            return Safe(value.latex(names))
        if isinstance(value, sp.Basic):
            return Safe(Formula(value).latex(names))
        return Safe(escape_latex(value))

    def text(value):
        return Safe(value.text() if isinstance(value, Formula) else str(value))

    def pretty(value, indent=0):
        out = value.pretty() if isinstance(value, Formula) else str(value)
        return Safe(("\n" + " " * indent).join(out.splitlines()))

    def plain(value):
        return Safe(_num_text(value) if isinstance(value, (float, Fraction)) else grouped(value))

    def num(value):
        return Safe(num_latex(value)) if kind in ("latex", "markdown") else plain(value)

    def esc(value):
        if isinstance(value, (Safe, Markup)):
            return Safe(value)
        return Safe({"latex": escape_latex, "markdown": escape_markdown}.get(kind, str)(value))

    @jinja2.pass_context
    def show(ctx, value, indent=0):
        return pretty(value, indent) if ctx.get("format") == "pretty" else text(value)

    return {"tex": tex, "text": text, "pretty": pretty, "show": show, "num": num, "esc": esc,
            "grouped": plain, "human": lambda v, flops=False: Safe(human(v, flops)),
            "human_bytes": lambda v: Safe(human_bytes(v)),
            "pct": lambda v, total: Safe(f"{100 * v / total:.2f}" if total else "0.00")}


def _kind_of(name: str) -> str:
    return {"tex": "latex", "md": "markdown"}.get(name.rsplit(".", 2)[-2] if name.count(".") >= 2 else "", "text")


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
    env = SandboxedEnvironment(**options)
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
        return environment(kind, template_dir, names).get_template(name).render(**context)
    except jinja2.TemplateNotFound as e:
        raise SymllmError(f"template: {e.name!r} not found") from None
    except jinja2.TemplateSyntaxError as e:
        raise SymllmError(f"template: {e.name or name} line {e.lineno}: {e.message}") from None
    except jinja2.TemplateError as e:
        raise SymllmError(f"template: {name}: {e.message or e}") from None


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


def label(letter: str, name: str) -> Safe:
    """The LaTeX label of a term, e.g. ``N_{\\mathrm{wq}}``.

    >>> print(label("F", "lm_head"))
    F_{\\mathrm{lm\\_head}}
    """
    return Safe(rf"{letter}_{{\mathrm{{{escape_latex(name)}}}}}")


def standalone(body: str, title: str, *, template_dir=None, names=None) -> str:
    """A complete LaTeX document around the fragment ``body`` (``standalone.tex.j2``)."""
    return render_template("standalone.tex.j2", {"body": Safe(body), "title": title},
                           template_dir=template_dir, names=names)
