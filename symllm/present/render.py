"""Presentation: escaping, notation, the expression printers, Jinja environments and templates.

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
  ``n_heads``) renames symbols in every output; :func:`load_notation` reads it from TOML or JSON.

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
from sympy.printing.latex import LatexPrinter
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.pretty.stringpict import prettyForm
from sympy.printing.str import StrPrinter

from symllm.arch import symbols as S
from symllm.errors import SymllmError
from symllm.files import read_json, read_text, write_atomic
from symllm.validate import short, shown_path, with_list
from symllm.present.format import (_LINE_BREAKS, _TEX_SPACES, FORMATS, QUANTITIES, digits, escape_latex, fold_latex,
                                   grouped, human, human_bytes)

__all__ = [
    "FORMATS", "EXTENSIONS", "QUANTITIES", "Formula", "Safe", "notation", "load_notation", "environment",
    "render_template", "standalone", "template_dir", "write_atomic", "escape_latex", "escape_markdown",
    "latex", "num_latex", "label", "math_delimiters", "tex_refusal", "tex_width", "LATEX_WIDTH", "em_width",
    "pcol", "wrap_markdown",
]

#: the file ending of each format's templates
EXTENSIONS = {"text": "txt", "pretty": "txt", "latex": "tex", "markdown": "md"}


# --------------------------------------------------------------------------- templates, escaping

def template_dir() -> Path:
    """The built-in templates: ``symllm/templates`` in an installed wheel, ``templates/`` in a checkout.

    >>> (template_dir() / "report.tex.j2").is_file()
    True
    """
    here = Path(__file__).resolve().parents[1]  # the symllm package
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "standalone.tex.j2").is_file():
            return candidate
    raise SymllmError("templates: symllm's built-in templates are missing (a broken install?)")


class Safe(str):
    """Text already in the output's syntax: templates print it as is (everything else is escaped)."""


_MD_RE = re.compile(r"([\\`*_\[\]<>|#$~&{}])")


def escape_markdown(text) -> str:
    """User text made safe for (GitHub-flavoured) Markdown: punctuation with a meaning is escaped.

    >>> print(escape_markdown("my_model | $5 *x*"))
    my\\_model \\| \\$5 \\*x\\*
    """
    return _MD_RE.sub(r"\\\1", _LINE_BREAKS.sub(" ", str(text)))


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
    raise SymllmError(with_list(f"notation: unknown symbol {short(str(key), 20)} (known: ",
                                [sym.name for sym in S.SYMBOLS], see="symllm.arch.symbols", near=str(key)))


_GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi "
          "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi "
          "Sigma Upsilon Phi Psi Omega").split()
#: the LaTeX a notation value may use: symbols (no argument), math fonts and accents (one math
#: argument) and text commands (one argument of plain words); everything else (\input, \write,
#: \openin, \catcode, \csname, \def, ...) is refused, so a notation can neither read nor write files
#: nor break the document
TEX_SYMBOLS = frozenset(_GREEK + (
    "ell hbar imath jmath prime infty partial nabla cdot times ast star circ bullet lvert rvert lVert rVert "
    "vert Vert mid langle rangle lfloor rfloor lceil rceil ldots cdots dots emptyset").split())
#: spacing (between symbols only: never a script's argument, never carrying a script)
TEX_SPACES = frozenset("quad qquad".split())
TEX_FONTS = frozenset("mathrm mathit mathbf mathsf mathtt mathcal mathnormal boldsymbol operatorname".split())
TEX_ACCENTS = frozenset(
    "hat bar tilde vec dot ddot check breve acute grave mathring widehat widetilde overline underline".split())
TEX_TEXT = frozenset("text textrm textit textsf texttt textbf".split())
_TEX_CONTROL_SYMBOLS = frozenset(",;:! |{}_#%&")
_TEX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789()[]+-*/=,.;:!?")
_TEX_TEXT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;()/+-")
_TEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|.", re.S)
#: the longest notation value, and the deepest nesting of braces
TEX_MAX_LENGTH, TEX_MAX_DEPTH = 100, 8


class _TexRefused(Exception):
    pass


