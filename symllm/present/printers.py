"""The expression printers and line breaking: a closed form as LaTeX, text or pretty text with the user's notation
(:class:`Formula`), numbers as LaTeX, the typeset width of LaTeX (:func:`tex_width`, :data:`LATEX_WIDTH`) and of
Markdown in columns (:func:`wrap_markdown`, :data:`TEXT_WIDTH`), long displays broken into lines that fit.
Presentation only: it computes nothing (:mod:`symllm.present.render` hands these to the templates).

>>> latex(2 * S.d * S.d_h * (S.n_h + S.n_kv), {"d": r"d_\\mathrm{model}"})
'2 \\\\, d_\\\\mathrm{model} \\\\, d_h \\\\, \\\\left(n_h + n_{kv}\\\\right)'
"""
from __future__ import annotations

import functools
import re
from fractions import Fraction
from functools import lru_cache

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.pretty.pretty import PrettyPrinter
from sympy.printing.pretty.stringpict import prettyForm
from sympy.printing.str import StrPrinter

from symllm.arch import symbols as S
from symllm.present.format import TEX_SPACES, digits, grouped
from symllm.present.notations import notation

__all__ = ["Safe", "Formula", "latex", "num_latex", "tex_width", "LATEX_WIDTH", "em_width", "pcol", "wrap_markdown",
           "TEXT_WIDTH"]


class Safe(str):
    """Text already in the output's syntax: templates print it as is (everything else is escaped)."""


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
        return _NamedStrPrinter({k: num_text(v) for k, v in self._numbers.items()}).doprint(self._expr)

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
        printer = _NamedStrPrinter({k: num_text(v) for k, v in self._numbers.items()})
        return _lines(self._expr, printer.doprint, len, width, "*", "(", ")", glue_mul="")

    def pretty(self, width: int | None = None) -> str:
        """Unicode, SymPy's pretty printer (may span several lines); ``width``: wrap to that many
        columns (SymPy's own line wrapping), else one line however long.

        >>> f = Formula(sum(sp.Symbol(f"x{i}") for i in range(30)))
        >>> max(map(len, f.pretty(40).splitlines())) <= 40, len(f.pretty().splitlines())
        (True, 1)
        """
        names = {k: num_text(v) for k, v in self._numbers.items()}
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
            return [("" if i == 0 else glue_mul, (mul.lstrip() if i else "") + doprint(f))
                    for i, f in enumerate(factors)]
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


def num_text(value) -> str:
    """``value`` as plain text: an integer's digits, however many (:func:`symllm.present.format.digits`), a
    Fraction as ``p/q``, a float as Python writes it.

    >>> num_text(1234567), num_text(Fraction(1, 3)), num_text(0.5)
    ('1234567', '1/3', '0.5')
    """
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


#: the columns terminal output (a text derivation) fits
TEXT_WIDTH = 100
#: symbol names with an underscore (``n_h``, ``d_ff``, ``beta_w``) as they appear in descriptions
SYMBOL_BY_NAME = {sym.name: sym for sym in S.SYMBOLS if "_" in sym.name}
#: any of :data:`SYMBOL_BY_NAME`'s names standing alone in a text (the longest first: ``d_ff`` before ``d_f``)
SYMBOL_NAME_RE = re.compile(r"(?<![A-Za-z0-9_\\])(" + "|".join(
    re.escape(n) for n in sorted(SYMBOL_BY_NAME, key=len, reverse=True)) + r")(?![A-Za-z0-9_])")


def display_width(kind: str):
    """How a display line of math is measured, and how wide it may be, in ``kind``: LaTeX's typeset width
    in points (:func:`tex_width`, :data:`LATEX_WIDTH`); Markdown's source in columns (a ```` ```math ````
    block is read in a terminal too: :data:`TEXT_WIDTH` less the ``&`` a line starts with and the
    `` \\\\`` it ends with).

    >>> display_width("markdown") == (len, 96), display_width("latex")[1] == LATEX_WIDTH
    (True, True)
    """
    if kind == "markdown":
        return len, TEXT_WIDTH - len("&") - len(" \\\\")
    return tex_width, LATEX_WIDTH




def fold_source(tex: str, room: int, indent: str = "  ") -> str:
    r"""LaTeX math source longer than ``room`` columns continued on further lines at its spaces (TeX and
    MathJax read a line end in math as a space, so the typeset math is the same); a piece without a
    space stays whole.

    >>> print(fold_source(r"\left\lceil{\frac{a + b}{m}}\right\rceil", 20))
    \left\lceil{\frac{a
      + b}{m}}\right\rceil
    """
    if len(tex) <= room:
        return tex
    lines = []
    for word in TEX_SPACES.split(tex):  # where LaTeX source may end a line (format.fold_latex's rule)
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