class _TexChecker:
    """A recursive-descent check of a notation value against a small grammar of math-mode LaTeX:

    value := item*;  item := atom [_ arg] [']* [^ arg] (or ^ before _, without primes);
    atom := a letter, digit or plain punctuation | a symbol | {value} | font arg | accent arg | text {words};
    arg := a letter or digit | a symbol | {value} | font arg | text {words}.
    """

    def __init__(self, tex: str):
        self.tokens = _TEX_TOKEN.findall(tex)
        self.i = 0

    def peek(self, math=True):
        """The next token; in math mode spaces are skipped, as TeX skips them."""
        while math and self.i < len(self.tokens) and self.tokens[self.i] == " ":
            self.i += 1
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, math=True):
        tok = self.peek(math)
        self.i += 1
        return tok

    def check(self):
        self.value(0)
        if self.peek() is not None:
            raise _TexRefused(f"unbalanced '{self.peek()}'")

    def value(self, depth):
        if depth > TEX_MAX_DEPTH:
            raise _TexRefused(f"braces nested more than {TEX_MAX_DEPTH} deep")
        while self.peek() not in (None, "}"):
            self.item(depth)

    def group(self, depth):
        if self.take() != "{":
            raise _TexRefused("expected '{'")
        self.value(depth + 1)
        if self.take() != "}":
            raise _TexRefused("unbalanced '{'")

    def text_group(self):
        if self.take() != "{":
            raise _TexRefused("a text command needs {words}")
        while self.peek(math=False) in _TEX_TEXT_CHARS:
            self.take(math=False)
        if self.take(math=False) != "}":
            raise _TexRefused("a text command takes plain words (letters, digits, .,:;()/+-)")

    def command(self, tok, depth, *, as_arg=False):
        name = tok[1:]
        if name in TEX_SYMBOLS or (name in TEX_SPACES and not as_arg):
            return
        if len(name) == 1 and name in _TEX_CONTROL_SYMBOLS and not as_arg:
            return
        if name in TEX_FONTS or (name in TEX_ACCENTS and not as_arg):
            self.arg(depth, simple=True)
        elif name in TEX_TEXT:
            self.text_group()
        elif len(name) == 1:
            raise _TexRefused(f"'{tok}' is not allowed")
        else:
            raise _TexRefused(f"'{tok[:12]}' is not allowed")

    def arg(self, depth, simple=False):
        tok = self.peek()
        if tok is None or tok == "}":
            raise _TexRefused("an argument is missing")
        if tok == "{":
            return self.group(depth)
        self.take()
        if tok.startswith("\\") and len(tok) > 1:
            fragile = simple or tok[1:] in ("boldsymbol", "operatorname")  # x_\boldsymbol{a} fails
            if fragile and tok[1:] not in TEX_SYMBOLS:  # \mathrm\hat x: an argument that needs braces
                raise _TexRefused(f"'{tok}' cannot be an argument unbraced; use braces")
            return self.command(tok, depth, as_arg=True)
        if not tok.isalnum() or not tok.isascii():
            raise _TexRefused(f"{short(tok, 12)} cannot be an argument unbraced")

    def item(self, depth):
        tok = self.peek()
        if tok == "{":
            self.group(depth)
        elif tok in ("_", "^", "'"):
            raise _TexRefused(f"{tok!r} must follow a symbol")
        else:
            self.take()
            if tok.startswith("\\") and len(tok) > 1:
                self.command(tok, depth)
            elif tok not in _TEX_CHARS:
                raise _TexRefused(f"{short(tok, 8)} is not allowed")
        if tok.startswith("\\") and (tok[1:] in TEX_SPACES or tok[1:] in tuple(",;:! ")):  # spacing: no scripts
            if self.peek() in ("_", "^", "'"):
                raise _TexRefused(f"{self.peek()!r} must follow a symbol, not spacing")
            return
        sub = sup = primes = False
        while self.peek() in ("_", "^", "'"):
            tok = self.take()
            if tok == "_":
                if sub or primes:
                    raise _TexRefused("a second subscript, or a subscript after a prime")
                sub = True
                self.arg(depth)
            elif tok == "^":
                if sup:
                    raise _TexRefused("a second superscript")
                sup = True
                self.arg(depth, simple=primes)  # x'^\text{a} fails: after a prime, braces
            else:
                if sup:
                    raise _TexRefused("a prime after a superscript")
                if self.peek(math=False) == " " and self.peek() == "^":
                    raise _TexRefused("a space between a prime and a superscript")
                primes = True


def tex_refusal(tex: str) -> str | None:
    r"""Why the LaTeX ``tex`` is refused as a symbol's notation, or ``None`` when it is accepted.

    Accepted is math-mode LaTeX that compiles on its own and as the base of a power: letters, digits,
    plain punctuation, braces, one subscript and one superscript (or primes) per symbol, Greek
    letters and a few symbols, math fonts, accents and ``\text{words}`` (see :data:`TEX_SYMBOLS`,
    :data:`TEX_FONTS`, :data:`TEX_ACCENTS`, :data:`TEX_TEXT`); nothing that reads or writes files.

    >>> tex_refusal(r"d_\mathrm{model}"), tex_refusal(r"\lvert\mathcal{V}\rvert"), tex_refusal("h'")
    (None, None, None)
    >>> print(tex_refusal(r"\input{/etc/passwd}"))  # doctest: +ELLIPSIS
    '\input' is not allowed
    >>> print(tex_refusal(r"d\\}"))
    '\\' is not allowed
    >>> print(tex_refusal("a_b_c"))
    a second subscript, or a subscript after a prime
    """
    if not isinstance(tex, str) or not tex.strip():
        return "expected a non-empty string"
    if len(tex) > TEX_MAX_LENGTH:
        return f"longer than {TEX_MAX_LENGTH} characters"
    try:
        _TexChecker(tex.strip()).check()
    except _TexRefused as e:
        return str(e)
    return None


def notation(mapping=None) -> dict[sp.Symbol, str]:
    """Symbol -> LaTeX: symllm's table with ``mapping`` on top (or the file ``mapping`` names, see
    :func:`load_notation`).

    Keys may be symbols, their names (``n_h``) or Meta's code names (``n_heads``); values are LaTeX.

    >>> notation({"n_heads": "h"})[S.n_h], notation()[S.n_kv]
    ('h', 'n_{kv}')
    >>> notation({"x": "y"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symllm.errors.SymllmError: notation: unknown symbol 'x' (known: all ...: see symllm.arch.symbols)
    """
    if isinstance(mapping, (str, Path)):
        return load_notation(mapping)
    out = dict(S.LATEX)
    for key, value in (mapping or {}).items():
        symbol = _symbol_for(key)
        why = tex_refusal(value)
        if why is not None:
            raise SymllmError(f"notation: {symbol.name}: {short(value, 16)} is not accepted: {why}")
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
    if path.suffix.lower() != ".toml":
        raw = read_json(path, "notation")
    else:
        text = read_text(path, "notation")
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
            raise SymllmError(f"notation: {shown_path(path)} is not valid TOML ({e})") from None
        except (RecursionError, ValueError):  # nested too deep; an integer over 4,300 digits
            raise SymllmError(f"notation: {shown_path(path)} is not valid TOML "
                              "(nested too deeply or a number too long)") from None
    if not isinstance(raw, dict):
        raise SymllmError(f"notation: {shown_path(path)} must map symbols to LaTeX strings")
    return notation(raw)


# --------------------------------------------------------------------------- formulas

class _SpacedLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer, with a thin space between the factors of a product of two or more symbols
    (``n \\, n_{kv}``: TeX ignores a plain space in math, so ``n n_{kv}`` was typeset as nn_kv); a
    product with one symbol (``2 d``) keeps the plain juxtaposition."""

    def _print_Mul(self, expr):
        saved = self._settings["mul_symbol_latex"]
        if saved in (" ", r" \, "):
            symbolic = sum(1 for f in expr.args if not f.is_Number)
            self._settings["mul_symbol_latex"] = r" \, " if symbolic >= 2 else " "
        try:
            return super()._print_Mul(expr)
        finally:
            self._settings["mul_symbol_latex"] = saved


def _latex(expr, **settings) -> str:
    """``expr`` in LaTeX by :class:`_SpacedLatexPrinter` (``settings``: SymPy's, e.g. ``symbol_names``).

    >>> _latex(S.n_h * S.n_kv * 2)
    '2 \\\\, n_{h} \\\\, n_{kv}'
    """
    frozen = tuple((k, isinstance(v, dict), tuple(v.items()) if isinstance(v, dict) else v)
                   for k, v in sorted(settings.items()))
    try:
        return _latex_of(expr, frozen)
    except TypeError:  # a setting that cannot be a key
        return _SpacedLatexPrinter(settings).doprint(expr)


@lru_cache(maxsize=4096)
def _latex_of(expr, frozen: tuple) -> str:
    """:func:`_latex` once per expression and settings in a process: a report prints most of its formulas
    twice or more (a line-breaking trial, each format of one report, a sub-term shown again)."""
    return _SpacedLatexPrinter({k: dict(v) if was_dict else v for k, was_dict, v in frozen}).doprint(expr)


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
            return _latex(self._expr, symbol_names=names, mul_symbol="dot")
        return _latex(self._expr, symbol_names=names)

    def text(self) -> str:
        """Plain text (SymPy's ``str``)."""
        return _NamedStrPrinter({k: _num_text(v) for k, v in self._numbers.items()}).doprint(self._expr)

    def latex_lines(self, names=None, width: float = None, first: float = None, measure=None) -> list[str]:
        """The LaTeX broken into lines of at most ``width`` points (estimated by ``measure``, default
        :func:`tex_width`; default width :data:`LATEX_WIDTH`; ``first``: the first line's, where the line
        starts with a label; ``measure=len``: characters of source, as Markdown's display math counts): between the
        terms of a sum and the factors of a product, at any depth (a sum inside a product that must break
        gets ``\\bigl( … \\bigr)``, which may span lines; a quotient whose denominator does not fit is
        written ``\\bigl(num\\bigr) / \\bigl(den\\bigr)``, each broken).

        >>> f = Formula(sum(sp.Symbol(f"x{i}") for i in range(40)))
        >>> lines = f.latex_lines()
        >>> len(lines) > 1 and lines[1].startswith("+ ") and all(tex_width(x) <= LATEX_WIDTH for x in lines)
        True
        """
        names = dict(names or S.LATEX)
        settings = {}
        if self._numbers:
            names.update({k: num_latex(v) for k, v in self._numbers.items()})
            settings["mul_symbol"] = "dot"
        width = LATEX_WIDTH if width is None else width
        return _lines(self._expr, lambda e: _latex(e, symbol_names=names, **settings), measure or tex_width, width,
                      r" \cdot " if self._numbers else r" \, ", r"\bigl(", r"\bigr)",
                      first=width if first is None else first)

    def text_lines(self, width: int = 80) -> list[str]:
        """The plain text broken into lines of at most ``width`` characters where it can be (between
        terms and factors, see :meth:`latex_lines`).

        >>> lines = Formula(sum(sp.Symbol(f"x{i}") for i in range(30))).text_lines(40)
        >>> lines[1], max(map(len, lines)) <= 40, " ".join(lines) == str(sum(sp.Symbol(f"x{i}") for i in range(30)))
        ('+ x15 + x16 + x17 + x18 + x19 + x2 + x20', True, True)
        """
        printer = _NamedStrPrinter({k: _num_text(v) for k, v in self._numbers.items()})
        return _lines(self._expr, printer.doprint, len, width, "*", "(", ")", glue_mul="")

    def pretty(self, width: int | None = None) -> str:
        """Unicode, SymPy's pretty printer (may span several lines); ``width``: wrap to that many
        columns (SymPy's own line wrapping), else one line however long.

        >>> f = Formula(sum(sp.Symbol(f"x{i}") for i in range(30)))
        >>> max(map(len, f.pretty(40).splitlines())) <= 40, len(f.pretty().splitlines())
        (True, 1)
        """
        names = {k: _num_text(v) for k, v in self._numbers.items()}
        wrap = {"wrap_line": False} if width is None else {"wrap_line": True, "num_columns": width}
        return _NamedPrettyPrinter(names, use_unicode=True, **wrap).doprint(self._expr)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return f"Formula({self.text()})"


#: the width, in points as :func:`tex_width` estimates them, a display line of LaTeX math may take: the
#: narrowest column a derivation is \\input into (one column of a ``twocolumn`` article, 229pt at 10pt
#: type; IEEEtran's 252pt; llncs' 347pt) less an equation number; :func:`tex_width` overestimates 10pt
#: type by about a tenth, which is the margin
LATEX_WIDTH = 200.0
_TEX_WIDTH_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\{,\}|[_^]|.", re.S)
_TEX_NO_WIDTH = {"\\left", "\\right", "\\bigl", "\\bigr", "\\mathrm", "\\mathit", "\\mathbf",
                 "\\operatorname", "\\nonumber", "\\text", "{", "}", " "}


def tex_width(tex: str) -> float:
    r"""A rough width in points (11pt type) of inline LaTeX math: enough to choose where lines break.

    >>> tex_width(r"2 \cdot 32") < tex_width("2 + 32") < tex_width("2{,}048 + 128{,}256")
    True
    """
    width, script, depth, script_depth = 0.0, False, 0, None
    for tok in _TEX_WIDTH_TOKEN.findall(tex):
        if tok in ("_", "^"):
            script, script_depth = True, depth
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        size = 0.0 if tok in _TEX_NO_WIDTH else 3.0 if tok == "{,}" else 8.0 if tok == "\\cdot" else \
            2.0 if tok == "\\," else 11.0 if tok == "\\quad" else 22.0 if tok == "\\qquad" else \
            13.5 if tok in "+-=" else 4.3 if tok in "()[]|" else 6.0
        width += size * (0.7 if script else 1.0)
        if script and (script_depth == depth or (tok == "}" and depth == script_depth)):
            script = tok == "{" and depth > script_depth
    return width


def _narrowest(doprint, measure):
    """A function giving a lower bound of ``measure(doprint(e))``: 0.7 (a script's scale in :func:`tex_width`)
    times the widths of the symbols ``e`` prints, each as often as it occurs (the printers write every
    occurrence of a symbol, with its name as printed alone, and nothing has a negative width). It rules
    out a fit without printing what cannot fit (the outer sums of a long formula, each printed whole, were
    a quarter of a report's line breaking)."""
    memo: dict = {}

    def narrowest(e):
        hit = memo.get(e)
        if hit is None:
            hit = 0.7 * measure(doprint(e)) if e.is_Symbol else sum(narrowest(a) for a in e.args)
            memo[e] = hit
        return hit
    return narrowest


def _pieces(expr, doprint, measure, width, mul, open_, close_, glue_mul, depth=0,
            split=False, *, narrowest) -> list[tuple[str, str]]:
    """``expr`` printed as (glue, text) pieces; a line may break before any piece but the first (the
    glue joins a piece to the one before it on the same line). ``split``: break even if it fits (a sum
    whose factors make the product too wide). ``narrowest``: :func:`_narrowest` of ``doprint`` and
    ``measure`` (one per formula)."""
    if depth > 6:
        return [("", doprint(expr))]
    whole = None  # expr printed whole, where the check below printed it (the branches reuse it)
    if not split and narrowest(expr) <= width:
        whole = doprint(expr)
        if measure(whole) <= width:
            return [("", whole)]
    sub_pieces = functools.partial(_pieces, narrowest=narrowest)
    if isinstance(expr, sp.Add):
        out = []
        for i, term in enumerate(expr.as_ordered_terms()):
            neg = term.could_extract_minus_sign()
            sign = "- " if neg else "+ " if i else ""
            sub = sub_pieces(-term if neg else term, doprint, measure, width - measure(sign), mul, open_, close_,
                          glue_mul, depth + 1)
            out += [(" " if i else "", sign + sub[0][1])] + sub[1:]
        return out
    if isinstance(expr, (sp.Max, sp.Min)):  # max(a, b, ...): breaks between its arguments
        whole = whole or doprint(expr)
        name = whole[:whole.index("(")]
        name = name[:-len("\\left")] if name.endswith("\\left") else name
        args = sorted(expr.args, key=sp.default_sort_key)
        out = []
        for i, arg in enumerate(args):
            sub = sub_pieces(arg, doprint, measure, width, mul, open_, close_, glue_mul, depth + 1)
            first = (name + open_ if i == 0 else "") + sub[0][1]
            sub = [("" if i == 0 else " ", first)] + sub[1:]
            sub[-1] = (sub[-1][0], sub[-1][1] + ("," if i < len(args) - 1 else close_))
            out += sub
        return out
    if isinstance(expr, (sp.floor, sp.ceiling)):  # a long ⌊…⌋ or ⌈…⌉: its argument broken inside
        kind = "floor" if isinstance(expr, sp.floor) else "ceil"
        if open_.startswith("\\"):
            left, right = rf"\bigl\l{kind} ", rf" \bigr\r{kind}"
        else:  # the function's name as printed, with its parenthesis
            whole = whole or doprint(expr)
            left, right = whole[:whole.index("(") + 1], ")"
        arg = expr.args[0]
        neg = not isinstance(arg, sp.Add) and arg.could_extract_minus_sign()
        sub = sub_pieces(-arg if neg else arg, doprint, measure, width, mul, open_, close_, glue_mul, depth + 1,
                      split=True)
        sub[0] = (sub[0][0], left + ("-" if neg else "") + sub[0][1])
        sub[-1] = (sub[-1][0], sub[-1][1] + right)
        return sub
    if isinstance(expr, sp.Mul) and not expr.could_extract_minus_sign():
        num, den = sp.fraction(expr)
        if den != 1 and measure(doprint(den)) > width:  # (num) / (den), each broken between its terms
            slash = r" \big/ " if open_.startswith("\\") else "/"
            top = sub_pieces(num, doprint, measure, width - measure(open_ + close_ + slash), mul, open_, close_,
                          glue_mul, depth + 1)
            bottom = sub_pieces(den, doprint, measure, width, mul, open_, close_, glue_mul, depth + 1, split=True)
            top[0] = (top[0][0], open_ + top[0][1])
            top[-1] = (top[-1][0], top[-1][1] + close_ + slash)
            bottom[0] = ("", open_ + bottom[0][1])
            bottom[-1] = (bottom[-1][0], bottom[-1][1] + close_)
            return top + bottom
        # a long quotient of a sum or a max: 1/den first, the numerator broken
        if den != 1 and num != 1 and any(isinstance(f, (sp.Add, sp.Max, sp.Min)) for f in sp.Mul.make_args(num)):
            sub = sub_pieces(num, doprint, measure, width, mul, open_, close_, glue_mul, depth + 1, split=True)
            paren = isinstance(num, sp.Add)  # max(...) brings its own parentheses
            sub[0] = (sub[0][0], doprint(1 / den) + mul + (open_ if paren else "") + sub[0][1])
            sub[-1] = (sub[-1][0], sub[-1][1] + (close_ if paren else ""))
            return sub
    if isinstance(expr, sp.Mul) and not expr.could_extract_minus_sign() and all(
            not (f.is_Pow and f.exp.is_negative) and not (f.is_Rational and not f.is_Integer) for f in expr.args):
        factors = expr.as_ordered_factors()
        groups = (sp.Add, sp.Max, sp.Min, sp.floor, sp.ceiling)
        if not any(isinstance(f, groups) for f in factors):  # a long product of numbers: break between factors
            return [("" if i == 0 else glue_mul, (mul.lstrip() if i else "") + doprint(f)) for i, f in enumerate(factors)]
        out = [("", "")]  # factors stick to the sum they multiply; the sum breaks between its terms
        for i, factor in enumerate(factors):
            sep = mul if i else ""
            if isinstance(factor, groups):  # (the width left after what precedes it on the line)
                lead = measure(out[-1][1] + sep + open_)
                sub = sub_pieces(factor, doprint, measure, max(width - lead, width / 2), mul, open_, close_, glue_mul,
                              depth + 1, split=True)
                paren = isinstance(factor, sp.Add)  # max(...) brings its own parentheses
                out[-1] = (out[-1][0], out[-1][1] + sep + (open_ if paren else "") + sub[0][1])
                out += sub[1:]
                out[-1] = (out[-1][0], out[-1][1] + (close_ if paren else ""))
            else:
                out[-1] = (out[-1][0], out[-1][1] + sep + doprint(factor))
        return out
    return [("", whole or doprint(expr))]


def _lines(expr, doprint, measure, width, mul, open_, close_, glue_mul=" ", first=None) -> list[str]:
    """``expr`` printed and broken greedily into lines no wider than ``width`` (the first line: ``first``)
    where it can be."""
    first = width if first is None else first
    narrowest, whole = _narrowest(doprint, measure), None
    if narrowest(expr) <= first:
        whole = doprint(expr)
        if measure(whole) <= first:
            return [whole]
    lines = []
    for glue, text in _pieces(expr, doprint, measure, min(width, first), mul, open_,
                              close_, glue_mul, narrowest=narrowest):
        if lines and measure(lines[-1] + glue + text) <= (first if len(lines) == 1 else width):
            lines[-1] += glue + text
        else:
            lines.append(text)
    return lines if len(lines) > 1 else [doprint(expr) if whole is None else whole]


def _num_text(value) -> str:
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{digits(value.numerator)}/{digits(value.denominator)}"
    if isinstance(value, float):
        return repr(value)
    return digits(value)


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
    'd_h \\\\, g'
    """
    return Formula(expr).latex(notation(names))


# --------------------------------------------------------------------------- environments

def em_width(text) -> float:
    """A generous width in ems of plain text in a roman font (digits are half an em in Computer Modern,
    Times and Libertine alike): enough to size a table's columns.

    >>> em_width("8,030,261,248") < em_width("15.00 GiB") + 2 < em_width("a training step's peak")
    True
    """
    widths = {",": 0.28, ".": 0.28, " ": 0.34, "(": 0.39, ")": 0.39, "%": 0.84, "-": 0.34}
    total = 0.0
    for ch in str(text):
        total += widths.get(ch, 0.5 if ch.isdigit() else 0.74 if ch.isupper() else 0.9 if ch in "mwMW" else 0.52)
    return total * 1.05


def pcol(columns) -> Safe:
    """The spec of a table's first column, a ``p{}`` as wide as the line less the other columns
    (``columns``: the texts of each, widest decides) and the gaps between them: a table of
    ``@{}<< pcol >>rr@{}`` fits the column it is put in (``\\linewidth``), its first column wrapping.

    >>> print(pcol([["1,024"], ["yes", "no"]]))
    p{\\dimexpr\\linewidth-4.03em-4\\tabcolsep\\relax}
    """
    ems = sum(max((em_width(x) for x in col), default=0.0) for col in columns)
    return Safe(rf"p{{\dimexpr\linewidth-{ems:.2f}em-{2 * len(columns)}\tabcolsep\relax}}")


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
        return Safe(_num_text(value) if isinstance(value, (float, Fraction)) else grouped(value))

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
    #: ``\\quad =``; every line fits the format's width (:func:`_display_width`; a label is not an alignment
    #: column that narrows the rest)
    measure, width = _display_width(kind)
    nonumber = " \\nonumber" if kind == "latex" else ""
    break_line = nonumber + " \\\\\n&\\qquad "
    break_eq = nonumber + " \\\\\n&\\quad = "
    rest = width - measure("\\qquad ")

    def fold(line, room):
        """Markdown: a display line still wider than ``room`` (an unbreakable nest of ceilings and fractions)
        continued on the next source line (:func:`_fold_source`: the typeset math is unchanged)."""
        return _fold_source(line, room) if kind == "markdown" else line

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
        parts = _SYMBOL_NAME_RE.split(str(value))
        return Safe("".join(f"${names.get(_SYMBOL_BY_NAME[p], p)}$" if i % 2 else escape_latex(p)
                            for i, p in enumerate(parts)))

    return {"tex": tex, "text": text, "pretty": pretty, "show": show, "num": num, "esc": esc,
            "mdwrap": lambda value, width=TEXT_WIDTH: Safe(wrap_markdown(value, width)),
            "texlines": texlines, "texsum": texsum, "texjoin": texjoin, "pcol": pcol, "ttpath": ttpath, "meaning": meaning, "joinlines": joinlines,
            "grouped": plain, "human": lambda v, flops=False: Safe(human(v, flops)),
            "human_bytes": lambda v: Safe(human_bytes(v)),
            "pct": lambda v, total: Safe(f"{100 * v / total:.2f}" if total else "0.00")}


#: the columns terminal output (a text derivation) fits
TEXT_WIDTH = 100
#: symbol names with an underscore (``n_h``, ``d_ff``, ``beta_w``) as they appear in descriptions
_SYMBOL_BY_NAME = {sym.name: sym for sym in S.SYMBOLS if "_" in sym.name}
_SYMBOL_NAME_RE = re.compile(r"(?<![A-Za-z0-9_\\])(" + "|".join(
    re.escape(n) for n in sorted(_SYMBOL_BY_NAME, key=len, reverse=True)) + r")(?![A-Za-z0-9_])")


def _display_width(kind: str):
    """How a display line of math is measured, and how wide it may be, in ``kind``: LaTeX's typeset width
    in points (:func:`tex_width`, :data:`LATEX_WIDTH`); Markdown's source in columns (a ```` ```math ````
    block is read in a terminal too: :data:`TEXT_WIDTH` less the ``&`` a line starts with and the
    `` \\\\`` it ends with).

    >>> _display_width("markdown") == (len, 96), _display_width("latex")[1] == LATEX_WIDTH
    (True, True)
    """
    if kind == "markdown":
        return len, TEXT_WIDTH - len("&") - len(" \\\\")
    return tex_width, LATEX_WIDTH




def _fold_source(tex: str, room: int, indent: str = "  ") -> str:
    r"""LaTeX math source longer than ``room`` columns continued on further lines at its spaces (TeX and
    MathJax read a line end in math as a space, so the typeset math is the same); a piece without a
    space stays whole.

    >>> print(_fold_source(r"\left\lceil{\frac{a + b}{m}}\right\rceil", 20))
    \left\lceil{\frac{a
      + b}{m}}\right\rceil
    """
    if len(tex) <= room:
        return tex
    lines = []
    for word in _TEX_SPACES.split(tex):  # where LaTeX source may end a line (format.fold_latex's rule)
        if lines and len(lines[-1]) + 1 + len(word) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return ("\n" + indent).join(lines)


#: a Markdown "word" a line may not break inside: escapes, inline math (``$`…`$``, ``$…$``), code spans
#: and the characters between spaces
_MD_WORD = re.compile(r"(?:\\.|\$`[^`]*`\$|`[^`]*`|\$[^$\s`][^$]*?\$|\S)+")
#: what a line of a paragraph must not start with: it would start a list, quote, heading, table or fence
_MD_BLOCK_START = re.compile(r"[-+*>#=|]|\d+[.)]|```|~~~")
#: a list item's marker
_MD_ITEM = re.compile(r"\s*(?:[-+*]|\d+[.)]) +")


def wrap_markdown(text: str, width: int = TEXT_WIDTH) -> str:
    """Markdown with its paragraphs and list items hard-wrapped at ``width`` columns (Markdown joins the
    lines of a paragraph again, so the rendered text is the same): never inside inline math or a code
    span, never before a word that would start a list or heading; a list item's lines continue under its
    text. Table rows, headings and fenced blocks (```` ``` ````, ``$$``) are left as they are.

    >>> print(wrap_markdown("- an item with $`x + y`$ in it", 22))
    - an item with
      $`x + y`$ in it
    >>> print(wrap_markdown("some words + more", 11))
    some
    words +
    more
    """
    out, fence = [], None
    for line in str(text).split("\n"):
        stripped = line.strip()
        if fence is not None:
            fence = None if stripped == fence else fence
            out.append(line)
            continue
        if stripped.startswith(("```", "~~~")) or stripped == "$$":
            fence = stripped[:3]
            out.append(line)
            continue
        if len(line) <= width or stripped.startswith(("|", "#")):
            out.append(line)
            continue
        item = _MD_ITEM.match(line)
        lead = item.group(0) if item else line[:len(line) - len(line.lstrip())]
        lines: list[list[str]] = [[]]
        for word in _MD_WORD.findall(line[len(lead):]):
            if lines[-1] and len(lead) + len(" ".join(lines[-1] + [word])) > width:
                carried = []  # a line may not start with "+ ", "- ", "# ", "1. ": the word before comes along
                if _MD_BLOCK_START.match(word) and len(lines[-1]) > 1:
                    carried = [lines[-1].pop()]
                lines.append(carried)
            lines[-1].append(word)
        out.extend((lead if i == 0 else " " * len(lead)) + " ".join(words) for i, words in enumerate(lines))
    return "\n".join(out)


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
